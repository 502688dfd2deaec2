"""Running binders against the kube-apiserver test double, and the invariants checked after quiet."""

from __future__ import annotations

import contextlib
import re
import sys
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from binder.controller import Binder, BinderOptions
from binder.names import CLAIM_ANNOTATION, DELETE_PROTECTION_FINALIZER
from kubeio.election import LeaderElector
from kubeio.kube import Kube, load_configuration
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Quantity
from support import waiting
from support.gpu_cluster import CLASS, device_class, gpu_slice, node

FAST = {"initial_backoff": 0.05, "max_backoff": 0.5, "watch_timeout": 30.0}
CLI = str(Path(sys.executable).parent / "dra-capacity")
# A lease that expires in 3 s (the defaults take 15): the leader-election tests wait it out.
SHORT_LEASE = ("--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.5")


def bind_argv(api: Any, metrics_listen: str = "127.0.0.1:0", *extra: str) -> list[str]:
    """`dra-capacity bind` against the test double `api`, its lease in `default`."""
    kubeconfig = str(api.kubeconfig_path)
    return [
        CLI,
        "bind",
        "--kubeconfig",
        kubeconfig,
        "--lease-namespace",
        "default",
        "--metrics-listen",
        metrics_listen,
        *extra,
    ]


def seed_cluster(api: Any, nodes: int = 2, gpus: int = 1, shares: int = 4, carrier: str = "field") -> None:
    api.seed(device_class(carrier=carrier))
    for i in range(nodes):
        name = f"gpu-node-{i + 1}"
        api.seed(node(name))
        api.seed(gpu_slice(name, gpus=gpus, shares=shares))


def kube_for(api: Any) -> Kube:
    return Kube(load_configuration(str(api.kubeconfig_path)))


@contextlib.contextmanager
def running_binder(
    api: Any, *, gates: str = "", elector: LeaderElector | None = None, **options: Any
) -> Iterator[Binder]:
    kube = kube_for(api)
    binder = Binder(
        kube,
        FeatureGates.parse(gates),
        options=BinderOptions(**{**FAST, **options}),
        is_leader=elector.is_leader if elector is not None else lambda: True,
    )
    binder.start()
    assert binder.wait_synced(20), "informers did not sync"
    try:
        yield binder
    finally:
        binder.stop()
        kube.close()


def wait_for(what: str, check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05) -> Any:
    return waiting.wait_for(what, check, timeout, interval)


def pods(api: Any, namespace: str | None = "default") -> list[dict[str, Any]]:
    return list(api.list("pods", namespace=namespace))


def bound(api: Any, namespace: str | None = "default") -> list[dict[str, Any]]:
    return [p for p in pods(api, namespace) if p["spec"].get("nodeName")]


def extended_claims(api: Any) -> list[dict[str, Any]]:
    return [
        c
        for c in api.list("resourceclaims", namespace=None)
        if (c["metadata"].get("annotations") or {}).get(CLAIM_ANNOTATION) == "true"
    ]


def events(api: Any, reason: str, namespace: str = "default") -> list[dict[str, Any]]:
    return [e for e in api.list("events", namespace=namespace) if e.get("reason") == reason]


def successful_bindings(api: Any) -> Counter[tuple[str, str]]:
    """Binding creates the double answered 2xx, per pod."""
    out: Counter[tuple[str, str]] = Counter()
    for r in api.requests_for("create", "pods"):
        if r.subresource == "binding" and 200 <= r.status < 300:
            out[(r.namespace, r.name)] += 1
    return out


