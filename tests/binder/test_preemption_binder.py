"""The binder preempts as kube-scheduler's DefaultPreemption does, on shares (binder/postfilter.py), against
the loopback API double: on a full cluster a high-priority pod evicts exactly the victims `simulate` picks for
the same objects (DisruptionTarget, deletion, a `Preempted` Event naming it), is nominated to their node and
bound there once their claims are released; the freed shares are held for it meanwhile, and a share a
terminating victim's claim still holds is never given to anyone. `preemptionPolicy: Never` and
`--preemption=false` preempt nothing; a pod that needs several shares preempts for all of them or for none."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.binder_harness import (
    bind_argv,
    bound,
    check_invariants,
    check_preemptions,
    events,
    running_binder,
    wait_for,
)
from support.gpu_cluster import device_class, gpu_slice, node, pod

from allocator.simulate import load_inputs, run_pods
from binder.controller import Binder
from binder.postfilter import NOT_ELIGIBLE_TERMINATING
from resourceapi.gates import FeatureGates
from resourceapi.manifests.documents import Document

HIGH = 1000


def _seed(api: Any, nodes: int = 2, gpus: int = 1, shares: int = 2) -> None:
    api.seed(device_class())
    for i in range(nodes):
        api.seed(node(f"gpu-node-{i + 1}"))
        api.seed(gpu_slice(f"gpu-node-{i + 1}", gpus=gpus, shares=shares))


def _fill(api: Any, priorities: dict[str, int], shares: dict[str, int] | None = None) -> None:
    """Low-priority pods the binder binds first, one at a time (their order is their node's order)."""
    for name, priority in priorities.items():
        api.seed(pod(name, shares=(shares or {}).get(name, 1), priority=priority, labels={"app": name}))


def _names(pods: list[dict[str, Any]]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


def _pod(api: Any, name: str) -> dict[str, Any] | None:
    result: dict[str, Any] | None = api.get("pods", name)
    return result


_KINDS = {
    "deviceclasses": ("resource.k8s.io/v1", "DeviceClass"),
    "nodes": ("v1", "Node"),
    "resourceslices": ("resource.k8s.io/v1", "ResourceSlice"),
    "resourceclaims": ("resource.k8s.io/v1", "ResourceClaim"),
    "pods": ("v1", "Pod"),
    "poddisruptionbudgets": ("policy/v1", "PodDisruptionBudget"),
}


def _simulated_victims(api: Any, preemptor: dict[str, Any]) -> set[str]:
    """The victims `simulate` picks for the API's objects as they are now, plus the pending `preemptor`."""
    objs: list[dict[str, Any]] = []
    for plural, (api_version, kind) in _KINDS.items():
        for o in api.list(plural, namespace=None):
            if plural == "pods" and not o["spec"].get("nodeName"):
                continue
            objs.append({**o, "apiVersion": api_version, "kind": kind})
    objs.append(preemptor)
    inputs = load_inputs([Document("api", i + 1, o) for i, o in enumerate(objs)], warn_unknown=False)
    run, _ = run_pods(inputs, FeatureGates.parse(""), "binpack")
    [outcome] = [o for o in run.pods if o.name == preemptor["metadata"]["name"]]
    assert outcome.result == "bound", outcome.reason
    return {name for _, name in outcome.victims}


def _sample(binder: Binder, name: str) -> float:
    for family in text_string_to_metric_families(binder.metrics.render().decode()):
        for s in family.samples:
            if s.name == name:
                return float(s.value)
    return 0.0


def test_a_high_priority_pod_evicts_the_victims_simulate_picks_and_is_bound_after_them(kube_api: Any) -> None:
    _seed(kube_api)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20, "batch-30": 30, "batch-40": 40})
    kube_api.controllers.kubelet_finishes_deletion = False  # the victims stay terminating until released
    with running_binder(kube_api) as binder:
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 4)
        high = pod("inference", priority=HIGH)
        expected = _simulated_victims(kube_api, high)
        assert expected == {"batch-10"}  # tie-free: the lowest highest-victim priority wins the node
        before = {p["metadata"]["name"]: p for p in bound(kube_api)}
        node_of_victim = before["batch-10"]["spec"]["nodeName"]
        created = kube_api.seed(high)

        def nominated() -> str | None:
            p = _pod(kube_api, "inference")
            return ((p or {}).get("status") or {}).get("nominatedNodeName")

        assert wait_for("nominated", nominated) == node_of_victim
        victim = wait_for(
            "victim terminating",
            lambda: [p for p in kube_api.list("pods") if p["metadata"].get("deletionTimestamp")],
        )
        assert _names(victim) == expected
        [target] = [c for c in victim[0]["status"]["conditions"] if c["type"] == "DisruptionTarget"]
        assert target["status"] == "True" and target["reason"] == "PreemptionByScheduler"
        assert target["message"] == "dra-capacity: preempting to accommodate a higher priority pod"
        [event] = wait_for("Preempted event", lambda: events(kube_api, "Preempted"))
        assert event["involvedObject"]["name"] == "batch-10"
        assert event["type"] == "Normal" and event["action"] == "Preempting"
        uid = created["metadata"]["uid"]
        assert event["message"] == f"Preempted by pod {uid} on node {node_of_victim}"
        assert event["related"]["name"] == "inference" and event["related"]["uid"] == uid
        # while the victim terminates its claim holds the share: the preemptor waits, nothing oversubscribed
        [fs] = wait_for(
            "FailedScheduling",
            lambda: [
                e for e in events(kube_api, "FailedScheduling") if e["involvedObject"]["name"] == "inference"
            ],
        )
        assert fs["message"].startswith("0/2 nodes are available:")
        assert not _pod(kube_api, "inference")["spec"].get("nodeName")  # type: ignore[index]
        check_invariants(kube_api)
        kube_api.delete("pods", "batch-10", grace_period_seconds=0)  # the kubelet finishes it
        wait_for("bound", lambda: (_pod(kube_api, "inference") or {})["spec"].get("nodeName"))
        assert _pod(kube_api, "inference")["spec"]["nodeName"] == node_of_victim  # type: ignore[index]
        assert _names(bound(kube_api)) == {"batch-20", "batch-30", "batch-40", "inference"}
        check_invariants(kube_api)
        assert _sample(binder, "scheduler_preemption_attempts_total") >= 1
        assert _sample(binder, "scheduler_preemption_victims_count") == 1
        assert _sample(binder, "scheduler_preemption_victims_sum") == 1
        assert binder.scheduling.preemption.nominated == {}
        # the chaos harness's invariant (support.binder_harness.check_preemptions), and its negative control
        assert check_preemptions(kube_api, "default") == {"on the node": 1}
        other = next(n for n in ("gpu-node-1", "gpu-node-2") if n != node_of_victim)
        moved = {**event, "metadata": {"name": "moved", "namespace": "default"}}
        kube_api.seed({**moved, "message": f"Preempted by pod {uid} on node {other}"})
        with pytest.raises(AssertionError, match="bound elsewhere"):
            check_preemptions(kube_api, "default")


