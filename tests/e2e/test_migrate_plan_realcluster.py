"""`dra-capacity migrate plan` followed step by step on the real control plane (v1.37, issue 43).

A cluster in device-plugin mode: four kwok nodes advertise `nvidia.com/gpu.shared` (2 GPUs x 4 replicas) in
`status.capacity`/`allocatable`, with gpu-feature-discovery's labels; two Deployments ask for it and the real
kube-scheduler binds their pods. The real `dra-capacity migrate plan --kubeconfig ... -o json` (a subprocess)
plans the move in two batches of two nodes, and the test follows the plan: step 0 installs the product as the
chart defines it (`install_product`: `serve` and `bind`), applies the classes `--write-classes` wrote and
runs the plan's namespace labels; each further step runs the plan's own kubectl lines (cordon, drain,
uncordon) and, in place of the switch, does what the device plugin and the NVIDIA DRA driver would: the
node's `nvidia.com/gpu.shared` leaves its status and its GPUs are published as a ResourceSlice of consumable
shares (`localcluster.objects.gpu_slice`: the driver here is this test, labelled so, since a real driver
needs a kubelet and GPUs).

After each step the cluster must be what the plan said: every pod bound, the replacement pods bound where the
step's `pods` put them (per node, `via` shares or the device plugin, and the phase, drain or uncordon, they
were bound in; which Deployment's pod takes which place is the controllers' order, not compared), a pod on
shares holding a claim allocated from its node's slice and reserved for it, and the step's `headroom` per
class (total, used, free, headroom) equal to what the real `dra-capacity top --kubeconfig ... -o json`
reports. The same checker, fed the plan
with one pod moved to another node and one headroom off by one, reports both (the negative control).
"""

from __future__ import annotations

import contextlib
import copy
import json
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localcluster.cluster import CONTROLLERS, Cluster, ClusterConfig, ClusterError
from localcluster.install import SCHEDULER_NAME, Installed, install_product
from localcluster.nodes import node as kwok_node
from localcluster.objects import gpu_slice, make_pod

pytestmark = pytest.mark.realcluster

CLI = str(Path(sys.executable).parent / "dra-capacity")
RESOURCE = "nvidia.com/gpu.shared"
GPUS, REPLICAS = 2, 4
NODES = [f"mig-{i}" for i in range(4)]
BARE = "debug"
# (namespace, Deployment, replicas, units per pod)
WORKLOADS = [("inference", "web", 12, 1), ("training", "train", 8, 1)]
PDB_PATH = "/apis/policy/v1/namespaces/training/poddisruptionbudgets"
# All train pods may be down at once. With 2, the second batch's drain wedged (found here): the budget's
# pods are evicted last, as kubectl drain retries them, and their replacements find no room outside the
# batch until it is back, which the drain waits for. The plan now says so (`stalls`; the second test).
PDB_MAX_UNAVAILABLE = 8
Placed = Counter[tuple[str | None, str | None, str | None]]  # (node, via, phase)


def _ok(done: tuple[int, Any], what: str) -> Any:
    status, body = done
    assert status < 300, f"{what}: {status} {body}"
    return body


def dp_node(name: str) -> dict[str, Any]:
    """A kwok node in device-plugin mode: the plugin's time-sliced units in capacity and allocatable."""
    obj = kwok_node(
        name, labels={"nvidia.com/gpu.count": str(GPUS), "nvidia.com/gpu.replicas": str(REPLICAS)}
    )
    for key in ("capacity", "allocatable"):
        obj["status"][key][RESOURCE] = str(GPUS * REPLICAS)
    return obj


def deployment(namespace: str, name: str, replicas: int, units: int) -> dict[str, Any]:
    template = make_pod(name).namespace(namespace).labels({"app": name}).container("main", "pause:3.10")
    pod = template.request("cpu", "100m").limit(RESOURCE, units).obj()
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod["spec"]},
        },
    }


