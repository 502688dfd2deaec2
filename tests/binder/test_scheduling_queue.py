"""The pending-pod queue: PrioritySort order, backoff, and retries only after a change, a backoff or the
5-minute leftover flush, so nothing busy-loops (upstream pkg/scheduler/backend/queue/scheduling_queue.go)."""

from __future__ import annotations

from typing import Any

from binder import hints
from binder.hints import ClusterEvent
from binder.scheduling_queue import SchedulingQueue
from localcluster.objects import make_pod

DRA = hints.DYNAMIC_RESOURCES
POD = make_pod("pod").uid("u1").spec(nodeSelector={"pool": "a"}).obj()
SLICE_ADDED = ClusterEvent(hints.RESOURCE_SLICE, hints.ADD, "resource-slice")
CLAIM_DELETED = ClusterEvent(hints.RESOURCE_CLAIM, hints.DELETE, "claim-deleted")
NODE_ADDED = ClusterEvent(hints.NODE, hints.ADD, "node")


def key(i: int) -> tuple[str, str]:
    return ("default", f"pod-{i}")


def test_pods_come_out_in_queued_order_once() -> None:
    q = SchedulingQueue()
    q.add(key(2), 0, 1.0)
    q.add(key(1), 0, 2.0)
    q.add(key(2), 0, 3.0)  # an update: still queued once, at its first timestamp
    assert [q.pop(5.0), q.pop(5.0), q.pop(5.0)] == [key(2), key(1), None]


def test_higher_priority_comes_out_first() -> None:
    q = SchedulingQueue()
    q.add(key(1), 0, 0.0)
    q.add(key(2), 100, 1.0)
    q.add(key(3), -10, 0.5)
    q.add(key(4), 100, 2.0)
    assert [q.pop(3.0) for _ in range(5)] == [key(2), key(4), key(1), key(3), None]


def test_equal_priority_goes_by_last_queued_timestamp() -> None:
    q = SchedulingQueue()
    for i, at in ((1, 3.0), (2, 1.0), (3, 2.0), (4, 2.0)):
        q.add(key(i), 5, at)
    assert [q.pop(4.0) for _ in range(4)] == [key(2), key(3), key(4), key(1)]  # equal stamps: added first


def test_re_adding_after_an_attempt_refreshes_the_timestamp() -> None:
    q = SchedulingQueue(initial_backoff=1.0)
    q.add(key(1), 0, 0.0)
    q.add(key(2), 0, 1.0)
    assert q.pop(2.0) == key(1)
    q.done_error(key(1), 2.0)  # put back at t=2: now queued after pod-2 (t=1)
    assert q.pop(3.0) == key(2)
    q.done_error(key(2), 3.5)  # put back at t=3.5: behind pod-1 again
    assert q.pop(10.0) == key(1)
    assert q.pop(10.0) == key(2)


def test_thousand_unschedulable_pods_idle_until_something_changes_or_the_flush() -> None:
    q = SchedulingQueue()
    for i in range(1000):
        q.add(key(i), 0, 0.0)
    for _ in range(1000):
        k = q.pop(0.0)
        assert k is not None
        q.done_unschedulable(k, 0.0)
    for now in (0.0, 5.0, 299.0):
        assert q.pop(now) is None
        wait = q.next_ready_in(now)
        assert wait is not None and 0.0 < wait <= 30.0  # only the 30 s flush tick wakes the worker
    assert q.counts()["unschedulable"] == 1000


def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    q = SchedulingQueue()
    q.add(key(1), 0, 0.0)
    assert q.pop(0.0) == key(1)
    q.done_unschedulable(key(1), 10.0)
    for now in range(30, 301, 30):  # the flush runs every 30 s; 290 s waited at t=300 is not enough
        assert q.pop(float(now)) is None
    assert q.state(key(1)) == "unschedulable"
    assert q.pop(330.0) == key(1)  # waited 320 s > 300 s; its 1 s backoff is long over


