"""`DeviceClassAdmission.switch` (webhook/deviceclass/admission.py): after a switch the next review is judged
by the new release's CEL environment, cost model and cache key; what was compiled for the old release never
answers for the new one. The selectors are 1.38-only: the URL accessors' sized results (apiserver v0.38
pkg/cel/library/cost.go) and `includes()` without DRAListTypeAttributes (compile.go at binary-1)."""

from __future__ import annotations

import json

import pytest
from support.deviceclasses import device_class, review_request

from resourceapi.gates import FeatureGates
from webhook.deviceclass.admission import DeviceClassAdmission

URL_SELECTOR = 'url(device.attributes["dra.example.com"].endpoint).getHost().matches("^gpu-[0-9]+$")'
INCLUDES = 'device.attributes["dra.example.com"].models.includes("a100")'


@pytest.mark.parametrize(
    ("expression", "refusal"),
    [(URL_SELECTOR, "too complex, exceeds cost limit"), (INCLUDES, "undeclared reference to 'includes'")],
    ids=["url-cost", "includes"],
)
def test_a_switch_to_1_38_accepts_its_selectors_and_back_refuses_them(expression: str, refusal: str) -> None:
    admission = DeviceClassAdmission(FeatureGates.parse("", "1.37"))
    request = review_request(device_class("gpus", selectors=[{"cel": {"expression": expression}}]))
    refused = admission.validate(request).response
    assert refused["allowed"] is False and refusal in json.dumps(refused["status"])
    admission.switch(FeatureGates.parse("", "1.38"))
    assert admission.gates.release == "1.38"
    assert admission.validate(request).response["allowed"] is True
    admission.switch(FeatureGates.parse("", "1.37"))  # a rollback: the 1.38 compile is not reused
    assert admission.validate(request).response["allowed"] is False


def test_a_switch_tells_the_followers_once_per_change() -> None:
    admission = DeviceClassAdmission(FeatureGates.parse("", "1.37"))
    told: list[str] = []
    admission.followers.append(lambda gates: told.append(gates.release))
    admission.switch(FeatureGates.parse("", "1.37"))  # the same gates: nothing to do
    admission.switch(FeatureGates.parse("", "1.38"))
    assert told == ["1.38"]
