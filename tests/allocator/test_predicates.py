"""Node predicates and resource fit: what the kubelet would reject, with kube-scheduler's reasons."""

from __future__ import annotations

from typing import Any

import pytest
from support.workloads import container, node, pod

from allocator.scheduling.predicates import (
    REASON_AFFINITY,
    REASON_NODE_NAME,
    REASON_TAINT,
    REASON_TOO_MANY_PODS,
    REASON_UNSCHEDULABLE,
    NodeUsage,
    allocatable_vector,
    fit_reasons,
    fit_vector,
    pod_requests,
    static_reasons,
)
from resourceapi.api.core_v1 import Node, Taint, Toleration
from resourceapi.machinery.quantity import Quantity
from resourceapi.tolerations import tolerates


def _q(d: dict[str, Quantity]) -> dict[str, str]:
    return {k: str(v) for k, v in d.items()}


# --- effective requests (upstream PodRequests) --------------------------------------------------------------


def test_containers_are_summed() -> None:
    p = pod("p", containers=[container("a", {"cpu": "1"}), container("b", {"cpu": "500m"})])
    assert _q(pod_requests(p)) == {"cpu": "1500m"}


def test_init_container_counts_when_larger_than_the_sum() -> None:
    p = pod("p", {"cpu": "1"}, init=[container("i", {"cpu": "3"})])
    assert _q(pod_requests(p)) == {"cpu": "3"}


def test_sidecars_add_to_containers_and_to_later_init_containers() -> None:
    p = pod(
        "p",
        {"cpu": "1"},
        init=[container("side", {"cpu": "1"}, restart_policy="Always"), container("i", {"cpu": "2"})],
    )
    # containers 1 + sidecar 1 = 2; the init container runs beside the sidecar: 2 + 1 = 3.
    assert _q(pod_requests(p)) == {"cpu": "3"}


def test_overhead_is_added() -> None:
    p = pod("p", {"memory": "1Gi"}, overhead={"memory": "128Mi"})
    assert _q(pod_requests(p)) == {"memory": "1152Mi"}


def test_limits_default_missing_requests() -> None:
    p = pod("p", containers=[{"name": "c", "resources": {"limits": {"nvidia.com/gpu.shared": "1"}}}])
    assert _q(pod_requests(p)) == {"nvidia.com/gpu.shared": "1"}


def test_fit_vector_uses_millicores_for_cpu_and_values_for_the_rest() -> None:
    assert fit_vector({"cpu": Quantity.parse("250m"), "memory": Quantity.parse("1Ki")}) == {
        "cpu": 250,
        "memory": 1024,
    }


# --- tolerations --------------------------------------------------------------------------------------------


TOLERATION_CASES = [
    ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "value": "v"}, True),
    ({"key": "k", "operator": "Equal", "value": "other"}, False),
    ({"key": "k", "operator": "Exists"}, True),
    ({"operator": "Exists"}, True),
    ({"key": "other", "operator": "Exists"}, False),
    ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "k", "operator": "Gt", "value": "1"}, False),
]


@pytest.mark.parametrize(("toleration", "expected"), TOLERATION_CASES)
def test_toleration_matching_follows_core_v1(toleration: dict[str, Any], expected: bool) -> None:
    taint = Taint(key="k", value="v", effect="NoSchedule")
    assert tolerates(Toleration.model_validate(toleration), taint) is expected


# --- static plugins -----------------------------------------------------------------------------------------


def _tainted(effect: str) -> Node:
    return node("n", taints=[{"key": "dedicated", "value": "gpu", "effect": effect}])


@pytest.mark.parametrize(
    ("effect", "blocked"), [("NoSchedule", True), ("NoExecute", True), ("PreferNoSchedule", False)]
)
def test_only_noschedule_and_noexecute_taints_block(effect: str, blocked: bool) -> None:
    assert static_reasons(pod("p"), _tainted(effect)) == ([REASON_TAINT] if blocked else [])


def test_tolerated_taint_does_not_block() -> None:
    p = pod(
        "p", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    )
    assert static_reasons(p, _tainted("NoSchedule")) == []


def test_unschedulable_node_rejects_pods() -> None:
    assert static_reasons(pod("p"), node("n", unschedulable=True)) == [REASON_UNSCHEDULABLE]


def test_unschedulable_toleration_admits_pods_to_cordoned_nodes() -> None:
    p = pod(
        "p",
        tolerations=[
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
        ],
    )
    assert static_reasons(p, node("n", unschedulable=True)) == []


def test_node_name_must_match() -> None:
    assert static_reasons(pod("p", nodeName="other"), node("n")) == [REASON_NODE_NAME]
    assert static_reasons(pod("p", nodeName="n"), node("n")) == []


def test_node_selector_must_match_labels() -> None:
    n = node("n", labels={"zone": "a"})
    assert static_reasons(pod("p", nodeSelector={"zone": "b"}), n) == [REASON_AFFINITY]
    assert static_reasons(pod("p", nodeSelector={"zone": "a"}), n) == []


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


