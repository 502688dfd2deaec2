"""The simulate package's typed run results and its promise not to change the input objects."""

from __future__ import annotations

from typing import Any

from support.simulate_cli import POD_ENTRY_KEYS
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod, share_claim

from allocator.simulate import ClaimRun, PodRun, load_inputs, run_claims, run_pods
from allocator.simulate.render import to_json
from resourceapi.gates import FeatureGates
from resourceapi.manifests.documents import Document

GATES = FeatureGates.defaults()


def _docs(*objs: Any) -> list[Document]:
    return [Document("in.yaml", i + 1, o if isinstance(o, dict) else o.to_api()) for i, o in enumerate(objs)]


def test_pod_mode_leaves_the_input_pods_and_claims_unchanged() -> None:
    template_pod = pod("p", resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t"}]).to_api()
    template_pod["status"] = {
        "phase": "Pending",
        "resourceClaimStatuses": [{"name": "g", "resourceClaimName": "p-g"}],
    }
    inputs = load_inputs(_docs(gpu_class(), node("n1"), gpu_slice("n1", 1), share_claim("p-g"), template_pod))
    before = [p.model_dump() for p in inputs.pods], [c.model_dump() for c in inputs.claims]
    run, _ = run_pods(inputs, GATES, "binpack")
    assert isinstance(run, PodRun) and run.pods[0].result == "bound"
    assert run.pods[0].claims[0].allocation is not None
    assert ([p.model_dump() for p in inputs.pods], [c.model_dump() for c in inputs.claims]) == before


def test_claim_mode_allocates_copies() -> None:
    inputs = load_inputs(_docs(gpu_class(), node("n1"), gpu_slice("n1", 1), share_claim("c")))
    run, _ = run_claims(inputs, GATES, None)
    assert isinstance(run, ClaimRun) and run.result == "allocated" and run.claims[0].allocation is not None
    assert inputs.claims[0].status is None


def test_json_keeps_the_contract_key_order() -> None:
    inputs = load_inputs(_docs(gpu_class(), node("n1"), gpu_slice("n1", 1), pod("p", {GPU_SHARED: 1})))
    run, _ = run_pods(inputs, GATES, "binpack")
    doc = to_json(run)
    assert list(doc) == ["mode", "pods"]
    assert list(doc["pods"][0]) == POD_ENTRY_KEYS