def budget() -> dict[str, Any]:
    """A budget on the train pods, read by the plan (`drain.disruptionBudgets`) and honoured by the drain."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "train", "namespace": "training"},
        "spec": {"maxUnavailable": PDB_MAX_UNAVAILABLE, "selector": {"matchLabels": {"app": "train"}}},
    }


def allowed_now(cluster: Cluster) -> int | None:
    """The disruption controller's `status.disruptionsAllowed` (None before it has counted)."""
    got = _ok(cluster.request("GET", f"{PDB_PATH}/train"), "PodDisruptionBudget")
    status = got.get("status") or {}
    return status.get("disruptionsAllowed") if status.get("currentHealthy") == 8 else None


def cli(*args: str) -> Any:
    done = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"dra-capacity {' '.join(args)}: {done.returncode}\n{done.stderr}"
    return json.loads(done.stdout)


def pods(cluster: Cluster) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for ns, *_ in WORKLOADS:
        out += _ok(cluster.request("GET", f"/api/v1/namespaces/{ns}/pods"), "list pods")["items"]
    return [p for p in out if not p["metadata"].get("deletionTimestamp")]


def settled(cluster: Cluster) -> list[dict[str, Any]] | None:
    """Every Deployment's pods all made, each bound or marked unschedulable by its scheduler; else None."""
    got = pods(cluster)
    wanted = {name: replicas for _, name, replicas, _ in WORKLOADS}
    per_app = Counter(p["metadata"]["labels"]["app"] for p in got if p["metadata"]["labels"]["app"] in wanted)
    if per_app != Counter(wanted):
        return None
    for p in got:
        conditions = (p.get("status") or {}).get("conditions") or []
        decided = any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)
        if not p["spec"].get("nodeName") and not decided:
            return None
    return got


def wait_settled(cluster: Cluster) -> list[dict[str, Any]]:
    cluster.wait_for("the Deployments' pods bound or unschedulable", lambda: settled(cluster), 90, 0.2)
    time.sleep(1.0)  # a pod the scheduler is still binding shows up as bound in the next read
    return cluster.wait_for("settled again", lambda: settled(cluster), 90, 0.2)


def via(cluster: Cluster, pod: dict[str, Any]) -> str:
    """`shares` when the pod holds an extended-resource claim allocated from its node's slice (checked
    here), else `device plugin` (its node's allocatable still lists the resource)."""
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus")
    node = pod["spec"]["nodeName"]
    if not status:
        got = _ok(cluster.request("GET", f"/api/v1/nodes/{node}"), "node")
        assert RESOURCE in got["status"]["allocatable"], f"{pod['metadata']['name']}: no claim on {node}"
        return "device plugin"
    ns = pod["metadata"]["namespace"]
    claim = _ok(
        cluster.request(
            "GET", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{status['resourceClaimName']}"
        ),
        "claim",
    )
    allocation = claim["status"]["allocation"]
    results = allocation["devices"]["results"]
    assert results and all(r["pool"] == node and r["driver"] == "gpu.nvidia.com" for r in results), claim
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
    return "shares"


def mismatches(step: dict[str, Any], placed: Placed, top: dict[str, Any]) -> list[str]:
    """Where the cluster differs from one step of the plan: the replacement pods per (node, via, phase),
    every pod of the step kept, and the headroom per class against `top -o json`."""
    out: list[str] = []
    if not step["fits"] or any(p["result"] not in ("bound", "deleted") for p in step["pods"]):
        out.append(f"step {step['step']}: the plan does not keep every pod")
    # Which Deployment's pod takes which place depends on the order the controllers recreate them (and so,
    # from step to step, which pods a batch holds): compared are the places, per node, how many pods and
    # through what (shares or the device plugin), while the batch is cordoned or once it is back.
    planned: Placed = Counter(
        (p["node"], p["via"], p["phase"]) for p in step["pods"] if p["result"] == "bound"
    )
    if planned != placed:
        out.append(
            f"step {step['step']}: pods per (node, via, phase) planned {sorted(planned.items())}, "
            f"bound {sorted(placed.items())}"
        )
    rows = {c["name"]: c for c in top["classes"]}
    for room in step["headroom"]:
        row = rows.get(room["class"])
        if row is None:
            out.append(f"step {step['step']}: top has no class {room['class']}")
            continue
        want = (room["total"], room["used"], room["free"], room["headroom"], room["capped"])
        got = (row["total"], row["used"], row["free"], row["headroom"], row["headroomCapped"])
        if want != got:
            out.append(
                f"step {step['step']}: {room['class']} (total, used, free, headroom, capped) "
                f"plan {want}, top {got}"
            )
    return out