AFFINITY_CASES = [
    ("In matches", {"matchExpressions": [_expr("zone", "In", "a", "b")]}, True),
    ("In misses", {"matchExpressions": [_expr("zone", "In", "c")]}, False),
    ("NotIn matches", {"matchExpressions": [_expr("zone", "NotIn", "c")]}, True),
    ("NotIn matches a missing label", {"matchExpressions": [_expr("rack", "NotIn", "c")]}, True),
    ("NotIn misses", {"matchExpressions": [_expr("zone", "NotIn", "a")]}, False),
    ("Exists", {"matchExpressions": [_expr("zone", "Exists")]}, True),
    ("Exists misses", {"matchExpressions": [_expr("rack", "Exists")]}, False),
    ("DoesNotExist", {"matchExpressions": [_expr("rack", "DoesNotExist")]}, True),
    ("DoesNotExist misses", {"matchExpressions": [_expr("zone", "DoesNotExist")]}, False),
    ("Gt", {"matchExpressions": [_expr("gpus", "Gt", "4")]}, True),
    ("Gt misses", {"matchExpressions": [_expr("gpus", "Gt", "8")]}, False),
    ("Lt", {"matchExpressions": [_expr("gpus", "Lt", "9")]}, True),
    ("Lt on a non-integer label misses", {"matchExpressions": [_expr("zone", "Lt", "9")]}, False),
    ("matchFields metadata.name", {"matchFields": [_expr("metadata.name", "In", "n")]}, True),
    ("matchFields other name", {"matchFields": [_expr("metadata.name", "In", "m")]}, False),
    (
        "expressions are ANDed",
        {"matchExpressions": [_expr("zone", "In", "a"), _expr("gpus", "In", "4")]},
        False,
    ),
    ("an empty term matches nothing", {}, False),
]


@pytest.mark.parametrize(("name", "term", "matches"), AFFINITY_CASES, ids=[c[0] for c in AFFINITY_CASES])
def test_required_node_affinity(name: str, term: dict[str, Any], matches: bool) -> None:
    n = node("n", labels={"zone": "a", "gpus": "8"})
    assert static_reasons(pod("p", affinity=_affinity(term)), n) == ([] if matches else [REASON_AFFINITY])


def test_affinity_terms_are_ored() -> None:
    p = pod(
        "p",
        affinity=_affinity(
            {"matchExpressions": [_expr("zone", "In", "x")]}, {"matchExpressions": [_expr("zone", "In", "a")]}
        ),
    )
    assert static_reasons(p, node("n", labels={"zone": "a"})) == []


def test_unschedulable_is_reported_before_taints() -> None:
    n = node("n", unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}])
    assert static_reasons(pod("p"), n) == [REASON_UNSCHEDULABLE]


# --- resource fit -------------------------------------------------------------------------------------------


def _fit(
    requests: dict[str, Any], allocatable: dict[str, Any], used: dict[str, Any] | None = None, pods: int = 0
) -> list[str]:
    p = pod("p", requests)
    usage = NodeUsage(fit_vector({k: Quantity.parse(str(v)) for k, v in (used or {}).items()}), pods)
    return fit_reasons(fit_vector(pod_requests(p)), allocatable_vector(node("n", allocatable)), usage)


def test_pod_fits_in_what_is_left() -> None:
    assert _fit({"cpu": "2", "memory": "1Gi"}, {"cpu": "4", "memory": "2Gi"}, {"cpu": "2"}) == []


def test_every_insufficient_resource_is_a_reason_in_upstream_order() -> None:
    reasons = _fit(
        {"cpu": "2", "memory": "3Gi", "ephemeral-storage": "10Gi", "example.com/foo": 1},
        {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "1Gi"},
    )
    assert reasons == [
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient ephemeral-storage",
        "Insufficient example.com/foo",
    ]


def test_pods_already_on_the_node_count() -> None:
    assert _fit({"cpu": "1"}, {"cpu": "4"}, {"cpu": "3500m"}) == ["Insufficient cpu"]


def test_pod_count_is_limited_by_allocatable_pods() -> None:
    assert _fit({}, {"pods": "2"}, pods=2) == [REASON_TOO_MANY_PODS]


def test_device_plugin_extended_resources_are_fitted() -> None:
    assert _fit(
        {"nvidia.com/gpu.shared": 1}, {"nvidia.com/gpu.shared": "4"}, {"nvidia.com/gpu.shared": 4}
    ) == ["Insufficient nvidia.com/gpu.shared"]


def test_dra_delegated_resources_are_skipped() -> None:
    p = pod("p", {"nvidia.com/gpu.shared": 1})
    reasons = fit_reasons(
        fit_vector(pod_requests(p)),
        allocatable_vector(node("n")),
        NodeUsage(),
        lambda name: name.startswith("nvidia"),
    )
    assert reasons == []


def test_node_without_allocatable_is_not_checked() -> None:
    bare = Node.model_validate({"metadata": {"name": "bare"}})
    assert fit_reasons({"cpu": 1000}, allocatable_vector(bare), NodeUsage()) == []