def test_flushed_pods_still_wait_out_their_backoff() -> None:
    q = SchedulingQueue(initial_backoff=1.0, max_backoff=10.0, max_in_unschedulable=5.0, flush_interval=1.0)
    q.add(key(1), 0, 0.0)
    for now in (0.0, 100.0, 200.0):
        assert q.pop(now) == key(1)
        q.done_unschedulable(key(1), now)
        q.cluster_changed()
    assert q.pop(300.0) == key(1)
    q.done_unschedulable(key(1), 300.0)  # the 4th misfit: an 8 s backoff
    assert q.pop(306.0) is None  # flushed (waited 6 s > 5 s) into backoff until 308
    assert q.state(key(1)) == "backoff"
    assert q.next_ready_in(306.0) == 2.0
    assert q.pop(308.0) == key(1)


def test_a_change_retries_unschedulable_pods_after_their_backoff() -> None:
    q = SchedulingQueue(initial_backoff=1.0, max_backoff=10.0)
    q.add(key(1), 0, 0.0, POD)
    assert q.pop(0.0) == key(1)
    q.done_unschedulable(key(1), 100.0, frozenset({DRA}))
    assert q.move_all_to_active_or_backoff(SLICE_ADDED, None, {}, lambda pod: True) == 1
    assert q.pop(100.5) is None
    assert q.next_ready_in(100.5) == 0.5
    assert q.pop(101.0) == key(1)


