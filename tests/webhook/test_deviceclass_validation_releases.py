"""A DeviceClass judged per release (resourceapi/releases.py `Validation.declarative_texts`): 1.36's
handwritten texts against 1.37's declarative ones."""

from __future__ import annotations

from typing import Any

from resourceapi.gates import FeatureGates
from webhook.deviceclass.validation import validate_device_class

ON_136 = FeatureGates.parse("", release="1.36")
ON_137 = FeatureGates.parse("", release="1.37")
SUBDOMAIN_136 = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _bad_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "bad"},
        "spec": {
            "extendedResourceName": "example.com/",
            "config": [{"opaque": {"driver": "-" + "g" * 63, "parameters": {}}}],
        },
    }


def test_1_36_reports_the_handwritten_extended_resource_name_and_driver_texts() -> None:
    """1.36 marks every declarative rule Alpha (v1.36.3 v1/zz_generated.validations.go), so the handwritten
    texts stand: one `must be a valid extended resource name`, and `ValidateCSIDriverName`'s Too long (in
    bytes) before its subdomain message; 1.37's declarative rules report the reasons and characters."""
    driver = "-" + "g" * 63
    on_136 = [str(e) for e in validate_device_class(_bad_class(), None, ON_136).errors]
    assert on_136 == [
        "spec.config[0].opaque.driver: Too long: may not be more than 63 bytes",
        f'spec.config[0].opaque.driver: Invalid value: "{driver}": {SUBDOMAIN_136}',
        'spec.extendedResourceName: Invalid value: "example.com/": must be a valid extended resource name',
    ]
    on_137 = [str(e) for e in validate_device_class(_bad_class(), None, ON_137).errors]
    assert "spec.config[0].opaque.driver: Too long: may not be more than 63 characters" in on_137
    assert 'spec.extendedResourceName: Invalid value: "example.com/": name part must be non-empty' in on_137


def test_1_36_reports_too_many_selectors_in_place_before_the_config() -> None:
    """v1.36.3 `validateDeviceClassSpec`: the selectors' `validateSlice` (its Too many handwritten), then the
    config's (measured:
    `scripts/differential.py --release 1.36 --seed 2192593458`, `DeviceClass|order|-|-`)."""
    obj = _bad_class()
    obj["spec"].pop("extendedResourceName")
    obj["spec"]["selectors"] = [{"cel": {"expression": "true"}}] * 33
    fields = [(e.field, e.type.value) for e in validate_device_class(obj, None, ON_136).errors]
    assert [f for f, _ in fields] == [
        "spec.selectors",
        "spec.config[0].opaque.driver",
        "spec.config[0].opaque.driver",
    ]
