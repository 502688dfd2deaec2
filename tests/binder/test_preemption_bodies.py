"""The preemption executor's writes, as upstream v1.37.2 pkg/scheduler/framework/preemption/executor.go
(PreemptPod) and its executor_test.go expect them."""

from __future__ import annotations

from binder.preemption import (
    disruption_target_patch,
    nominated_node_patch,
    preempted_event_message,
)


def test_victim_condition_is_disruption_target_by_scheduler() -> None:
    (cond,) = disruption_target_patch("dra-capacity", generation=3)["status"]["conditions"]
    assert {k: v for k, v in cond.items() if k != "lastTransitionTime"} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "dra-capacity: preempting to accommodate a higher priority pod",
        "observedGeneration": 3,
    }
    (bare,) = disruption_target_patch("s")["status"]["conditions"]
    assert "observedGeneration" not in bare


def test_event_names_the_preemptor_by_uid_and_the_node() -> None:
    msg = preempted_event_message({"metadata": {"name": "high", "uid": "u-1"}}, "n1")
    assert msg == "Preempted by pod u-1 on node n1"


def test_nomination_patch_sets_and_clears() -> None:
    assert nominated_node_patch("n1") == {"status": {"nominatedNodeName": "n1"}}
    assert nominated_node_patch("") == {"status": {"nominatedNodeName": None}}
