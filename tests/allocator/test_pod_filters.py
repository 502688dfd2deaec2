"""Placement's scheduler filters beyond the node-local ones: scheduling gates, inter-pod (anti-)affinity,
topology spread (DoNotSchedule), pod-level resources, and pods that use what placement does not model."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from allocator.scheduling.placement import Placement, Placer
from allocator.structured.cluster import Cluster
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import ResourceSlice
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates

GATES = FeatureGates.defaults()
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _placer(
    nodes: list[Node],
    slices: list[ResourceSlice] | None = None,
    running: list[Pod] | None = None,
    naive: bool = False,
) -> Placer:
    slices = slices or []
    classes = [gpu_class()]
    return Placer(
        Cluster(GATES, classes, slices, []),
        GATES,
        ExtendedResourceResolver(classes, GATES),
        nodes,
        slices,
        running or [],
        naive=naive,
    )


def _run(placer: Placer, pods: list[Pod]) -> list[Placement]:
    out = []
    for p in pods:
        placement = placer.place(p)
        placer.commit(placement)
        out.append(placement)
    return out


def _labelled(p: Pod, labels: dict[str, str], node_name: str | None = None, **spec: Any) -> Pod:
    raw = p.to_api()
    raw["metadata"]["labels"] = labels
    raw["spec"].update(spec)
    if node_name:
        raw["spec"]["nodeName"] = node_name
    return Pod.model_validate(raw)


def _zoned(name: str, zone: str | None, **kw: Any) -> Node:
    labels = {HOSTNAME: name}
    if zone is not None:
        labels[ZONE] = zone
    return node(name, labels=labels, **kw)


def _anti(key: str = HOSTNAME, app: str = "db") -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _affinity(key: str = ZONE, app: str = "db") -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _spread(max_skew: int = 1, key: str = ZONE, app: str = "web", **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}},
            **extra,
        }
    ]


# --- SchedulingGates ----------------------------------------------------------------------------------------


def test_gated_pod_is_reported_gated_and_holds_no_capacity() -> None:
    """SchedulingGates (plugins/schedulinggates): a gated pod never enters the scheduling queue; its
    PreEnqueue status reads `waiting for scheduling gates: [a b]`. The next pod gets the capacity."""
    gated = pod("gated", {GPU_SHARED: 4}, schedulingGates=[{"name": "a"}, {"name": "b"}])
    placer = _placer([node("n1")], [gpu_slice("n1", 4, shares=1)])
    first, second = _run(placer, [gated, pod("next", {GPU_SHARED: 4})])
    assert (first.result, first.reason, first.node) == ("gated", "waiting for scheduling gates: [a b]", None)
    assert second.result == "bound" and second.node == "n1"


# --- InterPodAffinity ---------------------------------------------------------------------------------------


def test_required_anti_affinity_on_hostname_spreads_a_statefulset() -> None:
    """InterPodAffinity Filter (satisfyPodAntiAffinity): pods placed earlier in the run count; a third replica
    on two nodes is unschedulable with upstream's reason."""
    nodes = [_zoned("n1", "a"), _zoned("n2", "a")]
    pods = [_labelled(pod(f"db-{i}"), {"app": "db"}, affinity=_anti()) for i in range(3)]
    placements = _run(_placer(nodes), pods)
    assert [p.node for p in placements[:2]] == ["n1", "n2"]
    assert placements[2].result == "unschedulable"
    assert placements[2].reason == "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."


def test_anti_affinity_sees_running_pods() -> None:
    """InterPodAffinity PreFilter counts pods already on nodes
    (getTPMapMatchingIncomingAffinityAntiAffinity)."""
    running = [_labelled(pod("old"), {"app": "db"}, node_name="n1")]
    incoming = _labelled(pod("new"), {"app": "db"}, affinity=_anti(ZONE))
    (p,) = _run(
        _placer([_zoned("n1", "a"), _zoned("n2", "a"), _zoned("n3", "b")], running=running), [incoming]
    )
    assert p.node == "n3"


def test_existing_pods_anti_affinity_blocks_a_matching_pod_without_rules_of_its_own() -> None:
    """InterPodAffinity (satisfyExistingPodsAntiAffinity): an existing pod's required anti-affinity term that
    matches the incoming pod keeps it out of that topology domain."""
    running = [_labelled(pod("guard"), {"app": "guard"}, node_name="n1", affinity=_anti(ZONE, app="web"))]
    web = [_labelled(pod(f"web-{i}"), {"app": "web"}) for i in range(2)]
    placements = _run(
        _placer([_zoned("n1", "a"), _zoned("n2", "a"), _zoned("n3", "b")], running=running), web
    )
    assert [p.node for p in placements] == ["n3", "n3"]
    (only_zone_a,) = _run(_placer([_zoned("n1", "a")], running=running), web[:1])
    assert only_zone_a.reason == (
        "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."
    )


