"""The pending-pod queue: active, backoff and unschedulable pods, as kube-scheduler's PriorityQueue.

Upstream: `pkg/scheduler/backend/queue/scheduling_queue.go` (queues, backoff, the leftover flush) and
`pkg/scheduler/framework/plugins/queuesort/priority_sort.go` (the order). Pods come out by priority
(`spec.priority`, default 0) descending, then by the time they were last queued: added, or put back after a
failed attempt (upstream refreshes `QueuedPodInfo.Timestamp` then). A pod that did not fit waits in the
unschedulable set until an event may help it (`move_all_to_active_or_backoff`: the queueing hints of the
plugins that rejected it, binder/hints.py, as upstream's isPodWorthRequeuing) or it has waited there 5 minutes
(checked every 30 s, `flushUnschedulablePodsLeftover`), then in backoff: 1 s doubling to 10 s per failed
attempt, errors in a row and unschedulable attempts counted apart (`backoff_queue.go`). Errors (API
failures) back off and retry without waiting for a change. Pure: the clock is passed in.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from binder.hints import WILDCARD, ClusterEvent, PreCheck, worth_requeuing

INITIAL_BACKOFF = 1.0  # podInitialBackoffSeconds
MAX_BACKOFF = 10.0  # podMaxBackoffSeconds
MAX_IN_UNSCHEDULABLE = 300.0  # podMaxInUnschedulablePodsDuration
FLUSH_INTERVAL = 30.0  # how often upstream runs flushUnschedulablePodsLeftover

Key = tuple[str, str]
# (-priority, last queued, add sequence): PrioritySort's Less, the sequence breaking exact timestamp ties.
Order = tuple[int, float, int]


@dataclass
class _Entry:
    priority: int
    timestamp: float  # when last queued: added, or put back after an attempt (QueuedPodInfo.Timestamp)
    seq: int
    unschedulable_count: int = 0  # attempts that found no node (UnschedulableCount)
    errors: int = 0  # attempts in a row that failed with an error (ConsecutiveErrorsCount)
    last_attempt: float = 0.0
    state: str = "active"  # active | backoff | unschedulable | in-flight
    requeue: bool = False  # changed while in flight: try again when done
    change_seq: int = -1  # cluster change count when it was found unschedulable
    plugins: frozenset[str] = frozenset()  # the plugins that rejected it (while unschedulable)
    attempts: int = 0  # times popped for an attempt (QueuedPodInfo.Attempts)
    pod: Mapping[str, Any] | None = None  # the pod as last queued (QueuedPodInfo.Pod), for the hints

    @property
    def order(self) -> Order:
        return (-self.priority, self.timestamp, self.seq)

    @property
    def backoff_count(self) -> int:
        """The count the backoff doubles with: errors in a row if the last attempt failed with one, else the
        unschedulable attempts (backoff_queue.go getBackoffTime), so one API error after many misfits
        backs off 1 s, not 10."""
        return self.errors if self.errors > 0 else self.unschedulable_count


class SchedulingQueue:
    def __init__(
        self,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.flush_interval = flush_interval
        self._entries: dict[Key, _Entry] = {}
        self._active: list[tuple[Order, Key]] = []
        self._backoff: list[tuple[float, Order, Key]] = []
        self._changes = 0
        self._seq = 0
        self._next_flush: float | None = None  # the next leftover flush (set by the first clock reading)
        self.moved: Counter[str] = Counter()  # unschedulable pods an event moved, by event label
        self.skipped: Counter[str] = Counter()  # unschedulable pods an event left parked, by event label

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def state(self, key: Key) -> str | None:
        e = self._entries.get(key)
        return e.state if e else None

    def attempts(self, key: Key) -> int:
        """How many times the pod was popped for an attempt (0 when not queued)."""
        e = self._entries.get(key)
        return e.attempts if e else 0

    def counts(self) -> dict[str, int]:
        out = {"active": 0, "backoff": 0, "unschedulable": 0, "in-flight": 0}
        for e in self._entries.values():
            out[e.state] += 1
        return out

    def unschedulable_plugins(self) -> Counter[str]:
        """Pods parked as unschedulable, counted once per plugin that rejected them
        (`scheduler_unschedulable_pods`: upstream counts the pods in its unschedulablePods set)."""
        out: Counter[str] = Counter()
        for e in self._entries.values():
            if e.state == "unschedulable":
                out.update(e.plugins)
        return out

    def backoff_for(self, count: int) -> float:
        """Upstream's calculateBackoffDuration: the initial backoff doubled per failed attempt after the
        first, capped at the maximum."""
        if count <= 0:
            return 0.0
        return float(min(self.initial_backoff * 2 ** (count - 1), self.max_backoff))

    # --- inputs ---------------------------------------------------------------------------------------------

    def add(self, key: Key, priority: int, now: float, pod: Mapping[str, Any] | None = None) -> None:
        """A pending pod appeared or its spec changed: queue it (an unschedulable one goes to backoff).
        `now` is its queued timestamp when new; an update keeps the old one, as upstream's Update does.
        `pod` is what the queueing hints read (without it every event may help the pod)."""
        e = self._entries.get(key)
        if e is None:
            self._seq += 1
            e = _Entry(priority, now, self._seq, pod=pod)
            self._entries[key] = e
            heapq.heappush(self._active, (e.order, key))
            return
        if pod is not None:
            e.pod = pod
        if e.state == "in-flight":
            e.requeue = True
        elif e.state == "unschedulable":
            self._to_backoff(key, e)

    def remove(self, key: Key) -> None:
        """The pod is gone or bound (by us or anyone): forget it."""
        self._entries.pop(key, None)

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: PreCheck | None = None,
    ) -> int:
        """Upstream's MoveAllToActiveOrBackoffQueue: an unschedulable pod the event may help (the hints of
        the plugins that rejected it, `pre_check` the node(s) it concerns) goes to backoff; returns how many.
        A pod in flight is tried again when its attempt fails (upstream replays the in-flight events through
        the hints then; every event that reaches the queue counts here)."""
        self._changes += 1
        moved = 0
        for key, e in self._entries.items():
            if e.state == "unschedulable":
                if worth_requeuing(event, e.plugins, e.pod, old, new, pre_check):
                    self._to_backoff(key, e)
                    moved += 1
                else:
                    self.skipped[event.label] += 1
            elif e.state == "in-flight":
                e.requeue = True
        self.moved[event.label] += moved
        return moved

    def cluster_changed(self) -> None:
        """A wildcard event: every unschedulable pod goes to backoff."""
        self.move_all_to_active_or_backoff(ClusterEvent(WILDCARD, WILDCARD, "wildcard"))

    def _to_backoff(self, key: Key, e: _Entry) -> None:
        e.state = "backoff"
        heapq.heappush(self._backoff, (e.last_attempt + self.backoff_for(e.backoff_count), e.order, key))

    def _requeue(self, e: _Entry, now: float, *, error: bool) -> None:
        """Put back after an attempt (AddUnschedulableIfNotPresent): count it, refresh its queued time."""
        if error:
            e.errors += 1
        else:
            e.unschedulable_count += 1
            e.errors = 0  # the error is gone
        e.last_attempt = now
        e.timestamp = now
        self._seq += 1
        e.seq = self._seq

    # --- the worker -----------------------------------------------------------------------------------------

    def pop(self, now: float) -> Key | None:
        """The next pod to try, or None when nothing is ready now."""
        self._promote(now)
        while self._active:
            _, key = heapq.heappop(self._active)
            e = self._entries.get(key)
            if e is None or e.state != "active":
                continue
            e.state = "in-flight"
            e.requeue = False
            e.attempts += 1
            return key
        return None

    def next_ready_in(self, now: float) -> float | None:
        """Seconds until a pod may be ready (0: something is ready now; None: nothing scheduled). With pods
        parked as unschedulable, the next leftover flush counts."""
        self._promote(now)
        if any(
            self._entries.get(k) is not None and self._entries[k].state == "active" for _, k in self._active
        ):
            return 0.0
        waits: list[float] = []
        while self._backoff:
            ready, _, key = self._backoff[0]
            e = self._entries.get(key)
            if e is None or e.state != "backoff":
                heapq.heappop(self._backoff)
                continue
            waits.append(max(ready - now, 0.0))
            break
        if self._next_flush is not None and any(e.state == "unschedulable" for e in self._entries.values()):
            waits.append(max(self._next_flush - now, 0.0))
        return min(waits) if waits else None

    def _promote(self, now: float) -> None:
        self._flush_leftover(now)
        while self._backoff and self._backoff[0][0] <= now:
            _, _, key = heapq.heappop(self._backoff)
            e = self._entries.get(key)
            if e is not None and e.state == "backoff":
                e.state = "active"
                heapq.heappush(self._active, (e.order, key))

    def _flush_leftover(self, now: float) -> None:
        """Every `flush_interval`, pods unschedulable for longer than `max_in_unschedulable` go to backoff
        (or straight to active once their backoff is over), as upstream's flushUnschedulablePodsLeftover."""
        if self._next_flush is None:
            self._next_flush = now + self.flush_interval
            return
        if now < self._next_flush:
            return
        self._next_flush = now + self.flush_interval
        for key, e in self._entries.items():
            if e.state == "unschedulable" and now - e.timestamp > self.max_in_unschedulable:
                self._to_backoff(key, e)

    def done_bound(self, key: Key) -> None:
        self._entries.pop(key, None)

    def done_unschedulable(self, key: Key, now: float, plugins: frozenset[str] = frozenset()) -> None:
        """Did not fit (`plugins` rejected it): park until a cluster change (one that came in during the
        attempt counts) or the leftover flush."""
        e = self._entries.get(key)
        if e is None:
            return
        e.plugins = plugins
        self._requeue(e, now, error=False)
        if e.requeue:
            self._to_backoff(key, e)
        else:
            e.state = "unschedulable"
            e.change_seq = self._changes

    def done_error(self, key: Key, now: float) -> None:
        """An API failure or a conflict: retry after backoff without waiting for a change."""
        e = self._entries.get(key)
        if e is None:
            return
        self._requeue(e, now, error=True)
        self._to_backoff(key, e)

    def done_retry_now(self, key: Key) -> None:
        """Try again at once (a stale leftover claim was just deleted: the retry starts fresh)."""
        e = self._entries.get(key)
        if e is None:
            return
        e.state = "active"
        heapq.heappush(self._active, (e.order, key))
