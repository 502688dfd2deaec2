"""`dra-capacity certs init|rotate|check|cleanup` against the kube-apiserver test double (tests/kubeapi) over
real HTTPS with the real `kubernetes` client, as an administrator runs them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography import x509
from kubeapi import KubeAPIServer
from support.cluster_setup import (
    CONFIG,
    NS,
    SECRET,
    SERVICE,
    SVC_NAME,
    ca_bundles,
    certs,
    secret_data,
    seed_configs,
)
from support.serving import replicas

from certs.authority import generate_ca, issue_serving_certificate
from certs.material import from_secret
from certs.verify import parse_bundle, verify_server


def _now():  # type: ignore[no-untyped-def]
    import datetime

    return datetime.datetime.now(datetime.UTC)


def test_init_creates_a_tls_secret_and_injects_the_ca_into_our_webhooks_only(kube_api: KubeAPIServer) -> None:
    seed_configs(kube_api)
    proc = certs(kube_api, "init")
    assert proc.returncode == 0, proc.stderr
    assert "created a CA and a serving certificate" in proc.stdout
    secret = kube_api.get("secrets", SECRET, namespace=NS)
    assert secret is not None and secret["type"] == "kubernetes.io/tls"
    data = secret_data(kube_api)
    assert {"tls.crt", "tls.key", "ca.crt", "ca.key"} <= data.keys()
    material = from_secret(data)
    assert (material.signer.certificate.not_valid_after_utc - _now()).days >= 5 * 365 - 1
    assert verify_server(material.bundle, material.leaf.certificate, SVC_NAME, _now()) is None
    bundles = ca_bundles(kube_api)
    assert bundles.pop("mutatingwebhookconfigurations/someone-else.example.com") is None
    assert set(bundles.values()) == {data["ca.crt"]}


URL_CONFIG = "by-url"
URL = "https://127.0.0.1:9/validate"  # never called: nothing here creates what its rule matches


def _seed_url_config(api: KubeAPIServer) -> None:
    api.seed(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": URL_CONFIG},
            "webhooks": [
                {
                    "name": "url.example.com",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Ignore",
                    "clientConfig": {"url": URL},
                    "rules": [
                        {
                            "apiGroups": ["example.com"],
                            "apiVersions": ["v1"],
                            "resources": ["widgets"],
                            "operations": ["CREATE"],
                        }
                    ],
                }
            ],
        }
    )


def test_certs_says_which_webhooks_it_manages_and_which_it_skips(kube_api: KubeAPIServer) -> None:
    """A `url:` webhook (or one calling another Service) is not ours to inject: one line each says so, on
    init, rotate and check, instead of skipping it silently."""
    seed_configs(kube_api)
    _seed_url_config(kube_api)
    proc = certs(kube_api, "init", "--webhook-config", f"validating/{URL_CONFIG}")
    assert proc.returncode == 0, proc.stderr
    service = f"{NS}/{SERVICE}"
    why = "certs sets caBundle only on webhooks that call the Service, so set this one's yourself"
    scope = [
        f"manages caBundle of validatingwebhookconfiguration/{CONFIG} (webhook "
        "validate.deviceclasses.dra-capacity.io)",
        f"manages caBundle of mutatingwebhookconfiguration/{CONFIG} (webhook "
        "mutate.deviceclasses.dra-capacity.io)",
        f"skips mutatingwebhookconfiguration/{CONFIG} webhook someone-else.example.com: it calls service "
        f"{NS}/another-service, not service {service}; {why}",
        f"skips validatingwebhookconfiguration/{URL_CONFIG} webhook url.example.com: it calls url {URL}, not "
        f"service {service}; {why}",
    ]
    lines = proc.stdout.splitlines()
    assert lines[: len(scope)] == [f"certs init: {line}" for line in scope]
    assert "created a CA and a serving certificate" in proc.stdout
    url_config = kube_api.get("validatingwebhookconfigurations", URL_CONFIG)
    assert url_config is not None and "caBundle" not in url_config["webhooks"][0]["clientConfig"]

    rotate = certs(kube_api, "rotate", "--webhook-config", f"validating/{URL_CONFIG}")
    assert rotate.returncode == 0, rotate.stderr
    assert rotate.stdout.splitlines()[: len(scope)] == [f"certs rotate: {line}" for line in scope]

    check = certs(
        kube_api,
        "check",
        "--webhook-config",
        f"validating/{URL_CONFIG}",
        "--endpoint=127.0.0.1:9",
        "-o",
        "json",
    )
    assert check.stdout.startswith("{"), check.stderr
    notes = [
        (f["subject"], f["message"])
        for f in json.loads(check.stdout)["findings"]
        if "skipped" in f["message"]
    ]
    assert notes == [
        (
            f"mutatingwebhookconfiguration/{CONFIG} webhook someone-else.example.com",
            f"skipped: it calls service {NS}/another-service, not service {service}; its caBundle is neither "
            "checked nor managed by certs",
        ),
        (
            f"validatingwebhookconfiguration/{URL_CONFIG} webhook url.example.com",
            f"skipped: it calls url {URL}, not service {service}; its caBundle is neither checked nor "
            "managed by certs",
        ),
    ]


def test_init_again_changes_nothing(kube_api: KubeAPIServer) -> None:
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    versions = {
        kind: kube_api.get(kind, name, namespace=NS)["metadata"]["resourceVersion"]  # type: ignore[index]
        for kind, name in [
            ("secrets", SECRET),
            ("validatingwebhookconfigurations", CONFIG),
            ("mutatingwebhookconfigurations", CONFIG),
        ]
    }
    kube_api.clear_requests()
    proc = certs(kube_api, "init")
    assert proc.returncode == 0, proc.stderr
    assert "nothing to do" in proc.stdout
    assert not [r for r in kube_api.requests if r.verb in ("create", "update", "patch", "delete")]
    for kind, rv in versions.items():
        name = SECRET if kind == "secrets" else CONFIG
        assert kube_api.get(kind, name, namespace=NS)["metadata"]["resourceVersion"] == rv  # type: ignore[index]


def test_init_restores_a_wiped_ca_bundle(kube_api: KubeAPIServer) -> None:
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    vwc = kube_api.get("validatingwebhookconfigurations", CONFIG)
    assert vwc is not None
    del vwc["webhooks"][0]["clientConfig"]["caBundle"]
    kube_api.update(vwc)
    proc = certs(kube_api, "init")
    assert "set caBundle of validatingwebhookconfiguration/dra-capacity-webhook" in proc.stdout
    assert set(ca_bundles(kube_api).values()) - {None} == {secret_data(kube_api)["ca.crt"]}


def test_init_never_overwrites_a_secret_it_did_not_make(kube_api: KubeAPIServer) -> None:
    seed_configs(kube_api)
    ca = generate_ca()
    leaf = issue_serving_certificate(ca, (SVC_NAME,))
    kube_api.seed(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": SECRET, "namespace": NS},
            "data": {
                "tls.crt": base64.b64encode(leaf.cert_pem).decode(),
                "tls.key": base64.b64encode(leaf.key_pem).decode(),
            },
        }
    )
    proc = certs(kube_api, "init")
    assert proc.returncode == 2
    assert "was not made by `dra-capacity certs` and is left alone" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert secret_data(kube_api)["tls.crt"] == leaf.cert_pem


def test_rotate_force_leaf_keeps_the_ca_and_the_bundle(kube_api: KubeAPIServer) -> None:
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    before = secret_data(kube_api)
    proc = certs(kube_api, "rotate", "--force-leaf")
    assert proc.returncode == 0, proc.stderr
    assert "renewed the serving certificate" in proc.stdout
    after = secret_data(kube_api)
    assert after["tls.crt"] != before["tls.crt"] and after["ca.crt"] == before["ca.crt"]
    proc = certs(kube_api, "rotate")
    assert "nothing is due" in proc.stdout


def test_rotate_force_ca_without_a_view_of_the_replicas_keeps_both_cas(kube_api: KubeAPIServer) -> None:
    """From a workstation the pod IPs are unreachable: the rotation stops short of removing the old CA."""
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    old = secret_data(kube_api)
    proc = certs(
        kube_api,
        "rotate",
        "--force-ca",
        "--propagation-delay",
        "0",
        "--wait",
        "3",
        "--endpoint",
        "127.0.0.1:1",
    )
    assert proc.returncode == 1, proc.stderr  # --wait ran out: the rotation is not complete
    assert "added a new CA to the trust bundle" in proc.stdout
    assert "issued a serving certificate from the new CA" in proc.stdout
    assert "waiting for a view of the replicas" in proc.stdout
    bundle = parse_bundle(secret_data(kube_api)["ca.crt"])
    assert len(bundle) == 2 and x509.load_pem_x509_certificate(old["ca.crt"]) in bundle
    assert set(ca_bundles(kube_api).values()) - {None} == {secret_data(kube_api)["ca.crt"]}


@pytest.mark.slow
def test_check_passes_on_a_healthy_installation(kube_api: KubeAPIServer, tmp_path: Path) -> None:
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    d = tmp_path / "r0"
    d.mkdir()
    for k in ("tls.crt", "tls.key", "ca.crt"):
        (d / k).write_bytes(secret_data(kube_api)[k])
    with replicas([d], lambda: secret_data(kube_api)["ca.crt"], SVC_NAME) as running:
        proc = certs(kube_api, "check", f"--endpoint=127.0.0.1:{running[0].port}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "certs check: ok" in proc.stdout


@pytest.mark.slow
def test_check_reports_a_ca_bundle_that_does_not_verify_the_served_certificate(
    kube_api: KubeAPIServer, tmp_path: Path
) -> None:
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    stray_ca = generate_ca()
    stray = issue_serving_certificate(stray_ca, (SVC_NAME,))
    d = tmp_path / "r0"
    d.mkdir()
    (d / "tls.crt").write_bytes(stray.cert_pem)
    (d / "tls.key").write_bytes(stray.key_pem)
    with replicas([d], lambda: stray_ca.cert_pem, SVC_NAME) as running:
        proc = certs(kube_api, "check", f"--endpoint=127.0.0.1:{running[0].port}")
    assert proc.returncode == 1
    assert f"caBundle does not verify the certificate served by 127.0.0.1:{running[0].port}" in proc.stderr
    assert "fix: dra-capacity certs init" in proc.stderr
    assert "certs check: problems found" in proc.stdout


@pytest.mark.slow
def test_check_reports_a_wiped_ca_bundle_key_mismatch_and_san_mismatch(kube_api: KubeAPIServer) -> None:
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    mwc = kube_api.get("mutatingwebhookconfigurations", CONFIG)
    assert mwc is not None
    mwc["webhooks"][0]["clientConfig"].pop("caBundle")
    kube_api.update(mwc)
    secret = kube_api.get("secrets", SECRET, namespace=NS)
    assert secret is not None
    other = issue_serving_certificate(generate_ca(), ("elsewhere.dra-system.svc",))
    secret["data"]["tls.key"] = base64.b64encode(other.key_pem).decode()
    kube_api.update(secret)
    proc = certs(kube_api, "check", "--endpoint=127.0.0.1:1", "-o", "json")
    assert proc.returncode == 1
    import json

    report = json.loads(proc.stdout)
    messages = [f["subject"] + ": " + f["message"] for f in report["findings"] if f["severity"] == "problem"]
    assert any("mutate.deviceclasses.dra-capacity.io: caBundle is empty" in m for m in messages)
    assert any("tls.key: does not match the certificate in tls.crt (key mismatch)" in m for m in messages)
    assert all(
        f["fix"].startswith("dra-capacity certs")
        for f in report["findings"]
        if f["severity"] == "problem" and "replica" not in f["subject"]
    )


@pytest.mark.slow
def test_check_reports_a_san_mismatch(kube_api: KubeAPIServer) -> None:
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    proc = certs(kube_api, "check", "--endpoint=127.0.0.1:1", "--dns-name", "extra.example.com")
    assert proc.returncode == 1
    assert "does not name extra.example.com (SAN mismatch" in proc.stderr
    assert "--force-leaf" in proc.stderr


def test_cleanup_deletes_the_configurations_and_the_managed_secret(kube_api: KubeAPIServer) -> None:
    seed_configs(kube_api)
    assert certs(kube_api, "init").returncode == 0
    proc = certs(kube_api, "cleanup", "--delete-secret")
    assert proc.returncode == 0, proc.stderr
    assert kube_api.get("validatingwebhookconfigurations", CONFIG) is None
    assert kube_api.get("mutatingwebhookconfigurations", CONFIG) is None
    assert kube_api.get("secrets", SECRET, namespace=NS) is None
    again = certs(kube_api, "cleanup", "--delete-secret")
    assert again.returncode == 0 and "no webhook configuration left" in again.stdout


def test_an_unreachable_cluster_is_one_line_and_exit_2(tmp_path: Path) -> None:
    import subprocess

    from support.cluster_setup import DRA_CAPACITY

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    proc = subprocess.run(
        [
            DRA_CAPACITY,
            "certs",
            "init",
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            NS,
            "--secret",
            SECRET,
            "--service",
            "svc",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("dra-capacity certs init: error: cannot reach the cluster")
    assert "Traceback" not in proc.stderr
