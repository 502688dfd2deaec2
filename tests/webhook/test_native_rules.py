"""`--native-rules warn|deny`: findings on fields the API server validates natively warn in the webhook.

The API server validates DeviceClass metadata, selectors, config and extendedResourceName before it calls a
validating webhook, so a denial there can only be a false positive or version skew (webhook/native_rules.py).
"""

from __future__ import annotations

import logging

import pytest
from deviceclasses import ANNOTATION, device_class, review_request, with_annotation

from resourceapi.field import invalid, required
from resourceapi.gates import FeatureGates
from webhook.admission import DeviceClassAdmission
from webhook.metrics import WebhookMetrics
from webhook.native_rules import (
    MAX_NATIVE_WARNINGS,
    NativeRules,
    condensed,
    native_warning,
    native_warnings,
    rule_field,
)
from webhook.warning_texts import MAX_WARNING_LENGTH

GATES = FeatureGates.defaults()
BAD_SELECTOR = {"cel": {"expression": "noSuchVar"}}


def warn_admission(findings: list[tuple[str, str]] | None = None) -> DeviceClassAdmission:
    hook = (lambda rule, cause: findings.append((rule, cause))) if findings is not None else None
    return DeviceClassAdmission(GATES, NativeRules.WARN, hook)


def test_deny_mode_rejects_a_native_finding_as_today() -> None:
    outcome = DeviceClassAdmission(GATES, NativeRules.DENY).validate(
        review_request(device_class("gpu", selectors=[BAD_SELECTOR]))
    )
    assert outcome.response["allowed"] is False
    assert [c.field for c in outcome.native] == ["spec.selectors[0].cel.expression"]


def test_warn_mode_allows_a_native_finding_with_a_one_line_warning() -> None:
    findings: list[tuple[str, str]] = []
    outcome = warn_admission(findings).validate(review_request(device_class("gpu", selectors=[BAD_SELECTOR])))
    assert outcome.response["allowed"] is True
    assert outcome.response["warnings"] == [
        "native rule: spec.selectors[0].cel.expression: compilation failed: 1:1: "
        "undeclared reference to 'noSuchVar'"
    ]
    assert findings == [("spec.selectors", "FieldValueInvalid")]
    assert outcome.cause_types == []


def test_warn_mode_logs_a_line_naming_the_rule(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="webhook.admission"):
        warn_admission().validate(review_request(device_class("gpu", extendedResourceName="example.com")))
    records = [r for r in caplog.records if "native rule" in r.getMessage()]
    assert len(records) == 1
    fields = records[0].__dict__["fields"]
    assert fields["rule"] == "spec.extendedResourceName"
    assert fields["field"] == "spec.extendedResourceName"
    assert fields["name"] == "gpu"


def test_rules_the_api_server_lacks_still_deny_in_warn_mode() -> None:
    obj = device_class(
        "gpu", selectors=[BAD_SELECTOR], extendedResourceCapacityRequests={"requests": {"shares": "0"}}
    )
    outcome = warn_admission().validate(review_request(obj))
    response = outcome.response
    assert response["allowed"] is False
    causes = response["status"]["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.extendedResourceCapacityRequests.requests[shares]"]
    assert any(w.startswith("native rule: spec.selectors[0]") for w in response["warnings"])


def test_the_annotation_carrier_still_denies_in_warn_mode() -> None:
    obj = with_annotation(device_class("gpu"), "not json")
    response = warn_admission().validate(review_request(obj)).response
    assert response["allowed"] is False
    assert response["status"]["details"]["causes"][0]["field"] == f"metadata.annotations[{ANNOTATION}]"


def test_metadata_findings_are_native() -> None:
    obj = device_class("gpu")
    obj["metadata"]["labels"] = {"bad key!": "x"}
    response = warn_admission().validate(review_request(obj)).response
    assert response["allowed"] is True
    assert response["warnings"][0].startswith("native rule: metadata.labels: Invalid value: ")


def test_at_most_ten_native_warnings_the_last_counting_the_rest() -> None:
    selectors = [{"cel": {"expression": f"noSuchVar{i}"}} for i in range(13)]
    response = warn_admission().validate(review_request(device_class("gpu", selectors=selectors))).response
    warnings = response["warnings"]
    assert len(warnings) == MAX_NATIVE_WARNINGS
    assert warnings[-1] == "... and 4 more native-rule findings"
    assert all(len(w) <= MAX_WARNING_LENGTH and "\n" not in w for w in warnings)


def test_exactly_ten_findings_are_all_shown() -> None:
    errors = [required(f"spec.selectors[{i}].cel") for i in range(10)]
    assert [w.endswith("Required value") for w in native_warnings(errors)] == [True] * 10


def test_a_long_cel_error_is_condensed_to_one_line_of_at_most_120_characters() -> None:
    detail = (
        "compilation failed: ERROR: <input>:1:40: found no matching overload for 'isGreaterThan' applied to "
        "'map(string, kubernetes.Quantity).(kubernetes.Quantity)'\n | device.capacity...\n | ......^"
    )
    error = invalid("spec.selectors[31].cel.expression", 'device.capacity["shares"]' * 20, detail)
    text = native_warning(error)
    assert len(text) <= MAX_WARNING_LENGTH
    assert "\n" not in text and "^" not in text
    assert text.startswith("native rule: spec.selectors[31].cel.expression: compilation fail")


def test_a_long_bad_value_is_shortened() -> None:
    error = invalid("spec.extendedResourceName", "x" * 200, "must be a valid extended resource name")
    assert condensed(error).endswith(": must be a valid extended resource name")
    assert len(native_warning(error)) <= MAX_WARNING_LENGTH


@pytest.mark.parametrize(
    ("field", "rule"),
    [
        ("metadata.name", "metadata"),
        ("spec.selectors", "spec.selectors"),
        ("spec.selectors[3].cel.expression", "spec.selectors"),
        ("spec.config[0].opaque.driver", "spec.config"),
        ("spec.extendedResourceName", "spec.extendedResourceName"),
        ("spec", "other"),
    ],
)
def test_metric_labels_are_the_guarded_top_level_field(field: str, rule: str) -> None:
    assert rule_field(required(field)) == rule


def test_the_counter_is_exposed_with_bounded_labels() -> None:
    metrics = WebhookMetrics()
    admission = DeviceClassAdmission(GATES, NativeRules.WARN, metrics.native_rule_finding)
    admission.validate(review_request(device_class("gpu", selectors=[BAD_SELECTOR, BAD_SELECTOR])))
    text = metrics.render().decode()
    labels = '{cause_type="FieldValueInvalid",field="spec.selectors"}'
    assert f"dra_capacity_webhook_native_rule_findings_total{labels} 2.0" in text
