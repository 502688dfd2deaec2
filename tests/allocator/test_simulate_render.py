"""`simulate -o table`: exclusively allocated devices show as in use; counter sets show consumed/total."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.simulate_cli import write_manifests
from support.workloads import node

from dra_capacity.cli import main
from localcluster.objects import make_claim


def _class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "nic"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "nic.example.com"'}}]},
    }


def _slices() -> list[dict[str, Any]]:
    pool = {"name": "n1", "generation": 1, "resourceSliceCount": 2}
    base = {"driver": "nic.example.com", "nodeName": "n1", "pool": pool}
    counters = {"name": "port", "counters": {"bandwidth": {"value": "100Gi"}}}
    uses = [{"counterSet": "port", "counters": {"bandwidth": {"value": "40Gi"}}}]
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-counters"},
            "spec": {**base, "sharedCounters": [counters]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-nics"},
            "spec": {
                **base,
                "devices": [
                    {"name": "vf-0", "capacity": {"bandwidth": {"value": "40Gi"}}, "consumesCounters": uses},
                    {"name": "vf-1", "consumesCounters": uses},
                ],
            },
        },
    ]


def _claim(name: str) -> dict[str, Any]:
    return make_claim(name).request("nic", "nic", count=2).obj()


def test_exclusive_devices_and_counter_sets_in_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two dedicated devices (no allowMultipleAllocations): the one with a capacity shows it all used, the
    one without shows `in use`; both consume 40Gi of the pool's 100Gi counter (a counter set in its own
    slice of the pool, as 1.35 allows)."""
    cluster = write_manifests(tmp_path, "c.yaml", _class(), node("n1"), *_slices())
    claims = write_manifests(tmp_path, "claims.yaml", _claim("c"))
    assert main(["simulate", "-o", "table", "-f", cluster, "-f", claims]) == 0
    out = capsys.readouterr().out
    summary = out.split("\n\n")[1:]
    assert summary[0].splitlines() == [
        "DEVICE                    CAPACITY    USED     TOTAL",
        "nic.example.com/n1/vf-0   bandwidth   40Gi     40Gi",
        "nic.example.com/n1/vf-1   -           in use   -",
    ]
    assert summary[1].splitlines() == [
        "COUNTER SET               COUNTER     CONSUMED   TOTAL",
        "nic.example.com/n1/port   bandwidth   80Gi       100Gi",
    ]