def run_actions(cluster: Cluster, actions: list[str], switch: Callable[[], None], classes: Path) -> None:
    """The step's lines in order: each `kubectl ...` run as printed (comment dropped, the classes' DIR
    filled in), the `switch ...` line done by the driver stand-in, the install lines by the caller."""
    for action in actions:
        line = action.split("  #", 1)[0].replace("<--write-classes DIR>", str(classes))
        if line.startswith("kubectl "):
            argv = shlex.split(line)[1:]
            if argv[0] == "drain":
                argv += ["--timeout=60s"]
            cluster.kubectl(*argv)
        elif line.startswith("switch "):
            switch()


def switch(cluster: Cluster, nodes: list[str]) -> None:
    """The device plugin leaves the nodes (its resource leaves their status, as the kubelet drops an
    unregistered plugin's) and the DRA driver publishes their GPUs with consumable shares."""
    for name in nodes:
        gone = {RESOURCE: None}
        patch = {"status": {"capacity": gone, "allocatable": gone}}
        _ok(
            cluster.request(
                "PATCH", f"/api/v1/nodes/{name}/status", patch, content_type="application/merge-patch+json"
            ),
            f"node {name} status",
        )
        cluster.create(gpu_slice(name, GPUS, REPLICAS))


def snapshot(cluster: Cluster, before: set[str], phase: str, into: Placed, expect: int = 0) -> set[str]:
    """Add the pods bound since `before` (names) to `into` under `phase`; return every bound pod's name.
    `expect`: wait (a while) for that many to be bound, since the pods left from the drain still carry the
    drain's PodScheduled=False until the binder tries them again."""
    with contextlib.suppress(ClusterError):  # fewer bound than planned: the checker says so
        cluster.wait_for(
            f"{expect} pods bound in the {phase} phase",
            lambda: (
                sum(
                    1
                    for p in pods(cluster)
                    if p["spec"].get("nodeName") and p["metadata"]["name"] not in before
                )
                >= expect
            ),
            45,
            0.2,
        )
    now = wait_settled(cluster)
    bound = {p["metadata"]["name"] for p in now if p["spec"].get("nodeName")}
    for p in now:
        if p["spec"].get("nodeName") and p["metadata"]["name"] not in before:
            into[(p["spec"]["nodeName"], via(cluster, p), phase)] += 1
    return bound


