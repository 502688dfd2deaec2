"""`simulate` reads DeviceTaintRules and allocates from the devices as kube-scheduler sees them: a device a
NoSchedule rule taints takes no pod, unless the rules' gate is off; a rule's taint is judged as the API server
judges a device taint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.simulate_cli import run_simulate, write_manifests
from support.workloads import GPU_DRIVER, GPU_SHARED, gpu_class, gpu_slice, node, pod

from localcluster.objects import make_taint_rule


def _cluster(tmp_path: Path, *rules: dict[str, object]) -> str:
    return write_manifests(tmp_path, "c.yaml", gpu_class(), node("n1"), gpu_slice("n1", 1), *rules)


def _results(out: str) -> list[tuple[str, str]]:
    return [(p["name"], p["result"]) for p in json.loads(out)["pods"]]


def test_a_rule_tainting_the_only_device_leaves_the_pod_unschedulable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rule = make_taint_rule("unhealthy").select(driver=GPU_DRIVER, device="gpu-0").obj()
    pods = write_manifests(tmp_path, "p.yaml", pod("p", {GPU_SHARED: 1}))
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path, rule), "-f", pods)
    assert code == 0 and _results(out) == [("p", "unschedulable")]
    code, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path, rule), "-f", pods, "--explain")
    assert "device taint example.com/unhealthy:NoSchedule" in out
    # a rule for another device, and the same rule with the gate off, leave the pod placed
    other = make_taint_rule("other").select(device="gpu-7").obj()
    _, out, _ = run_simulate(capsys, "-f", _cluster(tmp_path, other), "-f", pods)
    assert _results(out) == [("p", "bound")]
    _, out, _ = run_simulate(
        capsys, "--feature-gates", "DRADeviceTaintRules=false", "-f", _cluster(tmp_path, rule), "-f", pods
    )
    assert _results(out) == [("p", "bound")]


def test_a_rule_with_an_unsupported_effect_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rule = make_taint_rule("bad").taint("example.com/k", "Sometimes").obj()
    pods = write_manifests(tmp_path, "p.yaml", pod("p", {GPU_SHARED: 1}))
    code, _, err = run_simulate(capsys, "-f", _cluster(tmp_path, rule), "-f", pods)
    assert code != 0
    assert 'DeviceTaintRule "bad": spec.taint.effect: Unsupported value: "Sometimes"' in err, err
