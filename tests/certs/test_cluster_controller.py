"""`dra-capacity certs controller`, two replicas of it beside two real `dra-capacity serve` processes (the
chart's webhook pod: sidecar + webhook sharing a directory), against the kube-apiserver test double.

The client plays the API server: it trusts exactly the caBundle stored in the ValidatingWebhookConfiguration
(re-read every 250 ms, as an informer would see it) and verifies the Service name. EndpointSlices are not
served by the double yet, so the controllers are given the replicas with --endpoint."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubeapi import KubeAPIServer
from support.cluster_setup import (
    CONFIG,
    NS,
    SVC_NAME,
    ca_bundles,
    certs,
    controller,
    secret_data,
    seed_configs,
    stop,
    wait_for,
)
from support.ports import free_port
from support.serving import Traffic, replicas

from certs.served import fetch_served
from certs.verify import issued_by, parse_bundle

# Waits on purpose (timeouts, floods, lease expiries): `make quick` leaves these out (docs/testing.md).
pytestmark = pytest.mark.slow

VWC = "validatingwebhookconfigurations/validate.deviceclasses.dra-capacity.io"


def _holder(api: KubeAPIServer) -> str:
    lease = api.get("leases", "webhook-tls-certs", namespace=NS)
    return str((lease or {}).get("spec", {}).get("holderIdentity") or "")


def test_controllers_create_rotate_the_ca_without_a_failed_request_and_retire_the_old_ca(
    kube_api: KubeAPIServer, tmp_path: Path
) -> None:
    seed_configs(kube_api)
    dirs = [tmp_path / "r0", tmp_path / "r1"]
    ports = [free_port(), free_port()]
    # The traffic below learns a new bundle every 0.25 s, but on a loaded machine (CI's two cores under the
    # whole suite) its loop lagged past a 1 s propagation delay; 3 s keeps the API server's "a little late".
    delay = ("--propagation-delay", "3")
    procs = [controller(kube_api, f"pod-{i}", d, ports, *delay) for i, d in enumerate(dirs)]
    try:
        wait_for(lambda: all((d / "tls.crt").exists() and (d / "tls.key").exists() for d in dirs), "files")
        wait_for(lambda: ca_bundles(kube_api)[VWC] is not None, "caBundle injected")
        assert _holder(kube_api) in ("pod-0", "pod-1")
        old_ca = parse_bundle(secret_data(kube_api)["ca.crt"])[0]

        def published() -> bytes:
            bundle = ca_bundles(kube_api)[VWC]
            assert bundle is not None
            return bundle

        with (
            replicas(dirs, published, SVC_NAME, ports=ports),
            Traffic(ports, published, SVC_NAME, refresh=0.25) as traffic,
        ):
            time.sleep(0.5)
            proc = certs(kube_api, "rotate", "--force-ca")
            assert proc.returncode == 0, proc.stderr
            assert "added a new CA to the trust bundle" in proc.stdout

            def done() -> bool:
                bundle = parse_bundle(published())
                if len(bundle) != 1 or bundle[0] == old_ca:
                    return False
                served = [fetch_served("127.0.0.1", p, server_name=SVC_NAME).certificate for p in ports]
                return all(c is not None and issued_by(c, bundle[0]) for c in served)

            wait_for(done, "the rotation to complete", timeout=60)
            time.sleep(0.5)
        assert traffic.failures == []
        assert traffic.ok > 20
    finally:
        logs = [stop(p) for p in procs]
    joined = "\n".join(logs)
    assert "added a new CA to the trust bundle" not in joined  # `rotate` did that step
    assert "issued a serving certificate from the new CA" in joined
    assert "removed the old CA from the trust bundle" in joined
    assert "Traceback" not in joined


def test_the_leader_restores_a_wiped_ca_bundle_and_a_standby_takes_over(
    kube_api: KubeAPIServer, tmp_path: Path
) -> None:
    seed_configs(kube_api)
    procs = {f"pod-{i}": controller(kube_api, f"pod-{i}", tmp_path / f"r{i}", []) for i in range(2)}
    try:
        wait_for(lambda: ca_bundles(kube_api)[VWC] is not None, "caBundle injected")
        leader = _holder(kube_api)
        assert leader in procs
        expected = secret_data(kube_api)["ca.crt"]

        def wipe() -> None:
            vwc = kube_api.get("validatingwebhookconfigurations", CONFIG)
            assert vwc is not None
            vwc["webhooks"][0]["clientConfig"].pop("caBundle", None)
            kube_api.update(vwc)

        wipe()
        wait_for(lambda: ca_bundles(kube_api)[VWC] == expected, "the wiped caBundle restored", timeout=10)

        log = stop(procs.pop(leader))
        assert f"became the leader ({leader})" in log
        # what it manages and what it skips, said once (the wiped caBundle changed neither)
        assert log.count("manages caBundle of validatingwebhookconfiguration/") == 1
        assert log.count("skips mutatingwebhookconfiguration/dra-capacity-webhook webhook someone-else") == 1
        (standby,) = procs
        wait_for(lambda: _holder(kube_api) == standby, "the standby to take the Lease", timeout=15)
        wipe()
        wait_for(lambda: ca_bundles(kube_api)[VWC] == expected, "restored by the new leader", timeout=10)
        assert secret_data(kube_api)["ca.crt"] == expected  # no new CA: the Secret was reused
    finally:
        for p in procs.values():
            stop(p)


def test_only_the_leader_writes(kube_api: KubeAPIServer, tmp_path: Path) -> None:
    """Two candidates at once: exactly one creates the Secret; the other only mirrors it."""
    seed_configs(kube_api)
    # A Lease long enough that a loaded machine never lets it lapse during the test.
    procs = [
        controller(kube_api, f"pod-{i}", tmp_path / f"r{i}", [], "--lease-duration", "15") for i in range(2)
    ]
    try:
        wait_for(lambda: all((tmp_path / f"r{i}" / "tls.crt").exists() for i in range(2)), "files")
        time.sleep(1.0)
        creates = kube_api.requests_for("create", "secrets")
        assert len([r for r in creates if r.status == 201]) == 1
        assert (tmp_path / "r0" / "tls.crt").read_bytes() == (tmp_path / "r1" / "tls.crt").read_bytes()
    finally:
        for p in procs:  # both at once: a leader stopping first hands the Lease over (release on exit)
            p.terminate()
        logs = [stop(p) for p in procs]
    assert sum("became the leader" in log for log in logs) == 1
