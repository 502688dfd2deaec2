"""Admission off the event loop: a bounded pool of worker threads and a budget of review bytes in flight.

The event loop only reads bodies and writes answers, so `/healthz` and `/readyz` stay quick while a costly
review (a 100,000-label object, 32 fresh 10 KiB CEL selectors) is being judged. The byte budget bounds what
queued and running reviews hold in memory: a body is admitted to the pool only while the bytes of all
accepted, unanswered bodies stay within it, and its share is given back when its worker is done with it (not
when the caller stops waiting), so abandoned work still counts until it has really finished.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Busy(Exception):
    """The byte budget is spent: the review is refused (429) rather than queued."""


class AdmissionWorkers:
    """`workers` threads judging reviews; at most `budget` bytes of bodies accepted and not yet finished."""

    def __init__(
        self, workers: int, budget: int, on_change: Callable[[int, int], None] | None = None
    ) -> None:
        self.budget = budget
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="admission")
        self._lock = threading.Lock()
        self._bytes = 0
        self._reviews = 0
        self._on_change = on_change

    @property
    def bytes_in_flight(self) -> int:
        return self._bytes

    def reserve(self, size: int) -> int:
        """Take `size` bytes of the budget (one body always fits an empty budget); raises Busy otherwise."""
        with self._lock:
            if self._bytes and self._bytes + size > self.budget:
                raise Busy(f"{self._bytes} bytes of reviews already in flight (limit {self.budget})")
            self._bytes += size
            self._reviews += 1
            self._changed()
        return size

    def release(self, size: int) -> None:
        with self._lock:
            self._bytes -= size
            self._reviews -= 1
            self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self._bytes, self._reviews)

    def submit(self, reserved: int, work: Callable[[], T]) -> asyncio.Future[T]:
        """Run `work` on a worker; the reservation is released when it finishes or is cancelled unstarted.
        Cancelling the returned future cancels work that has not started yet."""
        future = self._pool.submit(work)
        future.add_done_callback(lambda _: self.release(reserved))
        return asyncio.wrap_future(future)

    def shutdown(self) -> None:
        """Drop queued work and let running work end on its own (threads are not interruptible)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
