"""The volume plugins (allocator/scheduling/volumes.py) on the cases of upstream's tables:
pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go, volumezone/volume_zone_test.go,
nodevolumelimits/csi_test.go and volumerestrictions/volume_restrictions_test.go (v1.37.2)."""

from __future__ import annotations

from typing import Any

import pytest

from allocator.scheduling import volumes as v
from allocator.scheduling.volumes import PreFilterFailure, Storage, VolumeCheck, prefilter
from localcluster.objects import (
    ephemeral_volume,
    make_csinode,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    pvc_volume,
)
from resourceapi.api.core_v1 import Node, Pod

WAIT = "wait-sc"
IMMEDIATE = "immediate-sc"
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
CLASSES = [make_storage_class(WAIT), make_storage_class(IMMEDIATE, mode="Immediate")]


def _pod(*claims: str, name: str = "pod-a", uid: str = "uid-pod-a", volumes: list[Any] | None = None) -> Pod:
    vols = [pvc_volume(f"v{i}", c) for i, c in enumerate(claims)] + list(volumes or [])
    return Pod.model_validate(make_pod(name).uid(uid).container().spec(volumes=vols).obj())


def _node(name: str, **labels: str) -> Node:
    return Node.model_validate(make_node(name).labels(labels).obj())


def _check(pod: Pod, *objects: dict[str, Any], pods_on: dict[str, list[Pod]] | None = None) -> VolumeCheck:
    out = prefilter(pod, Storage.of([*CLASSES, *objects]), pods_on or {})
    assert isinstance(out, VolumeCheck), out
    return out


def _failure(pod: Pod, *objects: dict[str, Any], pods_on: dict[str, list[Pod]] | None = None) -> str:
    out = prefilter(pod, Storage.of([*CLASSES, *objects]), pods_on or {})
    assert isinstance(out, PreFilterFailure), out
    return out.message


# --- VolumeBinding PreFilter -------------------------------------------------------------------------------


def test_pod_has_not_pvcs_skips_every_volume_plugin() -> None:
    assert prefilter(_pod(), Storage(), {}) is None


def test_all_bound_passes_and_binds_nothing() -> None:
    check = _check(
        _pod("pvc-a"), make_pvc("pvc-a").storage_class(WAIT).bound("pv-a").obj(), make_pv("pv-a").obj()
    )
    outcome = check.filter(_node("node-a"))
    assert outcome.reasons == () and check.choice("node-a") is None


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([], 'persistentvolumeclaim "pvc-a" not found'),  # PVC does not exist
        (
            [make_pvc("pvc-a").storage_class(IMMEDIATE).obj()],
            "pod has unbound immediate PersistentVolumeClaims",  # immediate claims not bound
        ),
        (
            [make_pvc("pvc-a").storage_class(WAIT).bound("pv-a").obj() | {"status": {"phase": "Lost"}}],
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',  # claim lost
        ),
        (
            [make_pvc("pvc-a").storage_class(WAIT).volume_name("pv-a").obj(), make_pv("pv-a").obj()],
            "pod has unbound immediate PersistentVolumeClaims",  # pre-bound, not yet bound: immediate
        ),
        (
            [make_pvc("pvc-a").obj()],  # no class: Immediate
            "pod has unbound immediate PersistentVolumeClaims",
        ),
    ],
)
def test_prefilter_rejects_the_pod_with_upstreams_message(
    objects: list[dict[str, Any]], message: str
) -> None:
    assert _failure(_pod("pvc-a"), *objects) == message


def test_a_claim_being_deleted_is_rejected() -> None:
    pvc = make_pvc("pvc-a").storage_class(WAIT).obj()
    pvc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert _failure(_pod("pvc-a"), pvc) == 'persistentvolumeclaim "pvc-a" is being deleted'


def test_generic_ephemeral_volume_waits_for_its_claim_then_must_own_it() -> None:
    pod = _pod(volumes=[ephemeral_volume("scratch", WAIT)])
    assert _failure(pod) == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-scratch"'
    )
    foreign = make_pvc("pod-a-scratch").storage_class(WAIT).obj()
    assert _failure(pod, foreign) == (
        "PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)"
    )
    owned = make_pvc("pod-a-scratch").storage_class(WAIT).owner("Pod", "pod-a", "uid-pod-a").obj()
    pv = make_pv("pv-1").storage_class(WAIT).obj()
    check = _check(pod, owned, pv)
    assert check.filter(_node("node-a")).reasons == ()
    choice = check.choice("node-a")
    assert choice is not None and [b.pv_name for b in choice.bindings] == ["pv-1"]