def test_backoff_doubles_from_one_second_up_to_ten() -> None:
    q = SchedulingQueue()  # upstream's podInitialBackoffSeconds 1, podMaxBackoffSeconds 10
    assert [q.backoff_for(n) for n in range(0, 7)] == [0.0, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_backoff_durations_follow_the_pods_own_attempts() -> None:
    q = SchedulingQueue()
    q.add(key(1), 0, 0.0)
    q.add(key(2), 0, 0.0)
    now = 0.0
    waits = []
    for _ in range(5):
        assert q.pop(now) == key(1)
        q.done_error(key(1), now)
        assert q.next_ready_in(now) == 0.0  # pod-2 is ready: take it out of the way
        assert q.pop(now) == key(2)
        q.done_unschedulable(key(2), now)  # parked: pod-2's attempts do not touch pod-1's backoff
        wait = q.next_ready_in(now)
        assert wait is not None
        waits.append(wait)
        now += wait
        q.cluster_changed()
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_an_error_after_misfits_backs_off_by_its_own_count() -> None:
    q = SchedulingQueue()
    q.add(key(1), 0, 0.0)
    now = 0.0
    for _ in range(4):  # four misfits: the next misfit would wait 8 s
        assert q.pop(now) == key(1)
        q.done_unschedulable(key(1), now)
        q.cluster_changed()
        now += 10.0
    assert q.pop(now) == key(1)
    q.done_error(key(1), now)  # the first error in a row: 1 s (ConsecutiveErrorsCount)
    assert q.next_ready_in(now) == 1.0
    assert q.pop(now + 1.0) == key(1)
    q.done_error(key(1), now + 1.0)
    assert q.next_ready_in(now + 1.0) == 2.0
    assert q.pop(now + 3.0) == key(1)
    q.done_unschedulable(key(1), now + 3.0)  # a misfit again: the fifth, 10 s; the errors are forgotten
    q.cluster_changed()
    assert q.next_ready_in(now + 3.0) == 10.0


def test_errors_retry_without_a_change() -> None:
    q = SchedulingQueue(initial_backoff=1.0)
    q.add(key(1), 0, 0.0)
    assert q.pop(0.0) == key(1)
    q.done_error(key(1), 0.0)
    assert q.pop(0.5) is None
    assert q.pop(1.0) == key(1)


def test_a_change_during_the_attempt_is_not_lost() -> None:
    q = SchedulingQueue(initial_backoff=1.0)
    q.add(key(1), 0, 0.0)
    assert q.pop(0.0) == key(1)
    q.move_all_to_active_or_backoff(CLAIM_DELETED)  # e.g. a pod freed capacity while this one was tried
    q.done_unschedulable(key(1), 0.0)
    assert q.state(key(1)) == "backoff"
    assert q.pop(1.0) == key(1)


def test_bound_or_deleted_pods_leave_the_queue() -> None:
    q = SchedulingQueue()
    q.add(key(1), 0, 0.0)
    q.add(key(2), 0, 1.0)
    q.remove(key(1))
    assert q.pop(2.0) == key(2)
    q.done_bound(key(2))
    assert len(q) == 0


# --- moves by event (upstream's MoveAllToActiveOrBackoffQueue with the plugins' queueing hints) -------------


def parked(q: SchedulingQueue, i: int, plugins: set[str], pod: Any = POD) -> None:
    q.add(key(i), 0, 0.0, pod)
    assert q.pop(0.0) == key(i)
    q.done_unschedulable(key(i), 0.0, frozenset(plugins))


def test_an_event_moves_only_the_pods_its_hints_say_it_may_help() -> None:
    q = SchedulingQueue(initial_backoff=1.0)
    parked(q, 1, {DRA})
    parked(q, 2, {hints.NODE_AFFINITY})  # a slice does not change node labels
    parked(q, 3, {DRA})
    on_pool_a = {("default", "pod-3")}  # the pre-check: pod-3 alone may run on the slice's node

    def pre_check(pod: Any) -> bool:
        return (pod["metadata"]["namespace"], pod["metadata"]["name"]) in on_pool_a

    q.add(key(3), 0, 0.0, make_pod("pod-3").uid("u3").obj())  # its spec changed: it goes to backoff anyway
    assert q.state(key(3)) == "backoff"
    assert q.move_all_to_active_or_backoff(SLICE_ADDED, None, {}, pre_check) == 0
    assert [q.state(key(i)) for i in (1, 2)] == ["unschedulable", "unschedulable"]
    assert q.skipped["resource-slice"] == 2 and q.moved["resource-slice"] == 0
    assert q.move_all_to_active_or_backoff(SLICE_ADDED, None, {}, None) == 1  # any node: pod-1
    assert [q.state(key(i)) for i in (1, 2)] == ["backoff", "unschedulable"]
    assert q.moved["resource-slice"] == 1
    assert q.pop(1.0) in (key(1), key(3))


def test_the_pre_check_reads_the_pod_as_last_queued() -> None:
    q = SchedulingQueue()
    parked(q, 1, {DRA})
    seen: list[Any] = []
    q.move_all_to_active_or_backoff(SLICE_ADDED, None, {}, lambda pod: seen.append(pod) or False)
    assert seen == [POD]


def test_a_pod_queued_without_its_object_moves_on_every_event() -> None:
    q = SchedulingQueue()
    parked(q, 1, {hints.NODE_AFFINITY}, pod=None)
    assert q.move_all_to_active_or_backoff(SLICE_ADDED, None, {}, lambda pod: False) == 1


def test_a_wildcard_moves_every_unschedulable_pod() -> None:
    q = SchedulingQueue()
    parked(q, 1, {hints.NODE_AFFINITY})
    parked(q, 2, {DRA})
    q.cluster_changed()
    assert q.counts()["backoff"] == 2 and q.moved["wildcard"] == 2


def test_a_node_event_asks_node_affinity_and_the_pre_check() -> None:
    q = SchedulingQueue()
    parked(q, 1, {hints.NODE_AFFINITY})
    node_b = {"metadata": {"name": "b1", "labels": {"pool": "b"}}}
    assert q.move_all_to_active_or_backoff(NODE_ADDED, None, node_b, lambda pod: False) == 0
    assert q.move_all_to_active_or_backoff(NODE_ADDED, None, node_b, lambda pod: True) == 1