def test_with_a_pdb_the_victims_are_simulates_too(kube_api: Any) -> None:
    """A PodDisruptionBudget that allows no disruption of the lowest-priority pod: it is reprieved first
    (SelectVictimsOnNode), another pod goes instead, the one `simulate` picks."""
    _seed(kube_api)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20, "batch-30": 30, "batch-40": 40})
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep-batch-10", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "batch-10"}}, "maxUnavailable": 0},
        "status": {
            "disruptionsAllowed": 0,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
            "observedGeneration": 1,
        },
    }
    kube_api.seed(pdb)
    with running_binder(kube_api):
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 4)
        high = pod("inference", priority=HIGH)
        expected = _simulated_victims(kube_api, high)
        assert "batch-10" not in expected and len(expected) == 1
        kube_api.seed(high)
        wait_for("bound", lambda: (_pod(kube_api, "inference") or {})["spec"].get("nodeName"))
        gone = {"batch-10", "batch-20", "batch-30", "batch-40"} - _names(kube_api.list("pods"))
        assert gone == expected
        check_invariants(kube_api)


def test_a_lower_priority_pod_does_not_take_the_share_freed_for_the_nominated_pod(kube_api: Any) -> None:
    """The nominated pod is in backoff when its victim's claim is released; a new pod of lower priority
    arrives right then, is placed first, and must not get the freed share (upstream's addNominatedPods)."""
    _seed(kube_api, nodes=1)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20})
    kube_api.controllers.kubelet_finishes_deletion = False
    with running_binder(kube_api, initial_backoff=3.0, max_backoff=3.0) as binder:
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 2)
        kube_api.seed(pod("inference", priority=HIGH))
        wait_for(
            "victim terminating",
            lambda: (_pod(kube_api, "batch-10") or {})["metadata"].get("deletionTimestamp"),
        )
        assert binder.scheduling.preemption.nominated
        kube_api.delete("pods", "batch-10", grace_period_seconds=0)

        def released() -> bool:
            return not any(
                any(r["name"] == "batch-10" for r in (c.get("status") or {}).get("reservedFor") or [])
                and (c.get("status") or {}).get("allocation")
                for c in binder.claims.items()
            )

        wait_for("the victim's claim released in the binder's view", released)
        kube_api.seed(pod("notebook", priority=5))
        wait_for(
            "notebook unschedulable",
            lambda: [
                e for e in events(kube_api, "FailedScheduling") if e["involvedObject"]["name"] == "notebook"
            ],
        )
        assert not (_pod(kube_api, "notebook") or {})["spec"].get("nodeName")
        wait_for("bound", lambda: (_pod(kube_api, "inference") or {})["spec"].get("nodeName"), timeout=30)
        assert not (_pod(kube_api, "notebook") or {})["spec"].get("nodeName")
        check_invariants(kube_api)


