"""The certificate commands against the API-server test double (tests/kubeapi): a namespace, webhook
configurations pointing at the webhook Service, and `dra-capacity certs ...` run as a subprocess with the
double's kubeconfig, exactly as an administrator would run it."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubeapi import KubeAPIServer

NS = "dra-system"
SECRET = "webhook-tls"
SERVICE = "dra-capacity-webhook"
CONFIG = "dra-capacity-webhook"
SVC_NAME = f"{SERVICE}.{NS}.svc"
DRA_CAPACITY = str(Path(sys.executable).parent / "dra-capacity")


def _hook(name: str, path: str, service: str = SERVICE) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
        "clientConfig": {"service": {"name": service, "namespace": NS, "path": path, "port": 443}},
        "rules": [
            {
                "apiGroups": ["resource.k8s.io"],
                "apiVersions": ["v1"],
                "resources": ["deviceclasses"],
                "operations": ["CREATE", "UPDATE"],
            }
        ],
    }


def seed_configs(api: KubeAPIServer) -> None:
    """A validating and a mutating configuration named CONFIG (one webhook of the mutating one points at
    another Service: it must be left alone)."""
    api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    api.seed(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": CONFIG},
            "webhooks": [_hook("validate.deviceclasses.dra-capacity.io", "/validate")],
        }
    )
    api.seed(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": CONFIG},
            "webhooks": [
                _hook("mutate.deviceclasses.dra-capacity.io", "/mutate"),
                _hook("someone-else.example.com", "/x", service="another-service"),
            ],
        }
    )


def _certs_argv(api: KubeAPIServer, action: str) -> list[str]:
    """`dra-capacity certs ACTION` on the double, for the test installation's Secret, Service and config."""
    kubeconfig = str(api.kubeconfig_path)
    where = ["--namespace", NS, "--secret", SECRET, "--service", SERVICE, "--webhook-config", CONFIG]
    return [DRA_CAPACITY, "certs", action, "--kubeconfig", kubeconfig, *where]


def certs(
    api: KubeAPIServer, action: str, *extra: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    args = [*_certs_argv(api, action), *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def controller(
    api: KubeAPIServer, identity: str, tls_dir: Path, endpoints: list[int], *extra: str
) -> subprocess.Popen[str]:
    args = [
        *_certs_argv(api, "controller"),
        "--tls-dir",
        str(tls_dir),
        "--identity",
        identity,
        "--health-listen",
        "127.0.0.1:0",
        "--resync",
        "0.5",
        "--retry",
        "0.2",
        "--lease-duration",
        "2",
        "--propagation-delay",
        "1",
        *[f"--endpoint=127.0.0.1:{p}" for p in endpoints],
        *extra,
    ]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ca_bundles(api: KubeAPIServer) -> dict[str, bytes | None]:
    """Every webhook's caBundle, by `<kind>/<webhook name>`."""
    out: dict[str, bytes | None] = {}
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        obj = api.get(kind, CONFIG)
        assert obj is not None
        for hook in obj["webhooks"]:
            raw = hook["clientConfig"].get("caBundle")
            out[f"{kind}/{hook['name']}"] = base64.b64decode(raw) if raw else None
    return out


def secret_data(api: KubeAPIServer) -> dict[str, bytes]:
    obj = api.get("secrets", SECRET, namespace=NS)
    assert obj is not None
    return {k: base64.b64decode(v) for k, v in obj["data"].items()}


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return out + err
