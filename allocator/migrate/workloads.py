"""The workloads a move touches: pods asking for a shared resource, grouped by top owner, with what changes.

Owners are followed through the input's own objects (a ReplicaSet to its Deployment, a Job to its CronJob);
an owner the input lacks is named by the pod's controller reference (StatefulSet, RayCluster, LeaderWorkerSet,
...). Findings: a multi-unit request (`count` means units on different GPUs, user-guide "How a pod's extended
resource becomes a share"), an own scheduler, a field the binder does not place (podfeatures), and a quota or
a toleration keyed by the resource name (ExtendedResourceToleration keys its tolerations by it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from allocator.scheduling.podfeatures import unsupported_fields
from allocator.scheduling.predicates import fit_vector
from resourceapi.api.core_v1 import Pod

DEFAULT_SCHEDULERS = ("", "default-scheduler", "dra-capacity")
Owner = tuple[str, str, str]  # (kind, namespace, name)


@dataclass
class WorkloadPlan:
    kind: str
    namespace: str
    name: str
    resources: dict[str, int] = field(default_factory=dict)  # the most one pod asks for, per shared name
    pods: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OwnerIndex:
    """Controller references of the input's owner objects: (kind, namespace, name) -> its own controller."""

    parents: Mapping[Owner, Owner]

    @classmethod
    def build(cls, owners: Iterable[Mapping[str, Any]]) -> OwnerIndex:
        parents: dict[Owner, Owner] = {}
        for obj in owners:
            meta = obj.get("metadata") or {}
            ns = meta.get("namespace") or "default"
            ref = _controller(meta.get("ownerReferences"))
            if ref is not None:
                parents[(str(obj.get("kind")), ns, str(meta.get("name")))] = (ref[0], ns, ref[1])
        return cls(parents)

    def top(self, pod: Pod) -> Owner:
        refs = pod.metadata.owner_references or []
        ref = next((r for r in refs if r.controller), None)
        if ref is None:
            return ("Pod", pod.namespace, pod.name)
        owner: Owner = (ref.kind, pod.namespace, ref.name)
        seen = {owner}
        while owner in self.parents and self.parents[owner] not in seen:
            owner = self.parents[owner]
            seen.add(owner)
        return owner


def _controller(refs: Any) -> tuple[str, str] | None:
    for r in refs if isinstance(refs, list) else []:
        if isinstance(r, dict) and r.get("controller"):
            return str(r.get("kind")), str(r.get("name"))
    return None


def shared_requests(pod: Pod, names: Iterable[str]) -> dict[str, int]:
    """The most units of each shared name one container asks for (requests, else limits)."""
    wanted = set(names)
    out: dict[str, int] = {}
    for c in pod.all_containers():
        asked = fit_vector(c.resources.requests or c.resources.limits or {}) if c.resources else {}
        for name in wanted & set(asked):
            if asked[name] > 0:
                out[name] = max(out.get(name, 0), asked[name])
    return out


def scheduler_name(pod: Pod) -> str:
    return str((pod.spec.model_extra or {}).get("schedulerName") or "")


def is_daemonset_pod(pod: Pod) -> bool:
    return any(r.controller and r.kind == "DaemonSet" for r in pod.metadata.owner_references or [])


def plan_workloads(
    pods: Sequence[Pod],
    names: Iterable[str],
    owners: OwnerIndex,
    quotas: Sequence[Mapping[str, Any]],
    classes: Mapping[str, str],
) -> list[WorkloadPlan]:
    """Workloads (by kind, namespace, name) whose pods ask for a shared name (`classes`: name -> class)."""
    names = list(names)
    by_owner: dict[Owner, WorkloadPlan] = {}
    for pod in pods:
        asked = shared_requests(pod, names)
        if not asked:
            continue
        key = owners.top(pod)
        w = by_owner.get(key)
        if w is None:
            w = by_owner[key] = WorkloadPlan(*key)
        w.pods.append(pod.name)
        for name, n in asked.items():
            w.resources[name] = max(w.resources.get(name, 0), n)
        _pod_changes(w, pod, asked, classes)
    quota_keys = _quota_keys(quotas, names)
    for w in by_owner.values():
        for name in sorted(w.resources):
            for q in quota_keys.get((w.namespace, name), []):
                _add(
                    w,
                    f"ResourceQuota {q} limits {name} in the namespace: the pods keep asking for it, so the "
                    "quota still counts them; check it still bounds what you intend once DRA serves the name",
                )
        if w.kind == "Pod":
            _add(w, "a bare pod: a drain deletes it (kubectl drain --force) and nothing recreates it")
        if w.kind == "DaemonSet":
            _add(
                w,
                "a DaemonSet pod: a drain leaves it (--ignore-daemonsets); on a switched node, a share",
            )
    return sorted(by_owner.values(), key=lambda w: (w.namespace, w.kind, w.name))


def _pod_changes(w: WorkloadPlan, pod: Pod, asked: Mapping[str, int], classes: Mapping[str, str]) -> None:
    for name, n in sorted(asked.items()):
        if n > 1:
            _add(
                w,
                f"asks for {name}: {n}: through DRA that is {n} shares on {n} different GPUs (count means "
                f"independent allocations); a pod that needs whole GPUs (tensor parallelism, NCCL) should "
                f"ask for them through a ResourceClaim of a whole-device class instead",
            )
    scheduler = scheduler_name(pod)
    if scheduler not in DEFAULT_SCHEDULERS:
        _add(
            w,
            f"scheduled by {scheduler}, not routed to the binder: it keeps the device plugin's whole-device "
            "accounting, and on a switched node it sees the shares only if it implements KEP-5004 "
            "(extended resources backed by DRA); keep its pods on device-plugin nodes or use the binder",
        )
    fields = unsupported_fields(pod)
    if fields:
        _add(w, f"the binder does not place pods with {', '.join(fields)}: they wait with an Event")
    for t in pod.spec.tolerations or []:
        if t.key in asked:
            _add(
                w,
                f"tolerates the taint key {t.key} (as ExtendedResourceToleration adds it, keyed by the "
                "resource name): it holds while the pod asks for that name; a renamed resource loses it",
            )


def _quota_keys(
    quotas: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for q in quotas:
        meta = q.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        hard = (q.get("spec") or {}).get("hard") or {}
        for key in hard if isinstance(hard, dict) else {}:
            for name in names:
                if key in (name, f"requests.{name}", f"limits.{name}"):
                    out.setdefault((ns, name), []).append(f'"{ns}/{meta.get("name")}" ({key}: {hard[key]})')
    return out


def _add(w: WorkloadPlan, text: str) -> None:
    if text not in w.changes:
        w.changes.append(text)