# --- VolumeBinding Filter (FindPodVolumes) -----------------------------------------------------------------


def test_unbound_claims_no_matches() -> None:
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class(WAIT).obj())
    assert check.filter(_node("node-a")).reasons == (v.REASON_BIND_CONFLICT,)


def test_bound_and_unbound_unsatisfied_reports_both_reasons() -> None:
    check = _check(
        _pod("pvc-a", "pvc-b"),
        make_pvc("pvc-a").storage_class(WAIT).bound("pv-a").obj(),
        make_pvc("pvc-b").storage_class(WAIT).obj(),
        make_pv("pv-a").storage_class(WAIT).node_affinity("foo", "bar").obj(),
    )
    assert check.filter(_node("node-a", foo="barbar")).reasons == (
        v.REASON_NODE_CONFLICT,
        v.REASON_BIND_CONFLICT,
    )


def test_pv_not_found_is_rejected_by_volume_zones_prefilter() -> None:
    """VolumeBinding alone would filter every node (REASON_PV_NOT_EXIST, upstream's "pv not found"); in the
    default profile VolumeZone's PreFilter, which runs after it, rejects the pod first."""
    pod = _pod("pvc-a")
    assert _failure(pod, make_pvc("pvc-a").storage_class(WAIT).bound("pv-a").obj()) == (
        'persistentvolume "pv-a" not found'
    )


def test_a_bound_claim_of_an_ephemeral_volume_whose_pv_is_gone_has_no_pv() -> None:
    """Ephemeral volumes skip VolumeZone, so VolumeBinding's Filter reason shows."""
    pod = _pod(volumes=[ephemeral_volume("scratch", WAIT)])
    pvc = make_pvc("pod-a-scratch").storage_class(WAIT).owner("Pod", "pod-a", "uid-pod-a").bound("gone").obj()
    assert _check(pod, pvc).filter(_node("n")).reasons == (v.REASON_PV_NOT_EXIST,)


def test_local_volumes_with_close_capacity_are_preferred() -> None:
    """Upstream's case: scores 75, 50 and a node without PVs filtered out (StorageCapacityScoring, 1.37's
    default shape)."""
    pvs = [
        make_pv(f"pv-{n}-{i}").storage_class(WAIT).size(size).local_to(f"node-{n}").obj()
        for n, size in (("a", "200Gi"), ("b", "100Gi"))
        for i in range(2)
    ]
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class(WAIT).size("50Gi").obj(), *pvs)
    outcomes = [check.filter(_node(n)) for n in ("node-a", "node-b", "node-c")]
    assert [o.reasons for o in outcomes] == [(), (), (v.REASON_BIND_CONFLICT,)]
    assert [check.score(n) for n in ("node-a", "node-b", "node-c")] == [75, 50, 0]


def test_the_smallest_fitting_pv_is_chosen_and_a_taken_one_is_skipped() -> None:
    pvs = [
        make_pv("big").storage_class(WAIT).size("10Gi").obj(),
        make_pv("small").storage_class(WAIT).size("2Gi").obj(),
        make_pv("tiny").storage_class(WAIT).size("512Mi").obj(),
        make_pv("taken").storage_class(WAIT).size("2Gi").claim_ref("default", "other").obj(),
    ]
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class(WAIT).size("1Gi").obj(), *pvs)
    check.filter(_node("n"))
    choice = check.choice("n")
    assert choice is not None and [b.pv_name for b in choice.bindings] == ["small"]
    [binding] = choice.assumed().bindings
    assert binding.pv["spec"]["claimRef"]["name"] == "pvc-a"
    assert binding.pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"


def test_two_claims_of_one_pod_never_take_the_same_pv() -> None:
    check = _check(
        _pod("pvc-a", "pvc-b"),
        make_pvc("pvc-a").storage_class(WAIT).obj(),
        make_pvc("pvc-b").storage_class(WAIT).obj(),
        make_pv("only").storage_class(WAIT).obj(),
    )
    assert check.filter(_node("n")).reasons == (v.REASON_BIND_CONFLICT,)


@pytest.mark.parametrize(
    ("pv", "fits"),
    [
        (make_pv("p").storage_class(WAIT).access_modes("ReadOnlyMany").obj(), False),
        (make_pv("p").storage_class("other").obj(), False),
        (make_pv("p").storage_class(WAIT).phase("Released").obj(), False),
        (make_pv("p").storage_class(WAIT).size("512Mi").obj(), False),
        (make_pv("p").storage_class(WAIT).claim_ref("default", "pvc-a").phase("Released").obj(), True),
        (
            make_pv("p").storage_class(WAIT).obj() | {"metadata": {"name": "p", "deletionTimestamp": "x"}},
            False,
        ),
    ],
)
def test_find_matching_volume_rules(pv: dict[str, Any], fits: bool) -> None:
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class(WAIT).obj(), pv)
    assert (check.filter(_node("n")).reasons == ()) is fits