def test_preemption_policy_never_preempts_nothing(kube_api: Any) -> None:
    _seed(kube_api, nodes=1)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20})
    with running_binder(kube_api):
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 2)
        kube_api.seed(pod("inference", priority=HIGH, preemptionPolicy="Never"))
        [fs] = wait_for(
            "FailedScheduling",
            lambda: [
                e for e in events(kube_api, "FailedScheduling") if e["involvedObject"]["name"] == "inference"
            ],
        )
        assert (
            fs["message"].split("\n")[0].endswith(" preemption: not eligible due to preemptionPolicy=Never.")
        )
        assert _names(bound(kube_api)) == {"batch-10", "batch-20"}
        assert not events(kube_api, "Preempted")


def test_with_preemption_off_nothing_is_preempted_and_pdbs_are_not_watched(kube_api: Any) -> None:
    _seed(kube_api, nodes=1)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20})
    with running_binder(kube_api, preemption=False) as binder:
        assert binder.ctx.informers.pdbs is None
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 2)
        kube_api.seed(pod("inference", priority=HIGH))
        [fs] = wait_for(
            "FailedScheduling",
            lambda: [
                e for e in events(kube_api, "FailedScheduling") if e["involvedObject"]["name"] == "inference"
            ],
        )
        assert fs["message"].split("\n")[0] == "0/1 nodes are available: 1 cannot allocate all claims."
        assert _names(bound(kube_api)) == {"batch-10", "batch-20"}
        assert not events(kube_api, "Preempted")
        assert _sample(binder, "scheduler_preemption_attempts_total") == 0


@pytest.mark.parametrize(("needs", "victims"), [(2, {"batch-10", "batch-20"}), (3, set())])
def test_a_multi_share_pod_preempts_for_all_its_shares_or_none(
    kube_api: Any, needs: int, victims: set[str]
) -> None:
    """Two GPUs of two shares: two 1-share pods below the preemptor and a 2-share pod above it. Two shares
    are freed by evicting both lower pods; three cannot be freed at all, and then nobody is evicted."""
    _seed(kube_api, nodes=1, gpus=2, shares=2)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20, "train-30": 30}, shares={"train-30": 2})
    with running_binder(kube_api):
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 3)
        high = pod("inference", shares=needs, priority=25)
        kube_api.seed(high)
        if victims:
            wait_for("bound", lambda: (_pod(kube_api, "inference") or {})["spec"].get("nodeName"))
            assert _names(bound(kube_api)) == {"train-30", "inference"}
            check_invariants(kube_api)
        else:
            [fs] = wait_for(
                "FailedScheduling",
                lambda: [
                    e
                    for e in events(kube_api, "FailedScheduling")
                    if e["involvedObject"]["name"] == "inference"
                ],
            )
            assert (
                "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
                in (fs["message"])
            )
            assert _names(bound(kube_api)) == {"batch-10", "batch-20", "train-30"}
            assert not events(kube_api, "Preempted")


