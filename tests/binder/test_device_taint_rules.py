"""The binder watches DeviceTaintRules, as kube-scheduler's ResourceSlice tracker does: a pod whose only
device a NoSchedule rule taints stays pending with an Event naming the taint, and is bound once the rule is
deleted; with DRADeviceTaintRules off the binder does not watch them."""

from __future__ import annotations

from typing import Any

from support.binder_harness import bound, events, running_binder, wait_for
from support.gpu_cluster import DRIVER, device_class, gpu_slice, node, pod

from localcluster.objects import make_taint_rule


def _seed(api: Any) -> None:
    api.seed(device_class())
    api.seed(node("gpu-node-1"))
    api.seed(gpu_slice("gpu-node-1"))


def test_a_tainted_device_takes_no_pod_until_the_rule_goes(kube_api: Any) -> None:
    _seed(kube_api)
    kube_api.seed(make_taint_rule("unhealthy").select(driver=DRIVER, device="gpu-0").obj())
    kube_api.seed(pod("web-0"))
    with running_binder(kube_api) as binder:
        assert binder.ctx.informers.taint_rules is not None
        [event] = wait_for("event", lambda: events(kube_api, "FailedScheduling"))
        assert "device taint example.com/unhealthy:NoSchedule" in event["message"], event["message"]
        assert not bound(kube_api)
        kube_api.delete("devicetaintrules", "unhealthy")
        wait_for("bound", lambda: bound(kube_api))


def test_with_the_rules_gate_off_rules_are_not_watched(kube_api: Any) -> None:
    _seed(kube_api)
    kube_api.seed(make_taint_rule("unhealthy").select(driver=DRIVER).obj())
    kube_api.seed(pod("web-0"))
    with running_binder(kube_api, gates="DRADeviceTaintRules=false") as binder:
        assert binder.ctx.informers.taint_rules is None
        wait_for("bound", lambda: bound(kube_api))
