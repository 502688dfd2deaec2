"""The GPU pod corpus (issue 38): published GPU pod templates (tests/gpu_corpus/, each with its source in
sources.yaml), `nvidia.com/gpu` renamed `nvidia.com/gpu.shared` and nothing else changed. Each entry goes
through `/mutate-pods` (webhook/podrouting, the handler `serve` runs) and through `dra-capacity simulate` on
the corpus's cluster (tests/gpu_corpus/cluster.yaml). Every pod is routed to the binder and bound, except
those that name their own scheduler, which keep it and get the admission warning that says what follows."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_capacity.cli import main
from resourceapi.routing import DEFAULT_SCHEDULER
from webhook.podrouting.pod_routing import DEFAULT_SCHEDULER_NAME, PodRouter
from webhook.podrouting.routing_cache import RoutingCache

CORPUS = Path(__file__).resolve().parents[1] / "gpu_corpus"
CLUSTER = CORPUS / "cluster.yaml"
SOURCES: list[dict[str, Any]] = yaml.safe_load((CORPUS / "sources.yaml").read_text())
RESOURCE = "nvidia.com/gpu.shared"
WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "DaemonSet")


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _pods_as_created(entry: str) -> list[dict[str, Any]]:
    """The pods each object of the entry creates, as the API server receives them (a workload's template)."""
    out = []
    for d in _documents(CORPUS / f"{entry}.yaml"):
        ns = d["metadata"].get("namespace", "default")
        if d["kind"] == "Pod":
            out.append(d)
        elif d["kind"] in WORKLOADS:
            template = d["spec"]["template"]
            meta = {"generateName": f"{d['metadata']['name']}-", "namespace": ns}
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]})
    return out


def _asks(pod: dict[str, Any]) -> bool:
    containers = (pod["spec"].get("initContainers") or []) + pod["spec"]["containers"]
    return any(
        RESOURCE in ((c.get("resources") or {}).get(p) or {})
        for c in containers
        for p in ("requests", "limits")
    )


@pytest.fixture(scope="module")
def router() -> PodRouter:
    """`/mutate-pods` with the routing default (every namespace) and the corpus cluster's classes."""
    cache = RoutingCache(all_namespaces=True)
    cache.set_classes([d for d in _documents(CLUSTER) if d["kind"] == "DeviceClass"])
    cache.set_namespaces([{"metadata": {"name": "default"}}])
    return PodRouter(cache)


def _admit(router: PodRouter, pod: dict[str, Any]) -> dict[str, Any]:
    ns = pod["metadata"]["namespace"]
    request = {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE"}
    return router.mutate({**request, "namespace": ns, "object": pod}).response


def test_the_corpus_has_25_sourced_templates() -> None:
    assert len(SOURCES) >= 25
    assert len({s["id"] for s in SOURCES}) == len(SOURCES)
    assert {p.stem for p in CORPUS.glob("*.yaml")} == {s["id"] for s in SOURCES} | {"cluster", "sources"}
    for s in SOURCES:
        assert re.fullmatch(r"[0-9a-f]{40}", s["commit"]) and s["repository"].count("/") == 1 and s["path"], s
        assert s["made_by"] and s["expect"] in ("bound", "own-scheduler"), s
    assert len({s["repository"] for s in SOURCES}) >= 7


@pytest.mark.parametrize("source", SOURCES, ids=[s["id"] for s in SOURCES])
def test_each_template_is_routed_and_bound_or_warned(
    source: dict[str, Any], router: PodRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = source["id"]
    gpu_pods = [p for p in _pods_as_created(entry) if _asks(p)]
    assert gpu_pods, f"{entry}: no pod asks for {RESOURCE}"
    for pod in gpu_pods:
        response = _admit(router, pod)
        if source["expect"] == "own-scheduler":
            assert "patch" not in response, f"{entry}: a pod naming its own scheduler was routed"
            [warning] = response["warnings"]
            assert f"pod names scheduler {source['scheduler']!r} and requests {RESOURCE}" in warning
            assert "without the class's capacity requests" in warning
        else:
            assert pod["spec"].get("schedulerName") in (None, DEFAULT_SCHEDULER), entry
            assert response.get("patchType") == "JSONPatch", f"{entry}: not routed: {response}"
            ops = json.loads(base64.b64decode(response["patch"]))
            assert {"op": "add", "path": "/spec/schedulerName", "value": DEFAULT_SCHEDULER_NAME} in ops, entry
            assert "warnings" not in response, f"{entry}: {response['warnings']}"
    if source["expect"] == "own-scheduler":
        return
    assert main(["simulate", "-f", str(CLUSTER), "-f", str(CORPUS / f"{entry}.yaml"), "-o", "json"]) == 0
    pods = json.loads(capsys.readouterr().out)["pods"]
    assert pods
    unbound = [(p["name"], p["result"], p["reason"]) for p in pods if p["result"] != "bound"]
    assert unbound == [], f"{entry}: {unbound}"
    if "node" in source:
        assert {p["node"] for p in pods} == {source["node"]}