@pytest.mark.parametrize(
    ("selector", "labels", "fits"),
    [
        ({"model": "llama3-pv"}, {"model": "llama3-pv"}, True),
        ({"model": "llama3-pv"}, {"model": "other"}, False),
        ({"model": "llama3-pv"}, None, False),
        # no selector: any PV of the class, labelled or not (selector nil in FindMatchingVolume)
        (None, {"model": "llama3-pv"}, True),
    ],
)
def test_a_claims_selector_limits_its_pvs_and_no_selector_takes_any(
    selector: dict[str, str] | None, labels: dict[str, str] | None, fits: bool
) -> None:
    pvc = make_pvc("pvc-a").storage_class(WAIT)
    pv = make_pv("p").storage_class(WAIT)
    check = _check(
        _pod("pvc-a"),
        (pvc.selector(selector) if selector else pvc).obj(),
        (pv.labels(labels) if labels else pv).obj(),
    )
    assert (check.filter(_node("n")).reasons == ()) is fits


def test_a_claim_with_a_selected_node_fits_that_node_only() -> None:
    pvc = make_pvc("pvc-a").storage_class("fast").annotation(v.h.ANN_SELECTED_NODE, "node-b").obj()
    check = _check(_pod("pvc-a"), pvc, make_storage_class("fast", provisioner="csi.example.com"))
    assert check.filter(_node("node-a")).reasons == (v.REASON_BIND_CONFLICT,)
    assert check.filter(_node("node-b")).reasons == ()


def test_dynamic_provisioning_respects_allowed_topologies_and_sets_selected_node() -> None:
    topo = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}]
    sc = make_storage_class("fast", provisioner="csi.example.com", allowed_topologies=topo)
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class("fast").obj(), sc)
    assert check.filter(_node("node-b", **{ZONE: "b"})).reasons == (v.REASON_BIND_CONFLICT,)
    assert check.filter(_node("node-a", **{ZONE: "a"})).reasons == ()
    choice = check.choice("node-a")
    assert choice is not None
    [provision] = choice.assumed().provisions
    assert provision.pvc["metadata"]["annotations"][v.h.ANN_SELECTED_NODE] == "node-a"


def test_no_provisioner_and_no_pv_is_a_bind_conflict() -> None:
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class(WAIT).obj())
    assert check.filter(_node("n")).reasons == (v.REASON_BIND_CONFLICT,)


def test_storage_capacity_not_enough_space() -> None:
    sc = make_storage_class("fast", provisioner="csi.example.com")
    driver = {"kind": "CSIDriver", "metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}}
    cap = {
        "kind": "CSIStorageCapacity",
        "metadata": {"name": "c1", "namespace": "kube-system"},
        "storageClassName": "fast",
        "capacity": "10Gi",
        "nodeTopology": {"matchLabels": {HOST: "node-a"}},
    }
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class("fast").size("20Gi").obj(), sc, driver, cap)
    assert check.filter(_node("node-a")).reasons == (v.REASON_NOT_ENOUGH_SPACE,)
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class("fast").size("5Gi").obj(), sc, driver, cap)
    assert check.filter(_node("node-a")).reasons == ()
    assert check.filter(_node("node-b")).reasons == (v.REASON_NOT_ENOUGH_SPACE,)
    assert check.score("node-a") == 50  # 5Gi of 10Gi


def test_a_claim_without_a_class_to_provision_is_an_error() -> None:
    sc = make_storage_class("gone", provisioner="csi.example.com")
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").storage_class("gone").obj(), sc)
    del check.storage.classes["gone"]  # the class went away after PreFilter
    assert (
        check.filter(_node("n")).error
        == 'running "VolumeBinding" filter plugin: failed to find storage class "gone"'
    )


# --- VolumeZone ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_labels", "fits"),
    [
        ({ZONE: "us-west1-a"}, True),
        ({ZONE: "us-west1-b"}, True),
        ({ZONE: "us-west1-c"}, False),
        ({"failure-domain.beta.kubernetes.io/zone": "us-west1-a"}, False),  # GA PV label: no translation back
        ({}, True),  # no topology label on the node: a single-zone cluster
        ({"topology.kubernetes.io/region": "us-west1"}, False),  # a zone label it lacks
    ],
)
def test_volume_zone(node_labels: dict[str, str], fits: bool) -> None:
    pv = make_pv("pv-a").labels({ZONE: "us-west1-a__us-west1-b"}).obj()
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").bound("pv-a").obj(), pv)
    reasons = check.filter(_node("n", **node_labels)).reasons
    assert reasons == (() if fits else (v.REASON_ZONE_CONFLICT,))