def test_a_placed_pods_anti_affinity_applies_to_later_pods() -> None:
    """The existing-anti-affinity check covers pods placed earlier in the run (upstream's snapshot holds
    assumed pods), so the per-shape cache must not hide it."""
    nodes = [_zoned("n1", "a"), _zoned("n2", "b")]
    web = [_labelled(pod(f"web-{i}"), {"app": "web"}) for i in range(3)]
    guard = _labelled(pod("guard"), {"app": "guard"}, affinity=_anti(ZONE, app="web"))
    placements = _run(_placer(nodes), [web[0], guard, web[1], web[2]])
    assert [p.node for p in placements] == ["n1", "n2", "n1", "n1"]


def test_required_affinity_follows_the_matching_pods_domain() -> None:
    """InterPodAffinity (satisfyPodAffinity): the node's topology value must hold a pod matching all terms."""
    running = [_labelled(pod("db"), {"app": "db"}, node_name="n3")]
    app = _labelled(pod("app"), {"app": "api"}, affinity=_affinity())
    nodes = [_zoned("n1", "a"), _zoned("n2", "b"), _zoned("n3", "b")]
    (p,) = _run(_placer(nodes, running=running), [app])
    assert p.node == "n2"  # zone b, ties to the smaller name


def test_affinity_with_no_matching_pod_anywhere_is_unschedulable() -> None:
    """UnschedulableAndUnresolvable `node(s) didn't match pod affinity rules` when nothing matches and the
    pod does not match its own terms."""
    app = _labelled(pod("app"), {"app": "api"}, affinity=_affinity())
    (p,) = _run(_placer([_zoned("n1", "a")]), [app])
    assert p.reason == "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."


def test_the_first_pod_of_a_self_affine_group_is_placed() -> None:
    """satisfyPodAffinity: no pod matches yet and the pod matches its own terms: allowed (where the node has
    the topology label); the second pod then follows it."""
    pods = [_labelled(pod(f"db-{i}"), {"app": "db"}, affinity=_affinity()) for i in range(2)]
    nodes = [_zoned("n0", None), _zoned("n1", "a"), _zoned("n2", "b")]
    placements = _run(_placer(nodes), pods)
    assert [p.node for p in placements] == ["n1", "n1"]


def test_affinity_terms_default_to_the_pods_namespace() -> None:
    """GetNamespacesFromPodAffinityTerm: no namespaces and no namespaceSelector = the pod's own namespace;
    `namespaceSelector: {}` = every namespace."""
    running = [_labelled(pod("db", namespace="other"), {"app": "db"}, node_name="n1")]
    nodes = [_zoned("n1", "a"), _zoned("n2", "a")]
    same_ns = _labelled(pod("x"), {}, affinity=_anti())
    (p,) = _run(_placer(nodes, running=running), [same_ns])
    assert p.node == "n1"
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOSTNAME, "namespaceSelector": {}}
    all_ns = _labelled(
        pod("y"), {}, affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    )
    (p,) = _run(_placer(nodes, running=running), [all_ns])
    assert p.node == "n2"


# --- PodTopologySpread --------------------------------------------------------------------------------------


def test_spread_do_not_schedule_alternates_zones() -> None:
    """PodTopologySpread Filter: count + self-match - global minimum must not exceed maxSkew."""
    nodes = [_zoned("a1", "a"), _zoned("a2", "a"), _zoned("b1", "b")]
    pods = [_labelled(pod(f"web-{i}"), {"app": "web"}, topologySpreadConstraints=_spread()) for i in range(4)]
    placements = _run(_placer(nodes), pods)
    zones = ["a" if p.node and p.node.startswith("a") else "b" for p in placements]
    assert zones == ["a", "b", "a", "b"]


