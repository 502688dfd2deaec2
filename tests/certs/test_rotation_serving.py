"""A CA rotation in the plan's order keeps every request working, against real `dra-capacity serve` replicas
that hot-reload their files (webhook/server/tlsreload.py), with a client that trusts only the published
caBundle and learns changes late, and one replica whose files arrive late (a kubelet Secret-volume sync).

The cluster side of the same rotation (Secret, caBundle injection, EndpointSlices, the controller) is tested
against the API-server double in test_cluster_*.py; this test pins the ordering itself."""

from __future__ import annotations

import datetime
import threading
import time
from pathlib import Path

import pytest
from support.certmaker import NAMES
from support.serving import Traffic, replicas

from certs.cluster import StoredSecret
from certs.material import Material
from certs.operations import mirror_files
from certs.plan import Change, Force, Observed, Settings, create, next_step
from certs.served import fetch_served
from certs.verify import issued_by

SVC = NAMES[-1]


def _stored(m: Material) -> StoredSecret:
    return StoredSecret(m.secret_data(), m.annotations(), {}, "kubernetes.io/tls", "1", {})


@pytest.mark.slow
def test_no_request_fails_during_a_ca_rotation_and_the_old_ca_goes_only_after_every_replica_switched(
    tmp_path: Path,
) -> None:
    settings = Settings(dns_names=NAMES, propagation_delay=datetime.timedelta(seconds=1.5))
    now = datetime.datetime.now(datetime.UTC)
    material = create(settings, now)
    old_ca = material.signer.certificate
    dirs = [tmp_path / "r0", tmp_path / "r1"]
    for d in dirs:
        mirror_files(_stored(material), d)
    published = {"bundle": material.bundle_pem}
    timers: list[threading.Timer] = []

    with replicas(dirs, lambda: published["bundle"], SVC) as running:
        ports = [r.port for r in running]
        with Traffic(ports, lambda: published["bundle"], SVC, refresh=1.0) as traffic:
            force = Force(ca=True)
            history: list[Change] = []
            retired_when: list[list[bool]] = []
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                served = [fetch_served("127.0.0.1", p, server_name=SVC).certificate for p in ports]
                assert all(c is not None for c in served)
                step = next_step(
                    material,
                    settings,
                    datetime.datetime.now(datetime.UTC),
                    Observed(served=[c for c in served if c is not None]),
                    force,
                )
                force = Force()
                if step.changed:
                    history += step.changes
                    if Change.OLD_CA_RETIRED in step.changes:
                        retired_when.append(
                            [issued_by(c, step.material.signer.certificate) for c in served if c]
                        )
                    material = step.material
                    published["bundle"] = material.bundle_pem  # the injected caBundle
                    mirror_files(_stored(material), dirs[0])
                    late = threading.Timer(0.4, mirror_files, (_stored(material), dirs[1]))
                    late.start()
                    timers.append(late)
                if step.waiting is None and not step.changed:
                    break
                time.sleep(0.1)
            for t in timers:
                t.join()
            time.sleep(0.5)
        assert history == [Change.CA_ADDED, Change.LEAF_FROM_NEW_CA, Change.OLD_CA_RETIRED]
        assert retired_when == [[True, True]]
        assert material.bundle == (material.signer.certificate,)
        assert material.signer.certificate != old_ca
        assert traffic.failures == []
        assert traffic.ok > 20
