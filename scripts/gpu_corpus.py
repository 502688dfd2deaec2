"""Make one entry of the GPU pod corpus (tests/gpu_corpus/, issue 38) from a published template.

    python scripts/gpu_corpus.py RENDERED.yaml > tests/gpu_corpus/ID.yaml

RENDERED is what `helm template` printed for a chart, or a project's own manifest. This keeps the objects
`simulate` reads (workloads, Pods, PVCs) and drops the rest (Services, RBAC, helm test hooks). A custom
resource whose pods an operator makes is turned into those pods, as the operator's source makes them:
LeaderWorkerSet (a leader and `size - 1` workers per replica, named `<lws>-<r>` and `<lws>-<r>-<w>`) and
KubeRay's RayCluster, RayJob and RayService (the head, and each worker group's replicas). In every pod
template, `nvidia.com/gpu` becomes `nvidia.com/gpu.shared` and nothing else changes, except that a PVC
without `storageClassName` gets `standard`, as the DefaultStorageClass admission plugin sets it. Each
entry's source (repository, path, commit, and the command that rendered it) is in
tests/gpu_corpus/sources.yaml.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from typing import Any

import yaml

KEPT = {
    "Pod",
    "Deployment",
    "StatefulSet",
    "ReplicaSet",
    "Job",
    "CronJob",
    "DaemonSet",
    "PersistentVolumeClaim",
}
WORKLOADS = {"Deployment", "StatefulSet", "ReplicaSet", "Job", "DaemonSet"}
DEVICE_PLUGIN = "nvidia.com/gpu"
SHARED = "nvidia.com/gpu.shared"
DEFAULT_CLASS = "standard"

Obj = dict[str, Any]


def pod_specs(obj: Obj) -> Iterator[Obj]:
    """The pod specs of a kept object."""
    kind = obj.get("kind")
    if kind == "Pod":
        yield obj["spec"]
    elif kind == "CronJob":
        yield obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    elif kind in WORKLOADS:
        yield obj["spec"]["template"]["spec"]


def rename(spec: Obj) -> None:
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        for part in ("requests", "limits"):
            resources = (c.get("resources") or {}).get(part) or {}
            if DEVICE_PLUGIN in resources:
                resources[SHARED] = resources.pop(DEVICE_PLUGIN)


def _pod(name: str, namespace: str, template: Obj) -> Obj:
    t = copy.deepcopy(template)
    meta: Obj = {"name": name, "namespace": namespace}
    if (t.get("metadata") or {}).get("labels"):
        meta["labels"] = t["metadata"]["labels"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": t["spec"]}


def _name(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return str(meta.get("name") or meta["generateName"].rstrip("-")), str(meta.get("namespace") or "default")


def leader_worker_set(obj: Obj) -> Iterator[Obj]:
    name, ns = _name(obj)
    template = obj["spec"]["leaderWorkerTemplate"]
    size, replicas = int(template.get("size", 1)), int(obj["spec"].get("replicas", 1))
    leader = template.get("leaderTemplate") or template["workerTemplate"]
    for r in range(replicas):
        yield _pod(f"{name}-{r}", ns, leader)
        for w in range(1, size):
            yield _pod(f"{name}-{r}-{w}", ns, template["workerTemplate"])


def ray_cluster(name: str, ns: str, spec: Obj) -> Iterator[Obj]:
    yield _pod(f"{name}-head", ns, spec["headGroupSpec"]["template"])
    for group in spec.get("workerGroupSpecs") or []:
        count = max(int(group.get("replicas") or 0), int(group.get("minReplicas") or 0))
        for i in range(count):
            yield _pod(f"{name}-{group['groupName']}-worker-{i}", ns, group["template"])


def ray(obj: Obj) -> Iterator[Obj]:
    name, ns = _name(obj)
    if obj["kind"] == "RayCluster":
        yield from ray_cluster(name, ns, obj["spec"])
    elif obj["kind"] == "RayJob":
        yield from ray_cluster(f"{name}-raycluster", ns, obj["spec"]["rayClusterSpec"])
    else:
        yield from ray_cluster(f"{name}-raycluster", ns, obj["spec"]["rayClusterConfig"])


def entry(documents: list[Obj]) -> list[Obj]:
    out: list[Obj] = []
    for d in documents:
        kind = d.get("kind")
        if kind == "LeaderWorkerSet":
            out.extend(leader_worker_set(d))
        elif kind in ("RayCluster", "RayJob", "RayService"):
            out.extend(ray(d))
        elif kind in KEPT and "helm.sh/hook" not in ((d.get("metadata") or {}).get("annotations") or {}):
            out.append(d)
    for d in out:
        for spec in pod_specs(d):
            rename(spec)
        if d["kind"] == "PersistentVolumeClaim" and d["spec"].get("storageClassName") is None:
            d["spec"]["storageClassName"] = DEFAULT_CLASS
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        documents = [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
    yaml.safe_dump_all(entry(documents), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