def check_invariants(api: Any) -> None:
    """After quiet: capacity never oversubscribed; every bound pod has exactly one extended-resource claim,
    allocated and reserved for it; no claim reserved for a pod that is gone or unbound; no pod bound twice."""
    all_pods = pods(api, None)
    by_uid = {p["metadata"]["uid"]: p for p in all_pods}
    claims = extended_claims(api)
    capacity: dict[tuple[str, str, str], dict[str, Fraction]] = {}
    for s in api.list("resourceslices"):
        for d in s["spec"].get("devices") or []:
            capacity[(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])] = {
                k: Quantity.parse(v["value"]).value for k, v in (d.get("capacity") or {}).items()
            }
    used: dict[tuple[str, str, str], dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    owned: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in claims:
        refs = [r for r in c["metadata"].get("ownerReferences") or [] if r.get("controller")]
        assert len(refs) == 1, f"claim {c['metadata']['name']}: controller references {refs}"
        owned[refs[0]["uid"]].append(c)
        allocation = (c.get("status") or {}).get("allocation")
        for r in (allocation or {}).get("devices", {}).get("results") or []:
            for k, v in (r.get("consumedCapacity") or {}).items():
                used[(r["driver"], r["pool"], r["device"])][k] += Quantity.parse(v).value
        for ref in (c.get("status") or {}).get("reservedFor") or []:
            holder = by_uid.get(ref["uid"])
            assert holder is not None, f"claim {c['metadata']['name']} reserved for a pod that is gone"
            assert holder["spec"].get("nodeName") or not holder["metadata"].get("deletionTimestamp"), (
                f"claim {c['metadata']['name']} reserved for an unbound pod being deleted"
            )
    for device, amounts in used.items():
        for k, v in amounts.items():
            assert v <= capacity[device].get(k, Fraction(0)), f"{device} {k}: {v} > {capacity[device].get(k)}"
    for p in all_pods:
        if not p["spec"].get("nodeName") or p["spec"].get("schedulerName") != "dra-capacity":
            continue
        uid = p["metadata"]["uid"]
        mine = owned.get(uid, [])
        assert len(mine) == 1, f"pod {p['metadata']['name']} has {len(mine)} extended-resource claims"
        claim = mine[0]
        status = claim.get("status") or {}
        assert status.get("allocation"), f"claim of {p['metadata']['name']} not allocated"
        assert any(r["uid"] == uid for r in status.get("reservedFor") or []), "claim not reserved for its pod"
        ext = (p.get("status") or {}).get("extendedResourceClaimStatus") or {}
        assert ext.get("resourceClaimName") == claim["metadata"]["name"]
    twice = {k: n for k, n in successful_bindings(api).items() if n > 1}
    assert not twice, f"pods bound twice: {twice}"


PREEMPTED = re.compile(r"^Preempted by pod (?P<uid>\S+) on node (?P<node>\S+)$")


def preemption_outcomes(api: Any, namespace: str) -> Counter[str]:
    """Each victim's `Preempted` Event (`Preempted by pod <uid> on node <node>`, preemption/executor.go)
    against its preemptor's final node: `on the node` (bound there), `pending`, `gone` (deleted), or
    `elsewhere` (bound to another node: a victim evicted for a pod that went elsewhere)."""
    by_uid = {p["metadata"]["uid"]: p for p in pods(api, namespace)}
    out: Counter[str] = Counter()
    for e in events(api, "Preempted", namespace):
        found = PREEMPTED.match(e.get("message") or e.get("note") or "")
        assert found, f"Preempted Event {e['metadata']['name']}: {e.get('message')!r}"
        preemptor = by_uid.get(found["uid"])
        node = (preemptor or {}).get("spec", {}).get("nodeName")
        out[
            "gone"
            if preemptor is None
            else "pending"
            if not node
            else "on the node"
            if node == found["node"]
            else "elsewhere"
        ] += 1
    return out


def check_preemptions(api: Any, namespace: str) -> Counter[str]:
    """No victim evicted for a pod that then went elsewhere; the outcomes, for the report."""
    out = preemption_outcomes(api, namespace)
    assert not out["elsewhere"], f"victims evicted for a preemptor bound elsewhere: {dict(out)}"
    return out


def assert_kubelet_view(api: Any, p: dict[str, Any]) -> dict[str, Any]:
    """Everything the kubelet (admission, DRA manager) and the node authorizer read for a bound pod."""
    node = p["spec"]["nodeName"]
    ext = p["status"]["extendedResourceClaimStatus"]
    claim = api.get("resourceclaims", ext["resourceClaimName"], namespace=p["metadata"]["namespace"])
    assert claim is not None, "pod status names a claim that does not exist"
    meta = claim["metadata"]
    assert meta["generateName"] == f"{p['metadata']['name']}-extended-resources-"
    assert meta["annotations"][CLAIM_ANNOTATION] == "true"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": p["metadata"]["name"],
            "uid": p["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert DELETE_PROTECTION_FINALIZER in meta["finalizers"]
    status = claim["status"]
    assert status["reservedFor"] == [
        {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}
    ]
    allocation = status["allocation"]
    terms = allocation["nodeSelector"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    requests = {r["name"]: r for r in claim["spec"]["devices"]["requests"]}
    results = allocation["devices"]["results"]
    containers = {c["name"]: c for c in p["spec"].get("initContainers", []) + p["spec"]["containers"]}
    assert ext["requestMappings"]
    for m in ext["requestMappings"]:
        assert m["containerName"] in containers
        assert m["resourceName"] in containers[m["containerName"]]["resources"]["limits"]
        assert m["requestName"] in requests
        assert any(r["request"] == m["requestName"] for r in results)
    for r in results:
        assert r["request"] in requests
        assert requests[r["request"]]["exactly"]["deviceClassName"] == CLASS
        assert requests[r["request"]]["exactly"]["capacity"] == {"requests": {"shares": "1"}}
        assert r["driver"] == "gpu.nvidia.com" and r["pool"] == node
        assert r["consumedCapacity"] == {"shares": "1"}
        assert str(uuid.UUID(r["shareID"])) == r["shareID"]
    return claim