def test_a_nominated_pod_waiting_for_its_victims_does_not_preempt_again(kube_api: Any) -> None:
    """While the victim terminates the preemptor is retried (other pods change) but preempts no one else:
    `not eligible due to a terminating pod on the nominated node.` (PodEligibleToPreemptOthers)."""
    _seed(kube_api, nodes=1)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20})
    kube_api.controllers.kubelet_finishes_deletion = False
    with running_binder(kube_api):
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 2)
        kube_api.seed(pod("inference", priority=HIGH))
        wait_for(
            "victim terminating",
            lambda: (_pod(kube_api, "batch-10") or {})["metadata"].get("deletionTimestamp"),
        )
        relabeled = kube_api.get("nodes", "gpu-node-1", namespace=None)
        relabeled["metadata"].setdefault("labels", {})["touched"] = "yes"
        kube_api.update(relabeled)  # a node's labels change: the unschedulable preemptor is retried

        def waiting() -> list[dict[str, Any]]:
            return [
                e
                for e in events(kube_api, "FailedScheduling")
                if e["involvedObject"]["name"] == "inference" and NOT_ELIGIBLE_TERMINATING in e["message"]
            ]

        wait_for("a retry that does not preempt", waiting)
        assert not (_pod(kube_api, "batch-20") or {})["metadata"].get("deletionTimestamp")
        assert len(events(kube_api, "Preempted")) == 1


