"""`migrate plan`'s planner (allocator/migrate): the classes, the workloads and the steps of a move from
device-plugin time-slicing to DRA shares, from the objects of a device-plugin cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.migrate_cluster import (
    CLASS,
    NAMESPACE,
    RESOURCE,
    cluster,
    dp_node,
    gpu_pod,
    owner,
    pdb,
    plugin_configmap,
    replicaset,
)

from allocator.capacity.view import CapacityView
from allocator.migrate import MigrationInput, Options, PlanError, PluginConfigError, plan_migration
from allocator.migrate.plugin_config import read_plugin_config
from allocator.migrate.render import to_json
from allocator.simulate import load_inputs
from resourceapi.capacity_requests import ANNOTATION
from resourceapi.gates import FeatureGates
from resourceapi.manifests.documents import Document

GATES = FeatureGates.defaults()
CORE = ("DeviceClass", "ResourceSlice", "ResourceClaim", "Node", "Pod", "Namespace")


def plan(
    objs: list[dict[str, Any]], options: Options | None = None, config: dict[str, Any] | None = None
) -> Any:
    docs = [Document("test.yaml", i + 1, o) for i, o in enumerate(objs) if o["kind"] in CORE]
    owners = [
        o for o in objs if o["kind"] not in CORE and o["kind"] not in ("ResourceQuota", "PodDisruptionBudget")
    ]
    data = MigrationInput(
        load_inputs(docs),
        owners=owners,
        quotas=[o for o in objs if o["kind"] == "ResourceQuota"],
        budgets=[o for o in objs if o["kind"] == "PodDisruptionBudget"],
        plugin=read_plugin_config(config) if config is not None else None,
    )
    return plan_migration(data, GATES, options or Options())


# --- the classes --------------------------------------------------------------------------------------------


def test_one_class_per_shared_name_with_the_capacity_request_in_the_annotation_carrier() -> None:
    result = plan(cluster())
    (c,) = result.classes
    assert (c.name, c.resource, c.replicas, c.exists) == (CLASS, RESOURCE, (4,), False)
    assert json.loads(c.manifest["metadata"]["annotations"][ANNOTATION]) == {"requests": {"shares": "1"}}
    assert c.manifest["spec"]["extendedResourceName"] == RESOURCE
    assert any("consumable shares" in s and "shares: 4" in s for s in c.driver_settings)


def test_the_plugins_default_shares_under_the_gpu_name_itself_and_the_plan_says_so() -> None:
    node = dp_node("n1")
    node["status"]["allocatable"] = {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}
    result = plan([node], config=plugin_configmap(rename=False))
    (c,) = result.classes
    assert c.resource == "nvidia.com/gpu"
    assert any("renameByDefault: false" in w and "whole-GPU pods" in w for w in c.warnings)


def test_a_class_already_claiming_the_name_is_reported() -> None:
    chart_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"extendedResourceName": RESOURCE},
    }
    result = plan([*cluster(), chart_class])
    assert any("'gpu.nvidia.com' already claims nvidia.com/gpu.shared" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("flags:\n  migStrategy: mixed\n", "migStrategy mixed"),
        ("", None),
    ],
)
def test_mig_is_a_warning(extra: str, expected: str | None) -> None:
    config = plugin_configmap(extra=extra)
    warnings = read_plugin_config(config).warnings
    assert any(expected in w for w in warnings) if expected else warnings == ()


def test_what_the_plugin_config_cannot_carry_over_is_a_warning() -> None:
    text = (
        "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n"
        "    - {name: nvidia.com/gpu, replicas: 4, devices: [0]}\n"
        "    - {name: nvidia.com/gpu, replicas: 2, devices: [1]}\n"
        "  mps:\n    resources:\n    - {name: nvidia.com/gpu, rename: nvidia.com/gpu.mps, replicas: 2}\n"
    )
    config = read_plugin_config({"metadata": {"name": "c", "namespace": "ns"}, "data": {"cfg": text}})
    joined = "\n".join(config.warnings)
    assert "failRequestsGreaterThanOne" in joined
    assert "MPS sharing" in joined
    assert "replicas per GPU differ within a node (2, 4)" in joined
    assert {r.name for r in config.configs["cfg"].resources} == {"nvidia.com/gpu", "nvidia.com/gpu.mps"}


def test_rename_by_default_appends_shared() -> None:
    config = read_plugin_config(plugin_configmap(rename=True))
    assert [r.name for r in config.configs["any"].resources] == [RESOURCE]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 0}\n",
         "sharing.timeSlicing.resources[0].replicas: Invalid value: 0: must be a positive integer"),
        ("sharing:\n  timeSlicing:\n    resources:\n    - {replicas: 2}\n",
         "data[cfg]: sharing.timeSlicing.resources[0].name: Required value"),
        ("sharing: [\n", "data[cfg]: not YAML"),
    ],
)  # fmt: skip
def test_a_bad_plugin_config_names_the_key_and_the_field(text: str, message: str) -> None:
    with pytest.raises(PluginConfigError, match=r"^ConfigMap \"ns/c\": ") as caught:
        read_plugin_config({"metadata": {"name": "c", "namespace": "ns"}, "data": {"cfg": text}})
    assert message in str(caught.value)


# --- the workloads ------------------------------------------------------------------------------------------


def test_workloads_are_grouped_by_top_owner_with_what_changes() -> None:
    objs = [
        *cluster(),
        gpu_pod("big-0", "gpu-node-1", 2, owned_by=("ReplicaSet", "llm-5f6"), labels={"app": "llm"}),
        replicaset("llm-5f6", "llm"),
        gpu_pod("volcano-0", "gpu-node-2", owned_by=("Job", "train-1"), scheduler="volcano"),
        {"apiVersion": "batch/v1", "kind": "Job",
         "metadata": {"name": "train-1", "namespace": NAMESPACE,
                      "ownerReferences": [owner("CronJob", "train")]}},
        gpu_pod("lonely", "gpu-node-2", owned_by=None),
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": NAMESPACE},
         "spec": {"hard": {f"requests.{RESOURCE}": "16"}}},
    ]  # fmt: skip
    objs[-2]["spec"]["tolerations"] = [{"key": RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    by_name = {(w.kind, w.name): w for w in plan(objs).workloads}
    assert set(by_name) == {
        ("Deployment", "web"),
        ("Deployment", "llm"),
        ("CronJob", "train"),
        ("Pod", "lonely"),
    }
    assert len(by_name[("Deployment", "web")].pods) == 6
    assert any("2 shares on 2 different GPUs" in c for c in by_name[("Deployment", "llm")].changes)
    assert any("scheduled by volcano" in c and "KEP-5004" in c for c in by_name[("CronJob", "train")].changes)
    lonely = by_name[("Pod", "lonely")].changes
    assert any("bare pod" in c for c in lonely) and any("tolerates the taint key" in c for c in lonely)
    assert any('ResourceQuota "inference/gpus"' in c for c in by_name[("Deployment", "web")].changes)


# --- the steps ----------------------------------------------------------------------------------------------


def test_step_zero_installs_creates_the_classes_and_opts_the_namespaces_in() -> None:
    zero = plan(cluster()).steps[0]
    assert zero.nodes == () and zero.fits
    assert any(
        f"kubectl label namespace {NAMESPACE} dra-capacity.io/pod-routing=enabled" == a for a in zero.actions
    )
    assert any(CLASS in a for a in zero.actions) and any("delete deviceclass" in r for r in zero.rollback)


def test_each_step_is_a_batch_cordoned_drained_switched_and_uncordoned_with_its_rollback() -> None:
    steps = plan(cluster()).steps[1:]
    assert [s.nodes for s in steps] == [("gpu-node-1",), ("gpu-node-2",), ("gpu-node-3",)]
    first = steps[0]
    assert first.actions[0] == "kubectl cordon gpu-node-1"
    assert first.actions[1].startswith("kubectl drain gpu-node-1 --ignore-daemonsets")
    assert first.actions[-1] == "kubectl uncordon gpu-node-1"
    assert (
        first.rollback[0] == "kubectl cordon gpu-node-1" and "restore the device plugin" in first.rollback[2]
    )


def test_evicted_pods_go_to_the_device_plugin_first_and_to_shares_on_switched_nodes() -> None:
    steps = plan(cluster()).steps
    first = steps[1]
    assert {(m.via, m.node) for m in first.moves} == {("device plugin", "gpu-node-2")}  # binpack: the fuller
    last = steps[-1]
    assert all(m.via == "shares" and m.result == "bound" for m in last.moves)
    assert all(s.fits for s in steps)


def test_the_headroom_after_each_step_is_tops_on_the_same_state() -> None:
    result = plan(cluster())
    after = result.steps[-1].headroom[0]
    # 3 nodes x 2 GPUs x 4 shares, 6 one-share pods: top's figures on the switched cluster
    assert (after.total, after.used, after.free, after.headroom) == (24, 6, 18, 18)
    view = CapacityView(GATES)
    # top on the cluster before the move counts the same free units through the device plugin
    docs = [Document("t", i + 1, o) for i, o in enumerate(cluster())]
    inputs = load_inputs(docs)
    view.load(nodes=inputs.nodes, pods=inputs.pods)
    assert result.steps[0].headroom[0].headroom == 18


def test_max_unavailable_makes_batches_and_a_pool_label_one_step_per_pool() -> None:
    objs = cluster(nodes=5, pods_per_node=1)
    assert [len(s.nodes) for s in plan(objs, Options(max_unavailable=2)).steps[1:]] == [2, 2, 1]
    for i, obj in enumerate(o for o in objs if o["kind"] == "Node"):
        obj["metadata"]["labels"]["pool"] = "a" if i < 3 else "b"
    steps = plan(objs, Options(pool_label="pool")).steps[1:]
    assert [(s.pool, len(s.nodes)) for s in steps] == [("a", 3), ("b", 2)]
    with pytest.raises(PlanError, match="--node-pool-label nope: no GPU node has this label"):
        plan(objs, Options(pool_label="nope"))


def test_the_drain_names_bare_pods_daemonset_pods_and_the_budgets_it_waits_for() -> None:
    objs = [
        *cluster(),
        gpu_pod("lonely", "gpu-node-1", owned_by=None, labels={"app": "solo"}),
        gpu_pod("exporter-x", "gpu-node-1", owned_by=("DaemonSet", "dcgm-exporter"), labels={"app": "dcgm"}),
        pdb("web", "web", max_unavailable=1),
    ]
    first = plan(objs).steps[1]
    assert first.bare == (f"{NAMESPACE}/lonely",) and "--force" in first.actions[1]
    assert first.daemonsets == (f"{NAMESPACE}/exporter-x",)
    assert "exporter-x" not in {m.name for m in first.moves}
    ((budget),) = first.budgets
    assert (budget.budget, budget.evicted, budget.allowed, budget.blocks) == (f"{NAMESPACE}/web", 3, 1, True)


def test_a_bare_pod_the_drain_deletes_is_not_placed_nor_counted_in_the_headroom() -> None:
    # found on the real control plane (tests/e2e/test_migrate_plan_realcluster.py): nothing recreates it
    objs = [*cluster(), gpu_pod("lonely", "gpu-node-1", owned_by=None, labels={"app": "solo"})]
    first = plan(objs).steps[1]
    lonely = next(m for m in first.moves if m.name == "lonely")
    assert (lonely.result, lonely.node, lonely.via, lonely.phase) == ("deleted", None, None, "drain")
    assert "nothing recreates it" in lonely.reason and first.fits
    assert first.headroom[0].headroom == plan(cluster()).steps[1].headroom[0].headroom == 18
    doc = to_json(plan(objs))["steps"][1]
    assert doc["drain"]["evicted"] == 4 and doc["drain"]["barePods"] == [f"{NAMESPACE}/lonely"]


def test_a_drain_that_a_budget_wedges_is_a_step_that_does_not_fit() -> None:
    # found on the real control plane: the budget's pods are evicted last and their replacements find no
    # room outside the batch, so the drain waits for the batch, which waits for the drain
    chat = ("ReplicaSet", "chat-5c4")
    objs = [
        dp_node("gpu-node-1"),
        dp_node("gpu-node-2"),
        replicaset("web-7d9c8b6f4", "web"),
        replicaset("chat-5c4", "chat"),
        *(gpu_pod(f"web-{i}", "gpu-node-1") for i in range(4)),
        *(gpu_pod(f"chat-{i}", "gpu-node-1", owned_by=chat, labels={"app": "chat"}) for i in range(4)),
        *(gpu_pod(f"chat-b{i}", "gpu-node-2", owned_by=chat, labels={"app": "chat"}) for i in range(6)),
        pdb("web", "web", max_unavailable=1),
    ]
    result = plan(objs)
    first = result.steps[1]
    ((budget),) = first.budgets
    assert (budget.evicted, budget.allowed, budget.stalls) == (4, 1, 3)
    assert not first.fits and result.first_failing == 1
    assert any("it cannot evict 3 of them and does not end" in a for a in first.actions)
    # the room outside the batch went to the pods the budget does not hold back
    drained = {m.name: m for m in first.moves if m.phase == "drain" and m.result == "bound"}
    assert sorted(drained) == ["chat-0", "chat-1"]
    assert to_json(result)["steps"][1]["drain"]["disruptionBudgets"][0]["stalls"] == 3
    # with room for the budget's pods outside the batch the drain only waits
    roomy = [*objs, dp_node("gpu-node-3")]
    (budget,) = plan(roomy).steps[1].budgets
    assert (budget.stalls, budget.blocks, plan(roomy).steps[1].fits) == (0, True, True)


def test_the_first_step_that_cannot_keep_every_pod_says_which_and_why() -> None:
    # one GPU per node: a pod asking for 2 units needs 2 GPUs through DRA, which no switched node has
    objs = [dp_node("n1", gpus=1), dp_node("n2", gpus=1), replicaset("web-7d9c8b6f4", "web")]
    objs += [gpu_pod("pair", "n1", 2), gpu_pod("one", "n2", 1)]
    for o in objs[:2]:
        o["status"]["allocatable"][RESOURCE] = o["status"]["capacity"][RESOURCE] = "4"
    result = plan(objs)
    assert result.first_failing is not None and not result.fits
    failing = result.steps[result.first_failing]
    (move,) = [m for m in failing.moves if m.result != "bound"]
    assert move.name == "pair" and move.reason.startswith("0/2 nodes are available")
    assert move.explain and any("cannot allocate all claims" in line or "GPU" in line or "device" in line
                                for line in move.explain)  # fmt: skip
    assert to_json(result)["firstFailingStep"] == result.first_failing


def test_no_gpu_node_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="nothing to migrate"):
        plan(
            [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu"}, "status": {"allocatable": {}}}]
        )


def test_the_document_has_the_three_parts_and_every_step_node_and_fits() -> None:
    doc = to_json(plan(cluster()))
    assert list(doc)[:3] == ["classes", "workloads", "steps"]
    assert all({"node", "fits"} <= set(s) for s in doc["steps"])
