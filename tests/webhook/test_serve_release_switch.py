"""`dra-capacity serve` follows the served cluster's release at runtime (kubeio/serverversion.py): the API
double's `/version` moves from v1.37.2 to v1.38.0-beta.0 under a running server, and the same DeviceClass,
refused by 1.37's CEL cost model, is accepted once the server judges as 1.38, with the log line and the
metric. Run with worker processes (the default) and threads: each judges by the main handler's gates."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from kubeapi import KubeAPIServer
from support.deviceclasses import device_class, review_request
from support.ports import free_port
from support.serve_process import https, serve_argv
from support.server_harness import metric_sample
from support.waiting import stop_process, wait_for

# 1.38 sizes the URL accessors' results (apiserver v0.38 pkg/cel/library/cost.go); 1.37 finds it too complex.
URL_SELECTOR = 'url(device.attributes["dra.example.com"].endpoint).getHost().matches("^gpu-[0-9]+$")'
TOO_COMPLEX = "too complex, exceeds cost limit"


# Past `ServerLimits.inline_max_body` (16 KiB): the review goes to a worker, never judged on the loop.
PADDING = {"example.com/notes": "x" * 20_000}


def _review(uid: str) -> bytes:
    obj = device_class("url-gpus", selectors=[{"cel": {"expression": URL_SELECTOR}}])
    obj["metadata"]["annotations"] = PADDING
    request = review_request(obj, uid=uid)
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


class _Lines:
    """The server's stderr lines, read on a thread so its pipe never fills."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert proc.stderr is not None
        stream = proc.stderr
        threading.Thread(target=lambda: self.lines.extend(iter(stream.readline, "")), daemon=True).start()

    def having(self, text: str) -> list[str]:
        return [line for line in list(self.lines) if text in line]


def _ready(url: str, tls_dir: Path) -> bool:
    try:
        return https(url + "/readyz", tls_dir)[0] == 200
    except OSError:
        return False


@pytest.mark.parametrize("worker_kind", ["process", "thread"])
def test_serve_switches_release_when_the_api_server_is_upgraded(
    kube_api: KubeAPIServer, tmp_path: Path, worker_kind: str
) -> None:
    port, tls_dir = free_port(), tmp_path / "tls"
    url = f"https://127.0.0.1:{port}"
    argv = serve_argv(port, tls_dir, "--kubeconfig", str(kube_api.kubeconfig_path), "--native-rules", "deny")
    argv += ["--worker-kind", worker_kind, "--workers", "2", "--server-version-interval", "0.05"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    log = _Lines(proc)
    try:
        wait_for("/readyz", lambda: _ready(url, tls_dir), timeout=60, interval=0.1)

        def verdict(uid: str) -> dict[str, object]:
            status, body = https(url + "/validate", tls_dir, _review(uid))
            assert status == 200, body
            response: dict[str, object] = json.loads(body)["response"]
            return response

        refused = verdict("on-1-37")
        assert refused["allowed"] is False
        assert TOO_COMPLEX in json.dumps(refused["status"])
        _, metrics = https(url + "/metrics", tls_dir)
        assert metric_sample(metrics.decode(), "dra_capacity_webhook_kubernetes_release", release="1.37") == 1

        kube_api.serve_versions("v1.38.0-beta.0")  # every API server upgraded
        wait_for("the switch to 1.38", lambda: log.having("switched to Kubernetes 1.38"), timeout=30)
        accepted = verdict("on-1-38")
        assert accepted["allowed"] is True, accepted
        assert log.having("judging as Kubernetes 1.38")
        _, metrics = https(url + "/metrics", tls_dir)
        text = metrics.decode()
        assert metric_sample(text, "dra_capacity_webhook_kubernetes_release", release="1.38") == 1
        assert metric_sample(text, "dra_capacity_webhook_kubernetes_release", release="1.37") is None
        assert metric_sample(text, "dra_capacity_webhook_kubernetes_release_changes_total") == 1
    finally:
        stop_process(proc, 20)
