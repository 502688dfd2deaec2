"""The Helm chart, rendered and linted by the real helm binary (installed into the venv by `make test`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

CHART = Path(__file__).resolve().parents[2] / "charts" / "dra-capacity"


def _helm() -> str:
    beside = Path(sys.executable).parent / "helm"
    if beside.exists():
        return str(beside)
    found = shutil.which("helm")
    assert found, "helm is not installed: `make install` fetches it (scripts/fetch_helm.py)"
    return found


def _template(*sets: str) -> subprocess.CompletedProcess[str]:
    args = [_helm(), "template", "rel", str(CHART), "--namespace", "dra-system"]
    for s in sets:
        args += ["--set", s]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def _objects(*sets: str) -> list[dict[str, Any]]:
    proc = _template(*sets)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def _one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def test_chart_lints_cleanly() -> None:
    proc = subprocess.run([_helm(), "lint", str(CHART)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_default_render_has_webhooks_for_deviceclasses_only() -> None:
    objs = _objects()
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        cfg = _one(objs, kind)
        (hook,) = cfg["webhooks"]
        assert hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["matchPolicy"] == "Equivalent"
        (rule,) = hook["rules"]
        assert rule["apiGroups"] == ["resource.k8s.io"]
        assert rule["resources"] == ["deviceclasses"]
        assert rule["operations"] == ["CREATE", "UPDATE"]
        assert hook["timeoutSeconds"] == 5


def test_validating_fails_closed_and_mutating_fails_open_by_default() -> None:
    objs = _objects()
    assert _one(objs, "ValidatingWebhookConfiguration")["webhooks"][0]["failurePolicy"] == "Fail"
    assert _one(objs, "MutatingWebhookConfiguration")["webhooks"][0]["failurePolicy"] == "Ignore"
    assert (
        _one(objs, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]["path"]
        == "/validate"
    )
    assert (
        _one(objs, "MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]["path"]
        == "/mutate"
    )


def test_cert_manager_mode_injects_ca_and_issues_leaf_from_a_ca() -> None:
    objs = _objects()
    vwc = _one(objs, "ValidatingWebhookConfiguration")
    assert (
        vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        == "dra-system/rel-dra-capacity-webhook"
    )
    certs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Certificate"}
    leaf = certs["rel-dra-capacity-webhook"]
    assert "rel-dra-capacity-webhook.dra-system.svc" in leaf["spec"]["dnsNames"]
    assert leaf["spec"]["issuerRef"]["name"] == "rel-dra-capacity-ca"
    assert certs["rel-dra-capacity-ca"]["spec"]["isCA"] is True


def test_secret_mode_requires_ca_bundle_with_a_clear_message() -> None:
    proc = _template("tls.mode=secret", "tls.secretName=my-tls")
    assert proc.returncode != 0
    assert "tls.mode=secret needs tls.caBundle" in proc.stderr


def test_secret_mode_sets_ca_bundle_and_mounts_the_secret() -> None:
    objs = _objects("tls.mode=secret", "tls.secretName=my-tls", "tls.caBundle=Q0E=")
    assert not [o for o in objs if o["kind"] in ("Certificate", "Issuer")]
    hook = _one(objs, "ValidatingWebhookConfiguration")["webhooks"][0]
    assert hook["clientConfig"]["caBundle"] == "Q0E="
    dep = _one(objs, "Deployment")
    assert dep["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] == "my-tls"


def test_deployment_is_pss_restricted_and_has_no_api_token() -> None:
    spec = _one(_objects(), "Deployment")["spec"]["template"]["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    (container,) = spec["containers"]
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_feature_gates_become_the_serve_flag() -> None:
    dep = _one(
        _objects("featureGates.DRAExtendedResource=false", "featureGates.DRAConsumableCapacity=true"),
        "Deployment",
    )
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--feature-gates=DRAConsumableCapacity=true,DRAExtendedResource=false" in args


def test_pdb_only_with_more_than_one_replica() -> None:
    assert [o for o in _objects() if o["kind"] == "PodDisruptionBudget"]
    assert not [o for o in _objects("replicaCount=1") if o["kind"] == "PodDisruptionBudget"]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("webhook.timeoutSeconds=60", "maximum"),
        ("featureGates.NoSuchGate=true", "value must be one of"),
        ("tls.mode=self", "value must be one of"),
        ("webhook.failurePolicy=Sometimes", "value must be one of"),
    ],
)
def test_schema_rejects_bad_values(setting: str, message: str) -> None:
    proc = _template(setting)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_every_object_carries_the_standard_labels() -> None:
    for obj in _objects("networkPolicy.enabled=true"):
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "dra-capacity"
        assert labels["app.kubernetes.io/instance"] == "rel"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"


def test_the_chart_args_start_the_real_server(tmp_path: Path) -> None:
    """The Deployment's args are accepted by `dra-capacity serve`: with the Secret's files in place (as the
    chart mounts them, read-only), the webhook answers /readyz over TLS and metrics on the plain-HTTP port."""
    import socket
    import ssl
    import time
    import urllib.request

    from certs.authority import generate_self_signed
    from certs.files import write_bundle

    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    https_port, metrics_port = free_port(), free_port()
    dep = _one(_objects(f"webhook.port={https_port}", f"metrics.port={metrics_port}"), "Deployment")
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    tls_dir = tmp_path / "tls"
    write_bundle(tls_dir, generate_self_signed(()))
    for f in tls_dir.iterdir():
        f.chmod(0o444)
    tls_dir.chmod(0o555)
    mount = container["volumeMounts"][0]["mountPath"]
    args = [a.replace(mount, str(tls_dir)).replace("0.0.0.0:", "127.0.0.1:") for a in container["args"]]
    assert args[0] == "serve"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "dra-capacity"), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ctx = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                probe = container["readinessProbe"]["httpGet"]["path"]
                url = f"https://127.0.0.1:{https_port}{probe}"
                with urllib.request.urlopen(url, context=ctx, timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                assert time.monotonic() < deadline, "the webhook never became ready"
                time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as resp:
            assert b"dra_capacity_webhook" in resp.read()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        tls_dir.chmod(0o755)


def test_rendered_manifests_have_no_duplicate_keys() -> None:
    """Strict YAML readers (kubectl, our own loader) refuse a key given twice in one mapping."""
    from resourceapi.documents import load_documents

    proc = _template("networkPolicy.enabled=true")
    assert proc.returncode == 0, proc.stderr
    docs = load_documents(proc.stdout, "rendered.yaml")
    assert {d.kind for d in docs} >= {"Deployment", "Service", "ValidatingWebhookConfiguration"}


def test_pod_template_matches_the_deployment_selector() -> None:
    dep = _one(_objects(), "Deployment")
    selector = dep["spec"]["selector"]["matchLabels"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()
