"""`--native-rules warn|deny`: findings on fields the API server validates natively warn in the webhook.

The API server validates DeviceClass metadata, selectors, config and extendedResourceName before it calls a
validating webhook, so a denial there can only be a false positive or version skew
(webhook/deviceclass/native_rules.py).
"""

from __future__ import annotations

import json
import logging

import pytest
from support.deviceclasses import ANNOTATION, device_class, review_request, with_annotation

from resourceapi.gates import FeatureGates
from resourceapi.machinery.field import invalid, required
from webhook.deviceclass.admission import DeviceClassAdmission
from webhook.deviceclass.native_rules import (
    MAX_NATIVE_WARNINGS,
    NativeRules,
    condensed,
    native_warning,
    native_warnings,
    rule_field,
)
from webhook.deviceclass.warning_texts import MAX_WARNING_LENGTH
from webhook.server.judging import Verdict, judge
from webhook.server.metrics import WebhookMetrics

GATES = FeatureGates.defaults()
BAD_SELECTOR = {"cel": {"expression": "noSuchVar"}}


def warn_admission() -> DeviceClassAdmission:
    return DeviceClassAdmission(GATES, NativeRules.WARN)


def test_deny_mode_rejects_a_native_finding_as_today() -> None:
    outcome = DeviceClassAdmission(GATES, NativeRules.DENY).validate(
        review_request(device_class("gpu", selectors=[BAD_SELECTOR]))
    )
    assert outcome.response["allowed"] is False
    assert [c.field for c in outcome.native] == ["spec.selectors[0].cel.expression"]


def test_warn_mode_allows_a_native_finding_with_a_one_line_warning() -> None:
    outcome = warn_admission().validate(review_request(device_class("gpu", selectors=[BAD_SELECTOR])))
    assert outcome.response["allowed"] is True
    assert outcome.response["warnings"] == [
        "native rule: spec.selectors[0].cel.expression: compilation failed: 1:1: "
        "undeclared reference to 'noSuchVar'"
    ]
    assert outcome.native_findings == {("spec.selectors", "FieldValueInvalid"): 1}
    assert outcome.cause_types == []


def test_warn_mode_logs_a_line_naming_the_rule(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="webhook.deviceclass.admission"):
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


def test_deny_mode_reports_no_warned_findings() -> None:
    admission = DeviceClassAdmission(GATES, NativeRules.DENY)
    outcome = admission.validate(review_request(device_class("gpu", selectors=[BAD_SELECTOR])))
    assert outcome.native_findings == {}


def test_the_verdict_carries_the_counts_and_the_counter_has_bounded_labels() -> None:
    """Workers judge in other processes: the counts travel in the (picklable) verdict to the server."""
    request = review_request(device_class("gpu", selectors=[BAD_SELECTOR, BAD_SELECTOR]))
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    verdict = judge(warn_admission().validate, body.encode())
    assert isinstance(verdict, Verdict)
    assert verdict.native_counts == {("spec.selectors", "FieldValueInvalid"): 2}
    metrics = WebhookMetrics()
    metrics.native_rule_findings_seen(verdict.native_counts)
    text = metrics.render().decode()
    labels = '{cause_type="FieldValueInvalid",field="spec.selectors"}'
    assert f"dra_capacity_webhook_native_rule_findings_total{labels} 2.0" in text


def test_a_flood_of_native_findings_gives_a_bounded_answer_and_log(caplog: pytest.LogCaptureFixture) -> None:
    obj = device_class("gpu")
    obj["metadata"]["labels"] = {f"bad key {i}!": "x" for i in range(20_000)}
    with caplog.at_level(logging.WARNING, logger="webhook.deviceclass.admission"):
        outcome = warn_admission().validate(review_request(obj))
    assert outcome.response["allowed"] is True
    assert len(outcome.response["warnings"]) == MAX_NATIVE_WARNINGS
    assert outcome.response["warnings"][-1] == "... and 19,991 more native-rule findings"
    assert outcome.native_findings == {("metadata", "FieldValueInvalid"): 20_000}
    assert len([r for r in caplog.records if "native rule" in r.getMessage()]) == MAX_NATIVE_WARNINGS + 1
