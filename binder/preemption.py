"""What the binder writes when it preempts, as kube-scheduler's preemption executor writes it.

Upstream v1.37.2 pkg/scheduler/framework/preemption/executor.go (`PreemptPod`): each victim gets the
DisruptionTarget condition (reason PreemptionByScheduler), is deleted, and gets a `Preempted` Event (action
`Preempting`) naming the preemptor; the preemptor's `status.nominatedNodeName` names the node. These are the
bodies; binder/postfilter.py writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from binder.claims import now_rfc3339
from kubeio.kube import Obj

CONDITION_DISRUPTION_TARGET = "DisruptionTarget"  # v1.DisruptionTarget
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"  # v1.PodReasonPreemptionByScheduler
EVENT_REASON_PREEMPTED = "Preempted"
EVENT_ACTION_PREEMPTING = "Preempting"
PREEMPTOR_TYPE_POD = "pod"  # fwk.PodKeyType, what executor.go's preemptor.Type() prints for a pod


def disruption_target_patch(scheduler_name: str, generation: int | None = None) -> Obj:
    """The victim's `pods/status` strategic-merge patch: DisruptionTarget=True, as PreemptPod sets it
    before deleting the victim (`observedGeneration`: the pod's generation when known)."""
    condition: dict[str, Any] = {
        "type": CONDITION_DISRUPTION_TARGET,
        "status": "True",
        "reason": REASON_PREEMPTION_BY_SCHEDULER,
        "message": f"{scheduler_name}: preempting to accommodate a higher priority {PREEMPTOR_TYPE_POD}",
        "lastTransitionTime": now_rfc3339(),
    }
    if generation is not None:
        condition["observedGeneration"] = generation
    return {"status": {"conditions": [condition]}}


def preempted_event_message(preemptor: Mapping[str, Any], node: str) -> str:
    """The `Preempted` Event's note on each victim: `Preempted by pod <uid> on node <node>`."""
    uid = (preemptor.get("metadata") or {}).get("uid", "")
    return f"Preempted by {PREEMPTOR_TYPE_POD} {uid} on node {node}"


def nominated_node_patch(node: str) -> Obj:
    """The preemptor's `pods/status` patch naming the node its victims are leaving ("" clears it)."""
    return {"status": {"nominatedNodeName": node or None}}