def test_volume_zone_translates_a_beta_pv_label_to_the_nodes_ga_label() -> None:
    pv = make_pv("pv-a").labels({"failure-domain.beta.kubernetes.io/zone": "us-west1-a"}).obj()
    check = _check(_pod("pvc-a"), make_pvc("pvc-a").bound("pv-a").obj(), pv)
    assert check.filter(_node("n", **{ZONE: "us-west1-a"})).reasons == ()
    assert check.filter(_node("m", **{ZONE: "us-west1-b"})).reasons == (v.REASON_ZONE_CONFLICT,)


def test_volume_zone_skips_a_waiting_claim() -> None:
    check = _check(
        _pod("pvc-a"), make_pvc("pvc-a").storage_class(WAIT).obj(), make_pv("p").storage_class(WAIT).obj()
    )
    assert check.zones == [] and check.filter(_node("n", **{ZONE: "a"})).reasons == ()


# --- NodeVolumeLimits (CSI) ---------------------------------------------------------------------------------


def _csi_claim(name: str, pv: str) -> list[dict[str, Any]]:
    return [make_pvc(name).bound(pv).obj(), make_pv(pv).csi("ebs.csi.aws.com", f"h-{pv}").obj()]


def test_csi_attach_limit_counts_unique_volumes_of_the_nodes_pods() -> None:
    objs = [*_csi_claim("c1", "p1"), *_csi_claim("c2", "p2"), *_csi_claim("c3", "p3")]
    csinode = make_csinode("n", {"ebs.csi.aws.com": 2})
    running = [_pod("c1", name="r1", uid="r1"), _pod("c2", name="r2", uid="r2")]
    check = _check(_pod("c3"), *objs, csinode, pods_on={"n": running})
    assert check.filter(_node("n")).reasons == (v.REASON_MAX_VOLUME_COUNT,)
    shared = _check(_pod("c1"), *objs, csinode, pods_on={"n": running})  # already attached there
    assert shared.filter(_node("n")).reasons == ()
    other = _check(_pod("c3"), *objs, make_csinode("n", {"ebs.csi.aws.com": 3}), pods_on={"n": running})
    assert other.filter(_node("n")).reasons == ()


def test_csi_limit_counts_a_claim_to_provision_under_its_provisioner() -> None:
    sc = make_storage_class("ebs", provisioner="ebs.csi.aws.com")
    check = _check(
        _pod("new"), make_pvc("new").storage_class("ebs").obj(), sc, make_csinode("n", {"ebs.csi.aws.com": 0})
    )
    assert check.filter(_node("n")).reasons == (v.REASON_MAX_VOLUME_COUNT,)


def test_a_driver_that_must_be_installed_keeps_the_pod_off_nodes_without_it() -> None:
    """VolumeLimitScaling (beta, on in 1.37): a CSIDriver with preventPodSchedulingIfMissing."""
    driver = {"kind": "CSIDriver", "metadata": {"name": "ebs.csi.aws.com"}}
    driver["spec"] = {"preventPodSchedulingIfMissing": True}
    objs = [*_csi_claim("c1", "p1"), driver]
    check = _check(_pod("c1"), *objs, make_csinode("with", {"ebs.csi.aws.com": None}))
    assert check.filter(_node("with")).reasons == ()
    assert check.filter(_node("without")).reasons == (
        "ebs.csi.aws.com CSI driver is not installed on the node",
    )


# --- VolumeRestrictions (ReadWriteOncePod) ------------------------------------------------------------------


def test_read_write_once_pod_claim_in_use_rejects_every_node() -> None:
    pvc = make_pvc("rwop").access_modes("ReadWriteOncePod").bound("pv").obj()
    pv = make_pv("pv").access_modes("ReadWriteOncePod").obj()
    user = _pod("rwop", name="user", uid="user")
    check = _check(_pod("rwop"), pvc, pv, pods_on={"n1": [user]})
    assert check.filter(_node("n2")).reasons == (v.REASON_RWOP_CONFLICT,)
    free = _check(_pod("rwop"), pvc, pv, pods_on={"n1": []})
    assert free.filter(_node("n2")).reasons == ()
