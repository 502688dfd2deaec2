"""Native validation and pruning before admission, and `fieldValidation=Strict|Warn|Ignore` (KEP-2885,
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go); Warn is the server default."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import device_class

CAPACITY = {"extendedResourceCapacityRequests": {"requests": {"shares": "1"}}}


def _with_unknown() -> dict:  # type: ignore[type-arg]
    body = device_class("dc", extendedResourceName="example.com/gpu", **CAPACITY)
    return body


PATH = "/apis/resource.k8s.io/v1/deviceclasses"


def test_strict_rejects_unknown_fields(kube_api: KubeAPIServer) -> None:
    """Strict: 400 `<Kind> in version "v1" cannot be handled as a <Kind>: strict decoding error: unknown
    field "<path>"` (transformDecodeError). 1.37 has no KEP-6406 field."""
    out = kube_api.http("POST", PATH + "?fieldValidation=Strict", _with_unknown())
    assert out.status == 400 and out.body["reason"] == "BadRequest"
    assert out.body["message"] == (
        'DeviceClass in version "v1" cannot be handled as a DeviceClass: '
        'strict decoding error: unknown field "spec.extendedResourceCapacityRequests"'
    )
    assert kube_api.get("deviceclasses", "dc") is None


def test_warn_prunes_and_warns(kube_api: KubeAPIServer) -> None:
    """Warn (also the default): the field is dropped and a `Warning` header names it."""
    for query in ("?fieldValidation=Warn", ""):
        out = kube_api.http("POST", PATH + query, _with_unknown())
        assert out.status == 201
        assert out.warnings == ['299 - "unknown field \\"spec.extendedResourceCapacityRequests\\""']
        stored = kube_api.get("deviceclasses", "dc")
        assert stored is not None and stored["spec"] == {"extendedResourceName": "example.com/gpu"}
        kube_api.delete("deviceclasses", "dc")


def test_ignore_prunes_silently(kube_api: KubeAPIServer) -> None:
    """Ignore: dropped without a warning."""
    out = kube_api.http("POST", PATH + "?fieldValidation=Ignore", _with_unknown())
    assert out.status == 201 and out.warnings == []
    assert "extendedResourceCapacityRequests" not in out.body["spec"]


@pytest.mark.double_only("README disagreement 9: spec.extendedResourceName rule")
def test_device_class_native_rules(kube_client: client.ApiClient) -> None:
    """ValidateDeviceClass basics: a selector without cel, a bad extendedResourceName."""
    body = device_class("bad", selectors=[{}], extendedResourceName="not a name")
    with pytest.raises(client.ApiException) as info:
        client.ResourceV1Api(kube_client).create_device_class(body)
    body = json.loads(info.value.body)
    assert info.value.status == 422
    assert [c["field"] for c in body["details"]["causes"]] == [
        "spec.selectors[0].cel",
        "spec.extendedResourceName",
    ]
