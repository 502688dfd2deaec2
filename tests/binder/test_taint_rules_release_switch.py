"""The binder's DeviceTaintRule informer follows the served release without a restart (binder/controller.py
`_follow_taint_rules`): 1.36's defaults do not apply DeviceTaintRules, 1.37's do.

gpu-node-1's only GPU is tainted NoSchedule by a rule. On 1.36 the rule is not watched and the device takes a
pod (the negative control: the rule alone does not block it); after `/version` moves to 1.37 the rule is
listed and the next pod is refused naming the taint; back on 1.36 that pod binds. In-process, a switch whose
rule list is held keeps every pod waiting (none is judged with part of the rules), and a 403 on that list is
one clear warning, the binder still running."""

from __future__ import annotations

import logging
import subprocess
import threading
import time
import urllib.request
from typing import Any

import pytest
from support.binder_harness import bind_argv, bound, events, running_binder, wait_for
from support.gpu_cluster import DRIVER, device_class, gpu_slice, node, pod
from support.ports import free_port
from support.server_harness import metric_sample
from support.waiting import stop_process

from kubeio.informer import key_of
from localcluster.objects import make_taint_rule
from resourceapi.gates import FeatureGates

TAINT = "device taint example.com/unhealthy:NoSchedule"


def _seed(api: Any) -> None:
    api.seed(device_class())
    api.seed(node("gpu-node-1"))
    api.seed(gpu_slice("gpu-node-1", gpus=1, shares=4))
    api.seed(make_taint_rule("unhealthy").select(driver=DRIVER, device="gpu-0").obj())


def _bound_names(api: Any) -> set[str]:
    return {p["metadata"]["name"] for p in bound(api)}


def _failed(api: Any, name: str) -> list[str]:
    return [e["message"] for e in events(api, "FailedScheduling") if e["involvedObject"]["name"] == name]


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode()


def test_bind_watches_taint_rules_from_the_release_that_applies_them(kube_api: Any) -> None:
    kube_api.serve_versions("v1.36.3")
    _seed(kube_api)
    port = free_port()
    argv = bind_argv(kube_api, f"127.0.0.1:{port}", "--server-version-interval", "0.05")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    assert proc.stderr is not None
    stream = proc.stderr
    threading.Thread(target=lambda: lines.extend(iter(stream.readline, "")), daemon=True).start()

    def logged(text: str) -> bool:
        return any(text in line for line in list(lines))

    try:
        kube_api.seed(pod("web-0"))  # 1.36: the rule is not applied, so the tainted device is used
        wait_for("web-0 bound on 1.36", lambda: "web-0" in _bound_names(kube_api), timeout=60)
        assert not kube_api.requests_for("list", "devicetaintrules")

        kube_api.serve_versions("v1.37.2")
        wait_for("the rules listed on 1.37", lambda: logged("DeviceTaintRules listed: 1 rule(s)"), timeout=30)
        assert logged("Kubernetes 1.37 applies DeviceTaintRules: watching them")
        kube_api.seed(pod("web-1"))
        [message, *_] = wait_for("web-1 refused on 1.37", lambda: _failed(kube_api, "web-1"), timeout=30)
        assert TAINT in message, message
        assert "web-1" not in _bound_names(kube_api)

        kube_api.serve_versions("v1.36.3")  # rolled back: the rule is dropped and web-1 retried
        wait_for("web-1 bound on 1.36", lambda: "web-1" in _bound_names(kube_api), timeout=30)
        assert logged("Kubernetes 1.36 does not apply DeviceTaintRules: stopped watching them (1 rule(s)")
        assert not logged("restart the binder")
        metrics = _metrics(port)
        assert metric_sample(metrics, "dra_capacity_binder_kubernetes_release", release="1.36") == 1
        assert metric_sample(metrics, "dra_capacity_binder_kubernetes_release_changes_total") == 2
    finally:
        stop_process(proc, 20)


def test_no_pod_is_placed_until_the_switched_to_release_has_listed_the_rules(kube_api: Any) -> None:
    _seed(kube_api)
    with running_binder(kube_api, gates="DRADeviceTaintRules=false") as binder:
        assert binder.ctx.informers.taint_rules is None
        held = kube_api.faults.hold("list", "devicetaintrules")
        binder.switch(FeatureGates.defaults())
        assert held.arrived.wait(10)
        kube_api.seed(pod("web-0"))
        wait_for("web-0 queued", lambda: binder.queue.state(key_of(pod("web-0"))) is not None)
        time.sleep(0.5)  # the scheduling loop polls every 0.1 s: had it placed web-0, it would be attempted
        assert not binder.synced()
        assert key_of(pod("web-0")) not in binder.attempted
        held.release.set()
        [message] = wait_for("web-0 refused", lambda: _failed(kube_api, "web-0"))
        assert TAINT in message, message
        assert not bound(kube_api)


def test_a_forbidden_rule_list_after_a_switch_is_one_clear_warning(
    kube_api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _seed(kube_api)
    caplog.set_level(logging.WARNING, logger="dra_capacity.binder")
    with running_binder(kube_api, gates="DRADeviceTaintRules=false") as binder:
        kube_api.faults.fail("list", "devicetaintrules", 403, times=0)
        binder.switch(FeatureGates.defaults())
        kube_api.seed(pod("web-0"))

        def warned() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.getMessage().startswith("pods wait:")]

        [warning] = wait_for("the warning", warned)
        assert "DeviceTaintRules cannot be listed (HTTP 403" in warning, warning
        assert "list and watch on devicetaintrules" in warning, warning
        assert not bound(kube_api) and binder._thread is not None and binder._thread.is_alive()
        kube_api.faults.clear()  # the ClusterRole fixed: the rules list, the taint is honoured
        [message] = wait_for("web-0 refused", lambda: _failed(kube_api, "web-0"), timeout=30)
        assert TAINT in message, message
        assert len(warned()) == 1
