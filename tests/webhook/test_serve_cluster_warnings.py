"""`dra-capacity serve --kubeconfig`: the real server reads the cluster (the kube-apiserver test double over
HTTPS) and adds the cluster-aware warnings to its answers; it never rejects for them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from kubeapi import KubeAPIServer
from support.cluster_objects import gpu_slice, review
from support.ports import free_port
from support.serve_process import https, serve_argv

CLI = str(Path(sys.executable).parent / "dra-capacity")


def admission_review(requests: dict[str, str]) -> bytes:
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": review(requests)}
    ).encode()


def test_serve_warns_about_a_capacity_no_published_device_has(
    kube_api: KubeAPIServer, tmp_path: Path
) -> None:
    kube_api.seed(gpu_slice("node-1"))
    port = free_port()
    tls_dir = tmp_path / "tls"
    proc = subprocess.Popen(
        serve_argv(port, tls_dir, "--kubeconfig", str(kube_api.kubeconfig_path)),
        stderr=subprocess.DEVNULL,
    )
    url = f"https://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        response: dict[str, object] = {}
        while time.monotonic() < deadline:  # ready first, then the cache syncs in the background
            try:
                status, body = https(url + "/validate", tls_dir, admission_review({"shraes": "1"}))
            except OSError:
                time.sleep(0.1)
                continue
            response = json.loads(body)["response"]
            if status == 200 and response.get("warnings"):
                break
            time.sleep(0.1)
        assert response["allowed"] is True
        assert response["warnings"] == [
            'DeviceClass gpu-shared: no device has capacity "shraes" (they have: memory, shares); '
            'did you mean "shares"?'
        ]
        status, body = https(url + "/validate", tls_dir, admission_review({"shares": "1"}))
        assert status == 200 and "warnings" not in json.loads(body)["response"]
        _, metrics = https(url + "/metrics", tls_dir)
        assert 'dra_capacity_webhook_cluster_warnings_total{view="used"} ' in metrics.decode()
    finally:
        proc.kill()
        proc.wait()


def test_serve_with_an_unreadable_kubeconfig_exits_2_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = subprocess.run(
        [CLI, "serve", "--self-signed", "--tls-dir", str(tmp_path / "tls"), "--kubeconfig", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"dra-capacity serve: error: cannot load cluster configuration from {missing}"
    )
    assert len(result.stderr.splitlines()) == 1


def test_serve_judges_by_the_release_the_api_server_reports(kube_api: KubeAPIServer, tmp_path: Path) -> None:
    """With a cluster, `/version` at start picks the release (kubeio/serverversion.py)."""
    info = kube_api.api.discovery.version()
    kube_api.api.discovery.version = lambda: {**info, "gitVersion": "v1.38.0-beta.0"}  # type: ignore[method-assign]
    port = free_port()
    tls_dir = tmp_path / "tls"
    argv = [CLI, "serve", "--self-signed", "--listen", f"127.0.0.1:{port}", "--tls-dir", str(tls_dir)]
    proc = subprocess.Popen(
        [*argv, "--kubeconfig", str(kube_api.kubeconfig_path)], stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        lines: list[str] = []
        while time.monotonic() < deadline and proc.stderr is not None:
            line = proc.stderr.readline()
            lines.append(line)
            if "judging as Kubernetes" in line and "release" in line:
                break
        assert any("judging as Kubernetes 1.38" in line for line in lines), lines[-5:]
    finally:
        proc.kill()
        proc.wait()