def test_spread_unsatisfiable_reports_upstreams_reason() -> None:
    """ErrReasonConstraintsNotMatch; a node without the topology key: `(missing required label)`."""
    running = [_labelled(pod("w0"), {"app": "web"}, node_name="a1")]
    nodes = [
        _zoned("a1", "a"),
        _zoned("b1", "b", taints=[{"key": "t", "effect": "NoSchedule"}]),
        _zoned("x", None),
    ]
    incoming = _labelled(pod("w1"), {"app": "web"}, topologySpreadConstraints=_spread(max_skew=1))
    (p,) = _run(_placer(nodes, running=running), [incoming])
    # b1: the taint (TaintToleration, earlier); a1: skew 2-0 > 1; x: missing label.
    assert p.reason == (
        "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
        "1 node(s) didn't match pod topology spread constraints (missing required label), "
        "1 node(s) had untolerated taint(s)."
    )


def test_spread_node_taints_policy_honor_drops_tainted_domains() -> None:
    """matchNodeInclusionPolicies: nodeTaintsPolicy Honor leaves a node with an untolerated taint out of the
    domain count (default Ignore counts it, making the global minimum 0 above)."""
    running = [_labelled(pod("w0"), {"app": "web"}, node_name="a1")]
    nodes = [_zoned("a1", "a"), _zoned("b1", "b", taints=[{"key": "t", "effect": "NoSchedule"}])]
    incoming = _labelled(
        pod("w1"), {"app": "web"}, topologySpreadConstraints=_spread(max_skew=1, nodeTaintsPolicy="Honor")
    )
    (p,) = _run(_placer(nodes, running=running), [incoming])
    assert p.node == "a1"


def test_spread_node_affinity_policy_honor_is_the_default() -> None:
    """nodeAffinityPolicy defaults to Honor: nodes the pod's nodeSelector excludes are not domains."""
    nodes = [_zoned("a1", "a"), _zoned("b1", "b")]
    running = [_labelled(pod("w0"), {"app": "web"}, node_name="a1")]
    pinned = _labelled(
        pod("w1"), {"app": "web"}, nodeSelector={ZONE: "a"}, topologySpreadConstraints=_spread(max_skew=1)
    )
    (p,) = _run(_placer(nodes, running=running), [pinned])
    assert p.node == "a1"
    ignore = _labelled(
        pod("w1"),
        {"app": "web"},
        nodeSelector={ZONE: "a"},
        topologySpreadConstraints=_spread(max_skew=1, nodeAffinityPolicy="Ignore"),
    )
    (p,) = _run(_placer(nodes, running=running), [ignore])
    assert p.result == "unschedulable"


def test_spread_min_domains_makes_the_global_minimum_zero() -> None:
    """minMatchNum: fewer eligible domains than minDomains: the global minimum is 0, so each domain takes at
    most maxSkew matching pods."""
    nodes = [_zoned("a1", "a"), _zoned("b1", "b")]
    pods = [
        _labelled(pod(f"w{i}"), {"app": "web"}, topologySpreadConstraints=_spread(max_skew=1, minDomains=3))
        for i in range(3)
    ]
    placements = _run(_placer(nodes), pods)
    assert [p.result for p in placements] == ["bound", "bound", "unschedulable"]


def test_spread_match_label_keys_narrow_the_selector_to_the_pods_revision() -> None:
    """filterTopologySpreadConstraints: matchLabelKeys add the incoming pod's values to the selector, so an
    older revision's pods do not count."""
    running = [_labelled(pod("old"), {"app": "web", "rev": "1"}, node_name="a1")]
    nodes = [_zoned("a1", "a"), _zoned("b1", "b")]
    spread = _spread(max_skew=1, matchLabelKeys=["rev"])
    new = [
        _labelled(pod(f"n{i}"), {"app": "web", "rev": "2"}, topologySpreadConstraints=spread)
        for i in range(2)
    ]
    placements = _run(_placer(nodes, running=running), new)
    assert [p.node for p in placements] == ["a1", "b1"]


def test_schedule_anyway_constraints_do_not_filter() -> None:
    """ScheduleAnyway constraints only score (documented: placement does not model scoring by them)."""
    spread = [{**_spread()[0], "whenUnsatisfiable": "ScheduleAnyway"}]
    pods = [_labelled(pod(f"w{i}"), {"app": "web"}, topologySpreadConstraints=spread) for i in range(2)]
    placements = _run(_placer([_zoned("a1", "a")]), pods)
    assert [p.node for p in placements] == ["a1", "a1"]


# --- NodePorts ----------------------------------------------------------------------------------------------


def _port_pod(name: str, port: int, ip: str | None = None, **spec: Any) -> Pod:
    entry: dict[str, Any] = {"containerPort": 80, "hostPort": port}
    if ip:
        entry["hostIP"] = ip
    return pod(name, containers=[{"name": "c", "ports": [entry]}], **spec)


