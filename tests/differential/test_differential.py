"""The differential in CI: our validation against the real kube-apiserver v1.37.2 (tests/realcluster), at a
fixed seed: the test suite's own inputs, 1,000 DeviceClasses and 300 of each other kind. Every disagreement
must be listed in docs/divergences.md (`make differential` runs the full count with a random seed)."""

from __future__ import annotations

from differential.compare import listed_keys
from differential.run import Report, run_all
from differential.server import Server
from dra_capacity.apiverdict import Judge
from localcluster.cluster import Cluster, selected_release

SEED = 20261202


def test_validation_agrees_with_the_real_api_server(real_cluster: Cluster) -> None:
    api = real_cluster.api_client()
    try:
        server = Server(api.configuration, workers=3)
        server.ensure_namespace()
        report = Report(SEED)
        run_all(server, Judge(), report, classes=1000, others=300)
    finally:
        api.close()
    listed = listed_keys(release=selected_release())
    unlisted = report.unlisted(listed)
    assert report.kinds["DeviceClass"].compared >= 1000
    assert all(
        report.kinds[k].compared >= 300
        for k in ("ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "ResourceClaim status")
    )
    assert not unlisted, "\n".join(report.lines(listed))
