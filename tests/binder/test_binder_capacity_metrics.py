"""The binder's capacity metrics against the API-server double: the headroom it exports is what it then binds,
and the issue's scale-down (17 replicas on 16 shares, then 8) shows in the metrics within 2 s."""

from __future__ import annotations

import time
from typing import Any

from support.binder_harness import bound, running_binder, seed_cluster, wait_for
from support.gpu_cluster import CLASS, RESOURCE, pod

from binder.controller import Binder

LABELS = {"class": CLASS, "resource": RESOURCE}


def sample(binder: Binder, name: str) -> float | None:
    return binder.metrics.registry.get_sample_value(f"dra_capacity_binder_{name}", LABELS)


def figures(binder: Binder) -> tuple[float | None, ...]:
    return tuple(
        sample(binder, n) for n in ("class_used_units", "class_capacity_units", "class_headroom_pods")
    )


def test_the_exported_headroom_is_what_the_binder_then_binds_and_scale_down_shows_within_2s(
    kube_api: Any,
) -> None:
    seed_cluster(kube_api, nodes=2, gpus=2, shares=4)
    with running_binder(kube_api) as binder:
        wait_for("the view", lambda: figures(binder) == (0, 16, 16))
        headroom = int(sample(binder, "class_headroom_pods") or 0)
        for i in range(headroom + 1):
            kube_api.seed(pod(f"web-{i:02d}"))
        wait_for(f"{headroom} pods bound", lambda: len(bound(kube_api)) == headroom)
        wait_for("the figures after", lambda: figures(binder) == (16, 16, 0))
        time.sleep(0.5)  # the last pod stays unschedulable: nothing frees capacity
        assert len(bound(kube_api)) == headroom
        assert sample(binder, "class_pending_pods") == 1

        # scale down to 8 replicas: the pending pod and 8 bound pods go
        pending = [p for p in kube_api.list("pods") if not p["spec"].get("nodeName")]
        gone = [p["metadata"]["name"] for p in pending] + [p["metadata"]["name"] for p in bound(kube_api)[:8]]
        start = time.monotonic()
        for name in gone:
            kube_api.delete("pods", name, grace_period_seconds=0)
        wait_for("8 used, headroom 8", lambda: figures(binder) == (8, 16, 8), timeout=10)
        assert time.monotonic() - start < 2.0
        assert sample(binder, "class_pending_pods") == 0
        per_node = [
            binder.metrics.registry.get_sample_value(
                "dra_capacity_binder_node_used_units", {"node": n, "class": CLASS}
            )
            for n in ("gpu-node-1", "gpu-node-2")
        ]
        assert sum(v or 0 for v in per_node) == 8


def test_capacity_metrics_can_be_turned_off(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1, gpus=1, shares=4)
    with running_binder(kube_api, extra={"capacity_metrics": False}) as binder:
        assert binder.usage is None
        names = {family.name for family in binder.metrics.registry.collect()}
        assert "dra_capacity_binder_pods_bound" in names
        assert not any("units" in n or "headroom" in n for n in names)
