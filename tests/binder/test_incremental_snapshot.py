"""The binder's snapshot, fed by the informers' events, equals one built afresh from the same informers.

Over real HTTPS against the API double: pods bound by the binder, a user claim allocated and released by
another writer, a pod bound by someone else, a relabeled and a deleted pod, a republished ResourceSlice. After
each burst the live snapshot (what the next pod is placed on) and a fresh build agree on the committed
allocations and each node's pods, and only the first pod built a snapshot."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from support.binder_harness import bound, running_binder, seed_cluster, wait_for
from support.gpu_cluster import CLASS, DRIVER, gpu_slice, pod

from allocator.scheduling.placement import Placer
from binder.controller import Binder
from kubeio.informer import Informer


def view(placer: Placer) -> tuple[Any, ...]:
    state = placer.core.state  # type: ignore[attr-defined]
    aggregated = {
        d: {k: v for k, v in amounts.items() if v != Fraction(0)} for d, amounts in state.aggregated.items()
    }
    nodes = sorted(placer._nodes)
    return (
        dict(state.dedicated),
        set(state.shares),
        dict(state.share_count),
        {d: a for d, a in aggregated.items() if a},
        {
            n: ({k: v for k, v in placer.node_usage(n).requested.items() if v}, placer.node_usage(n).pods)
            for n in nodes
        },
        {n: sorted(p.metadata.uid or "" for p in pods) for n, pods in placer._index.pods.items() if pods},
    )


def agree(binder: Binder, informer: Informer | None = None, obj: dict[str, Any] | None = None) -> bool:
    """The live snapshot equals a fresh build, once `informer` shows `obj` (its version; None: deleted).
    The fresh build reads the informers' stores, so a change not yet fed to the live one cannot pass."""
    if informer is not None:
        assert obj is not None
        meta = obj["metadata"]
        current = informer.get((meta.get("namespace") or "", meta["name"]))
        if (current or {}).get("metadata", {}).get("resourceVersion") != meta.get("resourceVersion"):
            return False
    with binder.cond:
        if binder.ctx.assume.inflight:
            return False
        return view(binder.snapshot.placer()) == view(binder.snapshot.fresh().placer)


def user_claim(api: Any, name: str) -> dict[str, Any]:
    return api.seed(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}},
        }
    )


def allocate(api: Any, claim: dict[str, Any], node: str, share: str) -> dict[str, Any]:
    result = {
        "request": "gpu",
        "driver": DRIVER,
        "pool": node,
        "device": "gpu-0",
        "shareID": share,
        "consumedCapacity": {"shares": "2"},
    }
    selector = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }
    body = {**claim, "status": {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}}}
    return api.update(body, "status")


def test_incremental_snapshot_equals_a_fresh_build(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=3, gpus=2, shares=4)
    with running_binder(kube_api, audit_routing=False) as binder:
        for i in range(5):
            kube_api.seed(pod(f"web-{i}", labels={"app": "web"}))
        wait_for("5 bound", lambda: len(bound(kube_api)) == 5)
        wait_for("agree after binds", lambda: agree(binder))
        rebuilds = binder.rebuilds

        claim = user_claim(kube_api, "other-writer")
        claim = allocate(kube_api, claim, "gpu-node-3", "11111111-1111-4111-8111-111111111111")
        wait_for("agree after a user claim's allocation", lambda: agree(binder, binder.claims, claim))
        claim = kube_api.update({**claim, "status": {}}, "status")
        wait_for("agree after its release", lambda: agree(binder, binder.claims, claim))
        claim = allocate(kube_api, claim, "gpu-node-2", "22222222-2222-4222-8222-222222222222")
        wait_for("agree after a new allocation", lambda: agree(binder, binder.claims, claim))

        other = kube_api.seed(pod("elsewhere", scheduler="default-scheduler", nodeName="gpu-node-1"))
        wait_for("agree after a pod bound elsewhere", lambda: agree(binder, binder.pods, other))

        first = next(p for p in bound(kube_api) if p["metadata"]["name"] == "web-0")
        first["metadata"]["labels"] = {"app": "other"}
        first = kube_api.update(first)
        wait_for("agree after a relabel", lambda: agree(binder, binder.pods, first))

        assert binder.pods.get(("default", "web-1")) is not None
        kube_api.delete("pods", "web-1", grace_period_seconds=0)
        wait_for("the delete seen", lambda: binder.pods.get(("default", "web-1")) is None)
        wait_for("agree after a delete", lambda: agree(binder))

        kube_api.update(
            {
                **kube_api.get("resourceslices", f"gpu-node-3-{DRIVER}", namespace=""),
                "spec": gpu_slice("gpu-node-3", gpus=3)["spec"],
            }
        )
        wait_for("agree after a republished slice", lambda: agree(binder))

        for i in range(5, 9):
            kube_api.seed(pod(f"web-{i}"))
        wait_for(
            "9 bound",
            lambda: len([p for p in bound(kube_api) if p["metadata"]["name"].startswith("web")]) == 8,
        )
        wait_for("agree at the end", lambda: agree(binder))
        assert binder.rebuilds == rebuilds, "no event above needs a snapshot built afresh"
        assert binder.snapshot.updates > 0
