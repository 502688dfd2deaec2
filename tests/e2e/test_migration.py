"""End to end across both halves, as an administrator migrating time-sliced GPUs would run them.

The real `dra-capacity serve` (a subprocess, real TLS verified against its generated CA) admits the
DeviceClass; the real `dra-capacity simulate` (a subprocess) then places unchanged pods that ask for
`nvidia.com/gpu.shared: 1` on shares of the GPUs. No test doubles.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import server_harness
from support.serve_process import free_port, serve_argv
from support.waiting import stop_process

CLI = str(Path(sys.executable).parent / "dra-capacity")
ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"
SELECTOR = (
    'device.driver == "gpu.nvidia.com" && '
    'device.capacity["gpu.nvidia.com"].shares.isGreaterThan(quantity("0"))'
)
KEP_STORY_1_SELECTOR = (
    'device.driver == "gpu.nvidia.com" && device.capacity["shares"].isGreaterThan(quantity("0"))'
)


def device_class(
    *, selector: str = SELECTOR, carrier: str = "field", name: str = "gpu.nvidia.com-shared-1"
) -> dict[str, Any]:
    dc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "creationTimestamp": "2026-03-01T00:00:00Z"},
        "spec": {
            "selectors": [{"cel": {"expression": selector}}],
            "extendedResourceName": "nvidia.com/gpu.shared",
        },
    }
    if carrier == "field":
        dc["spec"]["extendedResourceCapacityRequests"] = {"requests": {"shares": "1"}}
    else:
        dc["metadata"]["annotations"] = {ANNOTATION: json.dumps({"requests": {"shares": "1"}})}
    return dc


def cluster(nodes: int, gpus: int) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for n in range(nodes):
        node = f"gpu-node-{n}"
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}},
                "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
            }
        )
        devices = [
            {
                "name": f"gpu-{g}",
                "allowMultipleAllocations": True,
                "attributes": {"productName": {"string": "NVIDIA A100-SXM4-80GB"}},
                "capacity": {
                    "shares": {
                        "value": "4",
                        "requestPolicy": {
                            "default": "1",
                            "validRange": {"min": "1", "max": "4", "step": "1"},
                        },
                    }
                },
            }
            for g in range(gpus)
        ]
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-gpu.nvidia.com"},
                "spec": {
                    "driver": "gpu.nvidia.com",
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    return objs


def pods(count: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"web-{i}",
                "namespace": "inference",
                "uid": f"00000000-0000-4000-8000-{i:012d}",
            },
            "spec": {
                "containers": [
                    {"name": "server", "image": "x", "resources": {"limits": {"nvidia.com/gpu.shared": "1"}}}
                ]
            },
        }
        for i in range(count)
    ]


def write(path: Path, objs: list[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def simulate(*args: str) -> dict[str, Any]:
    proc = subprocess.run([CLI, "simulate", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def review(obj: dict[str, Any], uid: str = "e2e-1") -> bytes:
    return json.dumps(server_harness.review(uid, obj)).encode()


class Webhook:
    """A running `dra-capacity serve` with its generated CA."""

    def __init__(self, port: int, tls_dir: Path) -> None:
        self.port = port
        self.ctx = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))

    def post(self, path: str, body: bytes) -> dict[str, Any]:
        req = urllib.request.Request(
            f"https://127.0.0.1:{self.port}{path}", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, context=self.ctx, timeout=10) as resp:
            assert resp.status == 200
            answer: dict[str, Any] = json.loads(resp.read())
            return answer

    def wait_ready(self, proc: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                with urllib.request.urlopen(
                    f"https://127.0.0.1:{self.port}/readyz", context=self.ctx, timeout=2
                ) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError, ssl.SSLError):
                pass
            time.sleep(0.1)
        raise AssertionError("webhook did not become ready")


def start_webhook(tmp: Path, *gate_args: str) -> Iterator[Webhook]:
    port = free_port()
    tls_dir = tmp / "tls"
    proc = subprocess.Popen(
        serve_argv(port, tls_dir, *gate_args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (tls_dir / "ca.crt").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not write its CA"
            time.sleep(0.05)
        hook = Webhook(port, tls_dir)
        hook.wait_ready(proc)
        yield hook
    finally:
        stop_process(proc, 20)


@pytest.fixture
def webhook(tmp_path: Path) -> Iterator[Webhook]:
    yield from start_webhook(tmp_path)


@pytest.fixture
def webhook_capacity_gate_off(tmp_path: Path) -> Iterator[Webhook]:
    yield from start_webhook(tmp_path, "--feature-gates", "DRAExtendedResourceCapacity=false")


@pytest.fixture
def webhook_denying_native(tmp_path: Path) -> Iterator[Webhook]:
    yield from start_webhook(tmp_path, "--native-rules", "deny")


def test_kep_story_1_selector_is_a_one_line_warning_by_default(webhook: Webhook) -> None:
    """The API server compiles selectors itself before calling the webhook: a native finding only warns."""
    answer = webhook.post("/validate", review(device_class(selector=KEP_STORY_1_SELECTOR)))
    response = answer["response"]
    assert response["allowed"] is True
    (warning,) = response["warnings"]
    assert warning.startswith("native rule: spec.selectors[0].cel.expression: compilation failed: 1:")
    assert "found no matching overload for 'isGreater" in warning and len(warning) <= 120
    with urllib.request.urlopen(
        f"https://127.0.0.1:{webhook.port}/metrics", context=webhook.ctx, timeout=10
    ) as resp:
        metrics = resp.read().decode()
    labels = '{cause_type="FieldValueInvalid",field="spec.selectors"}'
    assert f"dra_capacity_webhook_native_rule_findings_total{labels} 1.0" in metrics


def test_kep_story_1_selector_is_rejected_like_native_validation(webhook_denying_native: Webhook) -> None:
    webhook = webhook_denying_native
    answer = webhook.post("/validate", review(device_class(selector=KEP_STORY_1_SELECTOR)))
    response = answer["response"]
    assert response["uid"] == "e2e-1"
    assert response["allowed"] is False
    status = response["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"].startswith('DeviceClass.resource.k8s.io "gpu.nvidia.com-shared-1" is invalid: ')
    (cause,) = status["details"]["causes"]
    assert cause["field"] == "spec.selectors[0].cel.expression"
    assert "found no matching overload for 'isGreaterThan'" in cause["message"]


def test_admitted_class_then_sixteen_pods_share_four_gpus(webhook: Webhook, tmp_path: Path) -> None:
    dc = device_class()
    assert webhook.post("/mutate", review(dc))["response"]["allowed"] is True
    assert webhook.post("/validate", review(dc))["response"]["allowed"] is True

    files = [
        write(tmp_path / "cluster.yaml", [dc, *cluster(nodes=2, gpus=2)]),
        write(tmp_path / "pods.yaml", pods(17)),
    ]
    out = simulate("-f", files[0], "-f", files[1])
    results = out["pods"]
    bound = [p for p in results if p["result"] == "bound"]
    assert len(bound) == 16, "2 nodes x 2 GPUs x 4 shares"
    shares_per_device: dict[str, int] = {}
    for p in bound:
        (result,) = p["claim"]["status"]["allocation"]["devices"]["results"]
        assert result["consumedCapacity"] == {"shares": "1"}
        assert p["claim"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {
            "requests": {"shares": "1"}
        }
        key = f"{result['pool']}/{result['device']}"
        shares_per_device[key] = shares_per_device.get(key, 0) + 1
    assert sorted(shares_per_device.values()) == [4, 4, 4, 4]
    last = results[-1]
    assert last["result"] == "unschedulable"
    assert last["reason"].startswith("0/2 nodes are available: ")


def test_annotation_carrier_is_admitted_and_honored(webhook: Webhook, tmp_path: Path) -> None:
    """An API server that predates KEP-6406 drops the field; the annotation carries the same request."""
    dc = device_class(carrier="annotation")
    assert webhook.post("/validate", review(dc))["response"]["allowed"] is True
    bad = device_class(carrier="annotation")
    bad["metadata"]["annotations"][ANNOTATION] = json.dumps({"requests": {"shares": "0"}})
    denied = webhook.post("/validate", review(bad))["response"]
    assert denied["allowed"] is False
    assert denied["status"]["details"]["causes"][0]["field"] == f"metadata.annotations[{ANNOTATION}]"

    out = simulate("-f", write(tmp_path / "in.yaml", [dc, *cluster(nodes=1, gpus=1), *pods(4)]))
    consumed = [
        p["claim"]["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] for p in out["pods"]
    ]
    assert consumed == [{"shares": "1"}] * 4


def test_capacity_gate_off_drops_on_create_and_never_downgrades_to_whole_gpus(
    webhook_capacity_gate_off: Webhook, tmp_path: Path
) -> None:
    dc = device_class()
    mutated = webhook_capacity_gate_off.post("/mutate", review(dc))["response"]
    assert mutated["allowed"] is True
    patch = json.loads(base64.b64decode(mutated["patch"]))
    assert {"op": "remove", "path": "/spec/extendedResourceCapacityRequests"} in patch

    # A scheduler whose gate is off while a class still carries the field: unschedulable, with the reason.
    files = write(tmp_path / "in.yaml", [dc, *cluster(nodes=1, gpus=1), *pods(1)])
    out = simulate("--feature-gates", "DRAExtendedResourceCapacity=false", "-f", files)
    (pod,) = out["pods"]
    assert pod["result"] == "unschedulable"
    assert "DRAExtendedResourceCapacity" in pod["reason"]
    assert pod.get("claim") in (None, {})