def test_host_ports_conflict_with_pods_on_the_node() -> None:
    """NodePorts (plugins/nodeports): a host port a running pod or an earlier pod of the run uses is not free;
    0.0.0.0 conflicts with every IP (HostPortInfo.CheckConflict)."""
    running = [_port_pod("old", 8080, node_name="n1")]
    placements = _run(
        _placer([node("n1"), node("n2")], running=running),
        [_port_pod("a", 8080), _port_pod("b", 8080, ip="10.0.0.1"), _port_pod("c", 9090)],
    )
    assert [p.node for p in placements] == ["n2", None, "n1"]
    assert placements[1].reason == (
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
    )


def test_host_network_container_ports_are_host_ports() -> None:
    """With hostNetwork the API server defaults hostPort to containerPort."""

    def net(name: str) -> Pod:
        return pod(name, containers=[{"name": "c", "ports": [{"containerPort": 4791}]}], hostNetwork=True)

    placements = _run(_placer([node("n1")]), [net("a"), net("b")])
    assert [p.result for p in placements] == ["bound", "unschedulable"]


# --- pod-level resources ------------------------------------------------------------------------------------


def test_pod_level_requests_are_what_the_node_must_fit() -> None:
    """PodRequests (component-helpers/resource/helpers.go): pod-level cpu/memory requests replace the
    containers' sum (NodeResourcesFit then compares them)."""
    big = pod("big", {"cpu": "1"}, resources={"requests": {"cpu": "4"}})
    (p,) = _run(_placer([node("n1", {"cpu": "2"})]), [big])
    assert p.reason == "0/1 nodes are available: 1 Insufficient cpu."


def test_pod_level_resources_are_part_of_the_pod_shape() -> None:
    """Two pods alike but for pod-level resources must not share a cached evaluation."""
    small = pod("small", {"cpu": "1"})
    big = pod("big", {"cpu": "1"}, resources={"requests": {"cpu": "4"}})
    small_p, big_p = _run(_placer([node("n1", {"cpu": "3"})]), [small, big])
    assert small_p.result == "bound" and big_p.result == "unschedulable"


# --- equivalence with the naive loop ------------------------------------------------------------------------


@st.composite
def _topology_pods(draw: st.DrawFn) -> tuple[list[Node], list[Pod], list[Pod]]:
    nodes = [_zoned(f"n{i}", draw(st.sampled_from(["a", "b", None]))) for i in range(draw(st.integers(1, 4)))]
    running = []
    if draw(st.booleans()):
        running.append(_labelled(pod("r0"), {"app": "db"}, node_name="n0", affinity=_anti(ZONE, app="web")))
    pods = []
    for j in range(draw(st.integers(1, 10))):
        app = draw(st.sampled_from(["web", "db"]))
        spec: dict[str, Any] = {}
        kind = draw(st.sampled_from(["plain", "anti", "affinity", "spread", "gated", "port"]))
        if kind == "anti":
            spec["affinity"] = _anti(draw(st.sampled_from([HOSTNAME, ZONE])), app=app)
        elif kind == "affinity":
            spec["affinity"] = _affinity(app=draw(st.sampled_from(["web", "db"])))
        elif kind == "spread":
            spec["topologySpreadConstraints"] = _spread(draw(st.integers(1, 2)), app=app)
        elif kind == "gated":
            spec["schedulingGates"] = [{"name": "g"}]
        requests = {GPU_SHARED: 1} if draw(st.booleans()) else {"cpu": "1"}
        if kind == "port":
            ports = [{"containerPort": 80, "hostPort": draw(st.sampled_from([80, 81]))}]
            containers = [{"name": "c", "resources": {"requests": requests}, "ports": ports}]
            pods.append(_labelled(pod(f"p{j}", containers=containers), {"app": app}))
            continue
        pods.append(_labelled(pod(f"p{j}", requests), {"app": app}, **spec))
    return nodes, running, pods


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_topology_pods())
def test_indexed_placement_equals_the_naive_loop_with_inter_pod_rules(
    case: tuple[list[Node], list[Pod], list[Pod]],
) -> None:
    nodes, running, pods = case
    slices = [gpu_slice(n.name, 1, 2) for n in nodes]
    fast = _run(_placer(nodes, slices, running), pods)
    naive = _run(_placer(nodes, slices, running, naive=True), pods)
    assert [(p.pod.name, p.result, p.reason, p.node) for p in fast] == [
        (p.pod.name, p.result, p.reason, p.node) for p in naive
    ]
