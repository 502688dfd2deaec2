"""The pending-pod queue: retries only after a relevant change and a backoff, so nothing busy-loops."""

from __future__ import annotations

from binder.scheduling_queue import SchedulingQueue


def key(i: int) -> tuple[str, str]:
    return ("default", f"pod-{i}")


def test_pods_come_out_in_creation_order_once() -> None:
    q = SchedulingQueue()
    q.add(key(2), ("2026-01-02", "default", "pod-2"))
    q.add(key(1), ("2026-01-01", "default", "pod-1"))
    q.add(key(1), ("2026-01-01", "default", "pod-1"))
    assert [q.pop(0.0), q.pop(0.0), q.pop(0.0)] == [key(1), key(2), None]


def test_thousand_unschedulable_pods_idle_until_something_changes() -> None:
    q = SchedulingQueue()
    for i in range(1000):
        q.add(key(i), (i,))
    for _ in range(1000):
        k = q.pop(0.0)
        assert k is not None
        q.done_unschedulable(k, 0.0)
    for now in (0.0, 5.0, 3600.0):
        assert q.pop(now) is None
        assert q.next_ready_in(now) is None  # nothing to wake up for
    assert q.counts()["unschedulable"] == 1000


def test_a_change_retries_unschedulable_pods_after_their_backoff() -> None:
    q = SchedulingQueue(initial_backoff=1.0, max_backoff=10.0)
    q.add(key(1), (1,))
    assert q.pop(0.0) == key(1)
    q.done_unschedulable(key(1), 100.0)
    q.cluster_changed()
    assert q.pop(100.5) is None
    assert q.next_ready_in(100.5) == 0.5
    assert q.pop(101.0) == key(1)


def test_backoff_doubles_up_to_the_maximum() -> None:
    q = SchedulingQueue(initial_backoff=1.0, max_backoff=10.0)
    assert [q.backoff_for(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_errors_retry_without_a_change() -> None:
    q = SchedulingQueue(initial_backoff=1.0)
    q.add(key(1), (1,))
    assert q.pop(0.0) == key(1)
    q.done_error(key(1), 0.0)
    assert q.pop(0.5) is None
    assert q.pop(1.0) == key(1)


def test_a_change_during_the_attempt_is_not_lost() -> None:
    q = SchedulingQueue(initial_backoff=1.0)
    q.add(key(1), (1,))
    assert q.pop(0.0) == key(1)
    q.cluster_changed()  # e.g. a pod freed capacity while this one was being evaluated
    q.done_unschedulable(key(1), 0.0)
    assert q.state(key(1)) == "backoff"
    assert q.pop(1.0) == key(1)


def test_bound_or_deleted_pods_leave_the_queue() -> None:
    q = SchedulingQueue()
    q.add(key(1), (1,))
    q.add(key(2), (2,))
    q.remove(key(1))
    assert q.pop(0.0) == key(2)
    q.done_bound(key(2))
    assert len(q) == 0
