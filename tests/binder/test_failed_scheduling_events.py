"""The binder's FailedScheduling Event names the unsatisfied requirement (KEP-6406's risk section), with
kube-scheduler's summary line first; the pod condition keeps the summary alone. The diagnosis is bounded:
cached per snapshot, rate-limited, cut to a size (binder/diagnosis.py)."""

from __future__ import annotations

from typing import Any

from support.binder_harness import bound, events, running_binder, wait_for
from support.gpu_cluster import device_class, gpu_slice, node, pod

from binder.diagnosis import MAX_LINES, TokenBucket, compose
from binder.events import MAX_MESSAGE


def _seed(
    api: Any, capacity: str = "shares", amount: str = "1", nodes: int = 2, gpus: int = 1, shares: int = 4
) -> None:
    dc = device_class()
    dc["spec"]["extendedResourceCapacityRequests"] = {"requests": {capacity: amount}}
    api.seed(dc)
    for i in range(nodes):
        api.seed(node(f"gpu-node-{i + 1}"))
        api.seed(gpu_slice(f"gpu-node-{i + 1}", gpus=gpus, shares=shares))


def _conditions(api: Any, name: str) -> list[dict[str, Any]]:
    p = api.get("pods", name)
    return [c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"]


def test_a_capacity_no_device_publishes_is_named_with_what_devices_advertise(kube_api: Any) -> None:
    _seed(kube_api, capacity="sharez")
    kube_api.seed(pod("web-0"))
    with running_binder(kube_api):
        [event] = wait_for("event", lambda: events(kube_api, "FailedScheduling"))
        [cond] = wait_for("condition", lambda: _conditions(kube_api, "web-0"))
    summary, *reasons = event["message"].split("\n")
    assert summary == "0/2 nodes are available: 2 cannot allocate all claims."
    assert cond["message"] == summary
    assert reasons == [
        "on 2 nodes: claim default/<extended-resources>, request container-0-request-0: no device publishes "
        'capacity "sharez" (devices advertise: shares) (nodes: gpu-node-1, gpu-node-2)'
    ]


def test_too_few_free_shares_are_counted(kube_api: Any) -> None:
    """Two GPUs of 4 shares, 3 taken on each: a pod asking for 3 shares hears how many are free where."""
    _seed(kube_api, amount="3", nodes=1, gpus=2)
    kube_api.seed(pod("holder-0"))
    kube_api.seed(pod("holder-1"))
    with running_binder(kube_api):
        wait_for("holders bound", lambda: len(bound(kube_api)) == 2)
        kube_api.seed(pod("big"))
        [event] = wait_for("event", lambda: events(kube_api, "FailedScheduling"))
    summary, *reasons = event["message"].split("\n")
    assert summary == "0/1 nodes are available: 1 cannot allocate all claims."
    assert len(reasons) == 1
    assert "request shares=3: all 2 matching devices full (3/4 shares used)" in reasons[0], reasons


def test_the_message_is_cut_to_the_limit_and_counts_what_it_leaves_out() -> None:
    summary = "0/40 nodes are available: 40 cannot allocate all claims."
    reasons = [f"on 1 node: reason number {i} " + "x" * 300 + f" (nodes: n{i})" for i in range(40)]
    text = compose(summary, reasons)
    lines = text.split("\n")
    assert len(text) <= MAX_MESSAGE
    assert lines[0] == summary
    assert lines[-1].startswith("(+") and lines[-1].endswith(" more)")
    shown = len(lines) - 2
    assert 1 <= shown <= MAX_LINES and lines[-1] == f"(+{40 - shown} more)"


def test_the_rate_limit_refuses_beyond_its_burst_and_refills() -> None:
    now = [0.0]
    bucket = TokenBucket(3.0, lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    now[0] += 1.0
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]


def test_equal_pods_share_one_diagnosis_and_a_rate_limited_event_keeps_the_summary(kube_api: Any) -> None:
    """Twenty equal pods that do not fit: one diagnosis serves them all while nothing changes. With the rate
    at zero, no diagnosis runs and the Event is the summary alone."""
    _seed(kube_api, nodes=1, shares=1)
    kube_api.seed(pod("holder"))
    for i in range(20):
        kube_api.seed(pod(f"wait-{i:02d}"))
    with running_binder(kube_api) as binder:
        wait_for("20 events", lambda: len(events(kube_api, "FailedScheduling")) >= 20)
        assert binder.ctx.diagnoser.runs <= 2  # one per snapshot version (the holder's bind may race one)
    assert all("\n" in e["message"] for e in events(kube_api, "FailedScheduling"))
    kube_api.seed(pod("late"))
    with running_binder(kube_api, diagnoses_per_second=0.0) as binder:
        wait_for(
            "late's event",
            lambda: [
                e for e in events(kube_api, "FailedScheduling") if e["involvedObject"]["name"] == "late"
            ],
        )
        assert binder.ctx.diagnoser.runs == 0 and binder.ctx.diagnoser.skipped >= 1
    [late] = [e for e in events(kube_api, "FailedScheduling") if e["involvedObject"]["name"] == "late"]
    assert late["message"] == "0/1 nodes are available: 1 cannot allocate all claims."
