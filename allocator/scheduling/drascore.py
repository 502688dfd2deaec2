"""kube-scheduler's DynamicResources score (v1.37.2 pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources.go `Score`, `computeScore`, `NormalizeScore`): with DRAPrioritizedList, a node scores, for
each `firstAvailable` request of the pod's claims, `FirstAvailableDeviceRequestMaxSize - i` where `i` is the
index of the subrequest allocated there, so a node that can give an earlier (preferred) subrequest wins;
normalized by DefaultNormalizeScore. `exactly` requests score nothing, so the binder's own synthesized claims
never tell nodes apart.

Claims already allocated score the same on every node, and a request with one subrequest too: neither can
change the choice, so `tells_apart` leaves them out and placement skips the plugin for such pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from resourceapi.api.resource_v1 import AllocationResult, ResourceClaim

FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


def tells_apart(claims: Iterable[ResourceClaim]) -> bool:
    """Whether a claim still to allocate has a `firstAvailable` request with a choice (2+ subrequests)."""
    return any(len(r.first_available or []) > 1 for c in claims for r in c.spec.devices.requests or [])


def claims_score(claims: Sequence[ResourceClaim], allocated: Sequence[Iterable[str]]) -> int:
    """computeScore: `allocated[i]` is the request names (`request/subrequest` for a subrequest) of the
    results of `claims[i]` on this node."""
    score = 0
    for claim, requests in zip(claims, allocated, strict=True):
        subrequests = {r for r in requests if "/" in r}
        for req in claim.spec.devices.requests or []:
            if req.exactly is not None:
                continue
            for i, sub in enumerate(req.first_available or []):
                if f"{req.name}/{sub.name}" in subrequests:
                    score += FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE - i
    return score


def result_requests(results: Sequence[AllocationResult]) -> list[list[str]]:
    """The request names of built allocation results, per claim."""
    return [[r.request for r in (res.devices.results or [] if res.devices else [])] for res in results]
