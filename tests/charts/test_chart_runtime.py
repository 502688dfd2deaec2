"""The chart's containers, run as the kubelet would run them, against the kube-apiserver test double.

`helm install` itself cannot target the double: it serves no Services and none of apps/v1, rbac, policy,
batch, networking or discovery.k8s.io, so helm 4.3 fails with `error validating data: the server could not
find the requested resource` (`no matches for kind "Deployment"` without OpenAPI validation). So this test
renders the chart with the real helm, seeds the double with the rendered webhook configurations (native
validation applies), and runs the rendered containers' exact args as processes: per webhook pod, the certs
sidecar then the webhook, sharing a directory as the pod's emptyDir; then the helm-test probe, then the
pre-delete cleanup Job.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubeapi import KubeAPIServer
from support.chart_render import CHART, NAMESPACE, containers, objects, of_kind, one
from support.ports import free_port

BIN = Path(sys.executable).parent
WEBHOOK = "rel-dra-capacity-webhook"


def _serve_knows(flag: str) -> bool:
    out = subprocess.run([str(BIN / "dra-capacity"), "serve", "--help"], capture_output=True, text=True)
    return flag in out.stdout


def _container(objs: list[dict[str, Any]], owner: str, name: str) -> dict[str, Any]:
    kinds = [o for o in objs if o["kind"] in ("Deployment", "Job") and o["metadata"]["name"] == owner]
    (obj,) = kinds
    (c,) = [c for c in containers(obj["spec"]["template"]["spec"]) if c["name"] == name]
    return c


def _wait_http(url: str, proc: subprocess.Popen[str], timeout: float = 60, **kw: Any) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            with urllib.request.urlopen(url, timeout=2, **kw) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{url} never answered 200"
        time.sleep(0.1)


def _run_probe(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The chart's helm-test probe (files/probe.py) with `env`, as its Job runs it."""
    return subprocess.run(
        [sys.executable, str(CHART / "files" / "probe.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
def test_the_webhook_pods_certs_sidecar_and_server_work_with_the_chart_args(
    kube_api: KubeAPIServer, tmp_path: Path
) -> None:
    routing = _serve_knows("--scheduler-name")  # pod routing's flag comes with the binder's server side
    objs = objects(f"webhook.podRouting.enabled={str(routing).lower()}")
    kube_api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    configs = [
        *of_kind(objs, "ValidatingWebhookConfiguration"),
        *of_kind(objs, "MutatingWebhookConfiguration"),
    ]
    for cfg in configs:
        kube_api.seed(cfg)
    sidecar = _container(objs, WEBHOOK, "certs")
    webhook = _container(objs, WEBHOOK, "webhook")
    tls_mount = next(m["mountPath"] for m in sidecar["volumeMounts"] if m["name"] == "tls")
    serve_mount = next(m["mountPath"] for m in webhook["volumeMounts"] if m["name"] == "tls")
    ports = [free_port(), free_port()]
    procs: list[subprocess.Popen[str]] = []
    try:
        for i, port in enumerate(ports):
            pod_dir = tmp_path / f"pod-{i}"
            health = free_port()
            args = [
                a.replace(tls_mount, str(pod_dir)).replace(
                    "--health-listen=0.0.0.0:8081", f"--health-listen=127.0.0.1:{health}"
                )
                for a in sidecar["args"]
            ]
            args += ["--kubeconfig", str(kube_api.kubeconfig_path), "--identity", f"pod-{i}"]
            args += [f"--endpoint=127.0.0.1:{p}" for p in ports]
            certs_proc = subprocess.Popen(
                [str(BIN / "dra-capacity"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            procs.append(certs_proc)
            probe = sidecar["startupProbe"]["httpGet"]["path"]
            _wait_http(f"http://127.0.0.1:{health}{probe}", certs_proc)  # the startup probe gates the webhook
            assert (pod_dir / "tls.crt").exists()
            serve_health = free_port()
            serve_args = [
                a.replace(serve_mount, str(pod_dir))
                .replace("0.0.0.0:8443", f"127.0.0.1:{port}")
                .replace("0.0.0.0:9090", f"127.0.0.1:{free_port()}")
                .replace("0.0.0.0:6080", f"127.0.0.1:{serve_health}")
                for a in webhook["args"]
            ]
            env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
            serve = subprocess.Popen(
                [str(BIN / "dra-capacity"), *serve_args],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            procs.append(serve)
            import ssl

            ctx = ssl.create_default_context(cafile=str(pod_dir / "ca.crt"))
            # The kubelet's readiness probe (plain HTTP, the health listener), then the HTTPS listener.
            assert webhook["readinessProbe"]["httpGet"]["port"] == "health"
            _wait_http(
                f"http://127.0.0.1:{serve_health}{webhook['readinessProbe']['httpGet']['path']}", serve
            )
            _wait_http(f"https://127.0.0.1:{port}/readyz", serve, context=ctx)

        # Every webhook of every rendered configuration got the Secret's CA.
        secret = kube_api.get("secrets", "rel-dra-capacity-webhook-tls", namespace=NAMESPACE)
        assert secret is not None and secret["type"] == "kubernetes.io/tls"
        for cfg in configs:
            stored = kube_api.get(cfg["kind"], cfg["metadata"]["name"])
            assert stored is not None
            assert all(
                h["clientConfig"].get("caBundle") == secret["data"]["ca.crt"] for h in stored["webhooks"]
            )

        # The helm-test probe, pointed at a replica instead of the Service (no cluster DNS here).
        test_pod = one(objs, "Pod", "rel-dra-capacity-test")
        env = {e["name"]: e["value"] for e in test_pod["spec"]["containers"][0]["env"]}
        env["WEBHOOK_URL"] = f"https://127.0.0.1:{ports[0]}/validate"
        env["CA_FILE"] = str(tmp_path / "pod-0" / "ca.crt")
        probe = _run_probe(env)
        assert probe.returncode == 0, probe.stderr
        assert "allowed a valid DeviceClass, rejected:" in probe.stdout
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()

    # The pre-delete hook: the cleanup Job's args remove every configuration and the managed Secret.
    cleanup = _container(objs, "rel-dra-capacity-cleanup", "cleanup")
    proc = subprocess.run(
        [str(BIN / "dra-capacity"), *cleanup["args"], "--kubeconfig", str(kube_api.kubeconfig_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for cfg in configs:
        assert kube_api.get(cfg["kind"], cfg["metadata"]["name"]) is None
    assert kube_api.get("secrets", "rel-dra-capacity-webhook-tls", namespace=NAMESPACE) is None


def test_the_probe_fails_with_a_message_saying_what_to_look_at() -> None:
    objs = objects()
    job = one(objs, "Job", "rel-dra-capacity-install-probe")
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PROBE_TIMEOUT"] == "180"
    env |= {
        "WEBHOOK_URL": f"https://127.0.0.1:{free_port()}/validate",
        "PROBE_TIMEOUT": "2",
        "CA_FILE": "/nonexistent",
    }
    proc = _run_probe(env)
    assert proc.returncode == 1
    assert "did not answer correctly within 2s" in proc.stderr
    assert f"kubectl -n {NAMESPACE} logs deploy/{WEBHOOK} --all-containers" in proc.stderr