def test_the_plan_followed_step_by_step_is_what_the_cluster_does(
    real_cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    started = time.monotonic()
    controllers = (*CONTROLLERS, "disruption-controller")  # PodDisruptionBudget status, as drain reads it
    cluster = real_cluster_factory(ClusterConfig(nodes=0, gpus_per_node=0, controllers=controllers))
    for name in NODES:
        cluster.create(dp_node(name))
    for ns, name, replicas, units in WORKLOADS:
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        cluster.wait_for(
            f"{ns} default ServiceAccount",
            lambda ns=ns: (
                cluster.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200
            ),
            60,
        )
        cluster.create(deployment(ns, name, replicas, units))
    # a bare pod on a node of the first batch: the drain deletes it (--force) and nothing recreates it
    debug = make_pod(BARE).namespace("inference").labels({"app": "debug"}).container("main", "pause:3.10")
    debug = (
        debug.request("cpu", "100m")
        .limit(RESOURCE, 1)
        .spec(nodeSelector={"kubernetes.io/hostname": NODES[0]})
    )
    cluster.create(debug.obj())
    _ok(cluster.request("POST", PDB_PATH, budget()), "PodDisruptionBudget")
    initial = wait_settled(cluster)
    cluster.wait_for("the budget's status", lambda: allowed_now(cluster) == PDB_MAX_UNAVAILABLE, 60, 0.2)
    assert all(p["spec"].get("nodeName") for p in initial)
    assert {p["spec"]["schedulerName"] for p in initial} == {"default-scheduler"}
    kubeconfig = str(cluster.kubeconfig_path)

    classes = tmp_path / "classes"
    plan = cli("migrate", "plan", "--kubeconfig", kubeconfig, "--max-unavailable", "2", "-o", "json",
               "--write-classes", str(classes))  # fmt: skip
    assert set(plan) >= {"classes", "workloads", "steps"} and plan["fits"]
    assert [c["name"] for c in plan["classes"]] == ["gpu.nvidia.com-shared-1"]
    assert plan["classes"][0]["sharesPerGPU"] == [REPLICAS]
    assert sorted(f"{w['namespace']}/{w['kind']}/{w['name']}" for w in plan["workloads"]) == [
        "inference/Deployment/web",
        f"inference/Pod/{BARE}",
        "training/Deployment/train",
    ]
    assert [s["node"] for s in plan["steps"]] == [[], NODES[:2], NODES[2:]]
    assert plan["steps"][1]["drain"]["barePods"] == [f"inference/{BARE}"]
    assert [p["result"] for p in plan["steps"][1]["pods"] if p["name"] == BARE] == ["deleted"]
    assert sorted(p.name for p in classes.iterdir()) == ["gpu.nvidia.com-shared-1.yaml"]

    installed: Installed | None = None
    try:
        installed = install_product(cluster, tmp_path / "product")
        zero = plan["steps"][0]
        run_actions(cluster, zero["actions"], lambda: None, classes)
        for ns, *_ in WORKLOADS:
            labels = _ok(cluster.request("GET", f"/api/v1/namespaces/{ns}"), "ns")["metadata"]["labels"]
            assert labels.get("dra-capacity.io/pod-routing") == "enabled"
        tops = [cli("top", "--kubeconfig", kubeconfig, "-o", "json")]
        assert mismatches(zero, Counter(), tops[0]) == []
        realities: list[Placed] = [Counter()]

        for step in plan["steps"][1:]:
            before = {p["metadata"]["name"] for p in pods(cluster)}
            placed: Placed = Counter()
            drained = step["actions"].index(next(a for a in step["actions"] if a.startswith("switch ")))
            # the budget: what the plan says the drain meets, against the disruption controller's count
            on_batch = [p for p in pods(cluster) if p["spec"].get("nodeName") in step["node"]]
            train = sum(1 for p in on_batch if p["metadata"]["labels"]["app"] == "train")
            [meets] = step["drain"]["disruptionBudgets"] or [None]
            assert meets is not None and meets["name"] == "training/train"
            assert meets["allowed"] == cluster.wait_for("budget", lambda: allowed_now(cluster), 60, 0.2)
            if step["step"] == 1:  # later batches hold whichever pods the controllers put there
                assert (meets["evicted"], meets["waits"]) == (train, False)
            run_actions(cluster, step["actions"][:drained], lambda: None, classes)
            seen = snapshot(cluster, before, "drain", placed)
            run_actions(
                cluster, step["actions"][drained:], lambda s=step: switch(cluster, s["node"]), classes
            )
            late = sum(1 for p in step["pods"] if p["phase"] == "uncordon" and p["result"] == "bound")
            snapshot(cluster, before | seen, "uncordon", placed, late)
            tops.append(cli("top", "--kubeconfig", kubeconfig, "-o", "json"))
            realities.append(placed)
            assert BARE not in {p["metadata"]["name"] for p in pods(cluster)}
            assert all(p["spec"].get("nodeName") for p in pods(cluster)), "a pod the plan keeps is not bound"
            for p in pods(cluster):
                assert p["spec"]["schedulerName"] == (
                    SCHEDULER_NAME if p["metadata"]["name"] not in before else p["spec"]["schedulerName"]
                )
            problems = mismatches(step, placed, tops[-1])
            assert not problems, "\n".join(problems)

        # at the end every pod is on shares
        assert {via(cluster, p) for p in pods(cluster)} == {"shares"}
        assert installed.alive() == ["serve", "bind"]
    finally:
        if installed is not None:
            installed.stop()

    # the negative control: the same checker judges an altered plan against the same cluster states
    last = len(plan["steps"]) - 1
    moved = copy.deepcopy(plan["steps"][last])
    first = moved["pods"][0]
    first["node"] = next(n for n in NODES if n != first["node"])
    off = copy.deepcopy(plan["steps"][last])
    off["headroom"][0]["headroom"] += 1
    assert mismatches(plan["steps"][last], realities[last], tops[last]) == []
    [wrong_node] = mismatches(moved, realities[last], tops[last])
    assert f"step {last}: pods per (node, via, phase) planned" in wrong_node
    [wrong_room] = mismatches(off, realities[last], tops[last])
    assert f"step {last}: gpu.nvidia.com-shared-1 (total, used, free, headroom, capped)" in wrong_room
    waits = [b["waits"] for st in plan["steps"] for b in st["drain"]["disruptionBudgets"]]
    print(f"migrate plan followed on the real control plane in {time.monotonic() - started:.1f} s", waits)


def test_a_step_the_plan_says_a_budget_wedges_does_not_drain(
    real_cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    """A batch full of pods, four of them under a budget of one: the room left outside it (two units) goes
    to the other pods' replacements, so the budget never allows the rest; the plan says the step stalls and
    the real `kubectl drain` does not end (it times out with the eviction API's budget refusal)."""
    controllers = (*CONTROLLERS, "disruption-controller")
    cluster = real_cluster_factory(ClusterConfig(nodes=0, gpus_per_node=0, controllers=controllers))
    ns = "wedge"
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.wait_for(
        "the default ServiceAccount",
        lambda: cluster.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200,
        60,
    )

    def bound_on(node: str, count: int) -> bool:
        got = _ok(cluster.request("GET", f"/api/v1/namespaces/{ns}/pods"), "pods")["items"]
        return sum(1 for p in got if p["spec"].get("nodeName") == node) == count

    cluster.create(dp_node("wedge-1"))  # filled first: web and chat, 8 units
    for name in ("web", "chat"):
        cluster.create(deployment(ns, name, 4, 1))
    cluster.wait_for("wedge-1 full", lambda: bound_on("wedge-1", 8), 60, 0.2)
    cluster.create(dp_node("wedge-2"))  # 6 of 8 units used: room for two
    cluster.create(deployment(ns, "batch", 6, 1))
    cluster.wait_for("batch on wedge-2", lambda: bound_on("wedge-2", 6), 60, 0.2)
    pdb = budget()
    pdb["metadata"] = {"name": "web", "namespace": ns}
    pdb["spec"] = {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    _ok(cluster.request("POST", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", pdb), "pdb")

    def counted() -> bool:
        got = _ok(cluster.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/web"), "pdb")
        return (got.get("status") or {}).get("currentHealthy") == 4

    cluster.wait_for("the budget's status", counted, 60, 0.2)

    plan = cli("migrate", "plan", "--kubeconfig", str(cluster.kubeconfig_path), "-o", "json")
    step = plan["steps"][1]
    assert step["node"] == ["wedge-1"] and not step["fits"] and plan["firstFailingStep"] == 1
    [meets] = step["drain"]["disruptionBudgets"]
    assert (meets["name"], meets["evicted"], meets["allowed"], meets["stalls"]) == (f"{ns}/web", 4, 1, 3)

    cordon, drain = step["actions"][:2]
    cluster.kubectl(*shlex.split(cordon)[1:])
    done = cluster.kubectl(*shlex.split(drain.split("  #", 1)[0])[1:], "--timeout=20s", check=False)
    assert done.returncode != 0 and "global timeout reached" in done.stderr, done.stderr
    assert "violate the pod's disruption budget" in done.stderr
    got = _ok(cluster.request("GET", f"/api/v1/namespaces/{ns}/pods"), "pods")["items"]
    stuck = [
        p for p in got if p["spec"].get("nodeName") == "wedge-1" and p["metadata"]["labels"]["app"] == "web"
    ]
    assert 1 <= len(stuck) <= meets["stalls"]
