"""`dra-capacity bind` as a process against the kube-apiserver test double: --once, the running controller
with its Lease, health and metrics, bad flags (a lost lease: tests/procrt/test_lost_lease.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.error
import urllib.request
from typing import Any

from support.binder_harness import CLI, SHORT_LEASE, bind_argv, bound, events, seed_cluster, wait_for
from support.gpu_cluster import pod
from support.ports import free_port


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "bind", *args], capture_output=True, text=True, timeout=timeout)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def test_once_places_the_pending_pods_and_exits_zero(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1, gpus=1, shares=2)
    for i in range(3):
        kube_api.seed(pod(f"web-{i}"))
    done = run("--once", "--kubeconfig", str(kube_api.kubeconfig_path), "--metrics-listen", "127.0.0.1:0")
    assert done.returncode == 0, done.stderr
    assert sorted(p["metadata"]["name"] for p in bound(kube_api)) == ["web-0", "web-1"]
    assert [e["involvedObject"]["name"] for e in events(kube_api, "FailedScheduling")] == ["web-2"]
    decisions = [json.loads(line) for line in done.stderr.splitlines() if '"decision"' in line]
    assert sorted((d["pod"], d["result"]) for d in decisions) == [
        ("default/web-0", "bound"),
        ("default/web-1", "bound"),
        ("default/web-2", "unschedulable"),
    ]
    assert done.stdout == ""


def test_controller_serves_health_and_metrics_holds_the_lease_and_stops_on_sigterm(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1)
    port = free_port()
    proc = subprocess.Popen(
        bind_argv(kube_api, f"127.0.0.1:{port}", *SHORT_LEASE),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for("/readyz 200", lambda: get(f"http://127.0.0.1:{port}/readyz")[0] == 200, timeout=30)
        assert get(f"http://127.0.0.1:{port}/healthz") == (200, '{"status":"ok"}')
        kube_api.seed(pod("web-0"))
        wait_for("bound", lambda: bound(kube_api), timeout=30)
        wait_for(
            "metrics",
            lambda: "dra_capacity_binder_pods_bound_total 1.0" in get(f"http://127.0.0.1:{port}/metrics")[1],
        )
        metrics = get(f"http://127.0.0.1:{port}/metrics")[1]
        assert "dra_capacity_binder_leader 1.0" in metrics
        assert "dra_capacity_binder_bind_latency_seconds_count 1.0" in metrics
        lease = kube_api.get("leases", "dra-capacity-binder", namespace="default")
        assert lease["spec"]["holderIdentity"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lease = kube_api.get("leases", "dra-capacity-binder", namespace="default")
    assert lease["spec"]["holderIdentity"] == ""  # released: a standby takes over at once


def test_bad_flags_exit_two_with_one_line(kube_api: Any) -> None:
    cases = [
        ["--feature-gates", "Bogus=true"],
        ["--lease-duration", "2", "--renew-deadline", "3"],
        ["--kubeconfig", "/nonexistent/kubeconfig"],
        ["--leader-elect", "maybe"],
        ["--binding-timeout", "0.5"],
    ]
    for args in cases:
        done = run(*args, "--metrics-listen", "127.0.0.1:0")
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr
        lines = [line for line in done.stderr.splitlines() if "error" in line]
        assert len(lines) == 1, done.stderr


def test_bind_judges_by_the_release_the_api_server_reports(kube_api: Any) -> None:
    """`/version` at start picks the release (the double serves 1.37; one reporting 1.38 is judged as 1.38,
    and logged): kubeio/serverversion.py."""
    info = kube_api.api.discovery.version()
    kube_api.api.discovery.version = lambda: {**info, "gitVersion": "v1.38.0-beta.0"}
    seed_cluster(kube_api, nodes=1, gpus=1, shares=2)
    done = run("--once", "--kubeconfig", str(kube_api.kubeconfig_path), "--metrics-listen", "127.0.0.1:0")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    started = next(line for line in lines if line.get("msg", line.get("message")) == "binder started")
    assert "1.38" in json.dumps(started)
    assert any("judging as Kubernetes 1.38" in json.dumps(line) for line in lines)