@pytest.mark.parametrize("flag", ["--preemption=false", "--preemption=true"])
def test_the_bind_flag_turns_preemption_off(kube_api: Any, flag: str) -> None:
    """`dra-capacity bind --once`: the full cluster's victim goes only with preemption on."""
    _seed(kube_api, nodes=1)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20})
    done = subprocess.run(
        bind_argv(kube_api, "127.0.0.1:0", "--once"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    kube_api.seed(pod("inference", priority=HIGH))
    done = subprocess.run(
        bind_argv(kube_api, "127.0.0.1:0", "--once", flag), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    gone = {"batch-10", "batch-20"} - _names(kube_api.list("pods"))
    assert gone == ({"batch-10"} if flag.endswith("true") else set())


def test_a_bad_preemption_flag_exits_two_with_one_line(kube_api: Any) -> None:
    done = subprocess.run(
        [*bind_argv(kube_api, "127.0.0.1:0"), "--preemption", "maybe"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len([line for line in done.stderr.splitlines() if "error" in line]) == 1, done.stderr


def test_the_preemption_metrics_have_upstreams_names_help_and_buckets() -> None:
    """pkg/scheduler/metrics/metrics.go v1.37.2: PreemptionAttempts, PreemptionVictims
    (ExponentialBuckets(1, 2, 7))."""
    from binder.metrics import BinderMetrics

    m = BinderMetrics()
    m.preemption_victims.observe(3)
    text = m.render().decode()
    assert (
        "# HELP scheduler_preemption_attempts_total Total preemption attempts in the cluster till now\n"
        in text
    )
    assert "# TYPE scheduler_preemption_attempts_total counter" in text
    assert (
        "# HELP scheduler_preemption_victims Number of selected preemption victims for preemption "
        "initiated by a single pod\n" in text
    )
    les = [
        s.labels["le"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "scheduler_preemption_victims_bucket"
    ]
    assert les == ["1.0", "2.0", "4.0", "8.0", "16.0", "32.0", "64.0", "+Inf"]


def test_a_second_preemptor_does_not_pick_the_victim_already_evicted_for_the_first(kube_api: Any) -> None:
    """Two pods of the same high priority, one after the other, while the first one's victim terminates:
    that victim's share is promised to the first (upstream counts the nominated pod on its node in the
    second one's dry run, RunFilterPluginsWithNominatedPods), so the second evicts another pod, and each
    preemptor has exactly one victim (bench/binder_preemption.py found two picking the same one)."""
    _seed(kube_api, nodes=1)
    _fill(kube_api, {"batch-10": 10, "batch-20": 10})
    kube_api.controllers.kubelet_finishes_deletion = False  # the victims stay terminating
    with running_binder(kube_api) as binder:
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 2)
        kube_api.seed(pod("inference-1", priority=HIGH))
        wait_for("a first Preempted event", lambda: events(kube_api, "Preempted"))
        kube_api.seed(pod("inference-2", priority=HIGH))
        preempted = wait_for("two Preempted events", lambda: len(events(kube_api, "Preempted")) == 2 or None)
        assert preempted
        by_preemptor = {
            e["related"]["name"]: e["involvedObject"]["name"] for e in events(kube_api, "Preempted")
        }
        assert set(by_preemptor) == {"inference-1", "inference-2"}
        assert set(by_preemptor.values()) == {"batch-10", "batch-20"}
        for name in ("batch-10", "batch-20"):
            kube_api.delete("pods", name, grace_period_seconds=0)
        for name in ("inference-1", "inference-2"):
            wait_for(f"{name} bound", lambda n=name: (_pod(kube_api, n) or {})["spec"].get("nodeName"))
        assert _sample(binder, "scheduler_preemption_victims_count") == 2
        check_invariants(kube_api)


def test_a_nominated_pod_whose_victim_is_gone_is_bound_while_another_ones_victim_terminates(
    kube_api: Any,
) -> None:
    """Two nominated pods of the same priority on one node; the first one's victim goes: the share it frees
    is the first one's, not the second's (whose own victim still terminates), so the first is bound now and
    nobody preempts again."""
    _seed(kube_api, nodes=1)
    _fill(kube_api, {"batch-10": 10, "batch-20": 10})
    kube_api.controllers.kubelet_finishes_deletion = False
    with running_binder(kube_api) as binder:
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 2)
        kube_api.seed(pod("inference-1", priority=HIGH))
        wait_for("a first Preempted event", lambda: events(kube_api, "Preempted"))
        kube_api.seed(pod("inference-2", priority=HIGH))
        wait_for("two Preempted events", lambda: len(events(kube_api, "Preempted")) == 2 or None)
        victim = {e["related"]["name"]: e["involvedObject"]["name"] for e in events(kube_api, "Preempted")}
        kube_api.delete("pods", victim["inference-1"], grace_period_seconds=0)
        wait_for("inference-1 bound", lambda: (_pod(kube_api, "inference-1") or {})["spec"].get("nodeName"))
        assert not (_pod(kube_api, "inference-2") or {})["spec"].get("nodeName")
        assert (_pod(kube_api, victim["inference-2"]) or {})["metadata"].get("deletionTimestamp")
        kube_api.delete("pods", victim["inference-2"], grace_period_seconds=0)
        wait_for("inference-2 bound", lambda: (_pod(kube_api, "inference-2") or {})["spec"].get("nodeName"))
        assert len(events(kube_api, "Preempted")) == 2
        assert _sample(binder, "scheduler_preemption_victims_count") == 2
        check_invariants(kube_api)


def test_the_preemption_writes_run_without_the_controller_lock(kube_api: Any) -> None:
    """The victim's delete is held at the API: meanwhile the controller's lock is free (informers and
    binding cycles go on, as upstream's executor writes apart from the scheduling cycle), and once the
    delete lands the preemption completes as before."""
    _seed(kube_api)
    _fill(kube_api, {"batch-10": 10, "batch-20": 20, "batch-30": 30, "batch-40": 40})
    held = kube_api.faults.hold("delete", "pods", 30.0, name="batch-10")
    with running_binder(kube_api) as binder:
        wait_for("the cluster full", lambda: len(bound(kube_api)) == 4)
        kube_api.seed(pod("inference", priority=HIGH))
        assert held.arrived.wait(20), "the victim's delete was never sent"
        free = binder.cond.acquire(timeout=5)
        if free:
            binder.cond.release()
        held.release.set()
        assert free, "the controller's lock is held while the preemption's writes wait"
        wait_for("bound", lambda: (_pod(kube_api, "inference") or {})["spec"].get("nodeName"))
        assert _names(bound(kube_api)) == {"batch-20", "batch-30", "batch-40", "inference"}
        assert [e["involvedObject"]["name"] for e in events(kube_api, "Preempted")] == ["batch-10"]
        check_invariants(kube_api)
