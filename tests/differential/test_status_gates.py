"""Claim status updates on a kube-apiserver whose status gates differ from the 1.37 defaults: the drops of
PrepareForUpdate (binding conditions and consumable capacity off) and the rules behind an Alpha gate
(DRAOptionalNodeOperations on: skipNodeOperations), which the default differential cannot reach."""

from __future__ import annotations

from collections.abc import Callable

from differential.compare import listed_keys
from differential.run import STATUS_KIND, Report, draw_statuses, run_status
from differential.server import Server
from dra_capacity.apiverdict import status_update
from localcluster.cluster import FEATURE_GATES, Cluster, ClusterConfig
from resourceapi.validation.claim_status import StatusGates

SEED = 20261203
COUNT = 300
GATES = StatusGates(consumable_capacity=False, binding_conditions=False, optional_node_operations=True)
SERVER_GATES = {
    **FEATURE_GATES,
    "DRAConsumableCapacity": False,
    "DRADeviceBindingConditions": False,
    "DRAOptionalNodeOperations": True,
}


def test_the_draws_reach_the_skip_node_operations_rules() -> None:
    base = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"}}
    from differential.objgen import STATUS_CLAIM_SPEC

    old = {**base, "spec": STATUS_CLAIM_SPEC}
    fields = set()
    for update in draw_statuses(COUNT, SEED + 7):
        if update["target"] == "fresh":
            verdict = status_update({**old, "status": update["status"]}, old, status_gates=GATES)
            fields.update(c.field.rpartition(".")[2] for c in verdict.causes)
    assert any(f.startswith("skipNodeOperations") for f in fields)


def test_status_updates_agree_under_other_gates(real_cluster_factory: Callable[..., Cluster]) -> None:
    cluster = real_cluster_factory(
        ClusterConfig(
            nodes=0,
            netns=False,
            feature_gates=SERVER_GATES,
            apiserver_args=["--endpoint-reconciler-type=none"],
        )
    )
    api = cluster.api_client()
    try:
        server = Server(api.configuration, workers=3)
        server.ensure_namespace()
        report = Report(SEED)
        run_status(server, report, COUNT, status_gates=GATES)
    finally:
        api.close()
    kind = report.kinds[STATUS_KIND]
    assert kind.compared == COUNT
    # Only listed keys (a wrong JSON type's 400, worded by Go's decoder there) may appear; no verdict differs.
    assert kind.verdict == 0 and not report.unlisted(listed_keys()), "\n".join(report.lines(listed_keys()))
