"""The bounded PreBind wait that holds no bind thread: the waiting pods, their deadlines, one poller thread.

Upstream blocks the binding goroutine: v1.37.2 `pkg/scheduler/framework/plugins/volumebinding/binder.go`
`BindPodVolumes` runs `wait.PollUntilContextTimeout(ctx, time.Second, b.bindTimeout, ...)` over
`checkBindings`, and `dynamicresources.go` `PreBind` runs `wait.PollUntilContextTimeout(ctx, 5*time.Second,
pl.bindingTimeout, true, ...)` over `isPodReadyForBinding`, each pod in its own goroutine. Here a pod's wait
is an entry that a poller checks (each `interval` and on `wake()`), and its outcome runs on a bind thread.
Each concern owns a `PreBindWait` (binder/volume_binding.py, binder/binding_conditions.py): as upstream's two
polls are separate, each keeps its own period, deadline, error and wake-up source (PV/PVC or claim events),
and a slow check of one never delays the other's pods; one shared thread would have to merge two periods.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from binder.context import BinderContext, Stopped
from binder.hints import Key
from kubeio.kube import ApiError

T = TypeVar("T")


@dataclass
class _Wait(Generic[T]):
    key: Key
    item: T  # what the check reads: the concern's record of what PreBind wrote
    deadline: float
    done: Callable[[], None]
    fail: Callable[[str], None]
    started: float


class PreBindWait(Generic[T]):
    """The pods one PreBind plugin waits for, and its poller. `check(key, item)` is True when done, False
    while waiting, and raises `error` (or ApiError / Stopped) to fail with `message(str(exc))`; the
    deadline fails with `message(deadline_reason)`. `observe(item, exc, expired, seconds)`, if given, sees
    each outcome once decided (the failure's exception, or `expired` for the deadline) and the time waited."""

    def __init__(
        self,
        ctx: BinderContext,
        submit: Callable[[Callable[[], None]], Any],
        check: Callable[[Key, T], bool],
        error: type[Exception],
        message: Callable[[str], str],
        deadline_reason: str,
        timeout: float,
        interval: float,
        thread_name: str,
        observe: Callable[[T, BaseException | None, bool, float], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.submit = submit
        self.check = check
        self.error = error
        self.message = message
        self.deadline_reason = deadline_reason
        self.timeout = timeout
        self.interval = interval
        self.thread_name = thread_name
        self.observe = observe
        self.waiting: dict[Key, _Wait[T]] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wait(self, key: Key, item: T, done: Callable[[], None], fail: Callable[[str], None]) -> None:
        """Hand the pod to the poller: `done` or `fail(message)` runs on a bind thread, once."""
        with self.ctx.cond:
            now = time.monotonic()
            self.waiting[key] = _Wait(key, item, now + self.timeout, done, fail, now)
        self._wake.set()

    def wake(self) -> None:
        """Check the waiting pods now (an informer event may have changed what they wait for)."""
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            with self.ctx.cond:
                waits = list(self.waiting.values())
            for w in waits:
                self._poll(w)

    def _poll(self, w: _Wait[T]) -> None:
        outcome: Callable[[], None] | None = None
        error: BaseException | None = None
        expired = False
        try:
            if self.check(w.key, w.item):
                outcome = w.done
        except (self.error, ApiError, Stopped) as exc:
            error, failed = exc, self.message(str(exc))
            outcome = lambda: w.fail(failed)  # noqa: E731
        now = time.monotonic()
        if outcome is None and now >= w.deadline:
            expired, reason = True, self.message(self.deadline_reason)
            outcome = lambda: w.fail(reason)  # noqa: E731
        if outcome is None:
            return
        with self.ctx.cond:
            if self.waiting.get(w.key) is not w:
                return
            del self.waiting[w.key]
        if self.observe is not None:
            self.observe(w.item, error, expired, now - w.started)
        self.submit(outcome)

    def pending(self) -> set[Key]:
        """The pods whose PreBind waits (for tests and diagnosis)."""
        with self.ctx.cond:
            return set(self.waiting)
