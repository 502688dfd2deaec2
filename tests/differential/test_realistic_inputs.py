"""The realistic differential inputs (data/realistic.jsonl, scripts/realistic_inputs.py) name their source,
and hold what issue 39 asks: at least 200 CEL selectors and 50 ResourceSlice shapes, from at least 10 public
DRA drivers besides upstream's test tables."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from differential.corpus import REALISTIC, corpus_objects, realistic

# Repositories that are not a driver of their own: upstream, the issue, and the NVIDIA driver's new home.
NOT_DRIVERS = {"kubernetes/kubernetes", "dra-capacity issue 39", "kubernetes-sigs/dra-driver-nvidia-gpu"}


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REALISTIC.read_text().splitlines()]


def test_every_realistic_input_names_its_repository_path_and_ref() -> None:
    for row in _rows():
        assert {"repo", "path", "ref"} <= set(row["source"]), row
        assert all(row["source"][k] for k in ("repo", "path", "ref")), row
        assert row["object"]["kind"] in ("DeviceClass", "ResourceSlice"), row


def test_the_realistic_inputs_hold_200_selectors_and_50_slices_from_10_drivers() -> None:
    kinds = Counter(row["object"]["kind"] for row in _rows())
    assert kinds["DeviceClass"] >= 200
    assert kinds["ResourceSlice"] >= 50
    drivers = {row["source"]["repo"] for row in _rows()} - NOT_DRIVERS
    assert len(drivers) >= 10, sorted(drivers)
    upstream = Counter(
        row["object"]["kind"] for row in _rows() if row["source"]["repo"] == "kubernetes/kubernetes"
    )
    assert upstream["DeviceClass"] and upstream["ResourceSlice"]


def test_the_realistic_slices_carry_the_fields_random_generators_rarely_combine() -> None:
    specs = [row["object"]["spec"] for row in _rows() if row["object"]["kind"] == "ResourceSlice"]
    devices = [d for s in specs for d in s.get("devices") or []]
    assert any(s.get("sharedCounters") for s in specs)
    assert any(s.get("perDeviceNodeSelection") for s in specs)
    assert any(s.get("allNodes") for s in specs)
    for key in (
        "consumesCounters",
        "taints",
        "bindingConditions",
        "allowMultipleAllocations",
        "nodeSelector",
    ):
        assert any(key in d for d in devices), key
    assert any("requestPolicy" in c for d in devices for c in (d.get("capacity") or {}).values())
    assert any("strings" in a for d in devices for a in (d.get("attributes") or {}).values())


def test_the_realistic_inputs_are_part_of_the_corpus() -> None:
    names = {o.get("metadata", {}).get("name") for _, o in corpus_objects()}
    assert {o["metadata"]["name"] for _, o in realistic()} <= names
