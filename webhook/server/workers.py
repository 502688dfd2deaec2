"""Admission off the event loop: a bounded pool of workers and a budget of review bytes in flight.

The event loop judges only small, cheap reviews itself (webhook/server/admit.py, by each endpoint's
`Endpoint`: webhook/server/endpoints.py); every other review comes here, so `/healthz` and `/readyz` stay
quick while a costly review (a 100,000-label object, 32 fresh 10 KiB CEL selectors) is being judged.

* Worker processes (the default of `serve`) share nothing with the event loop, not even the interpreter
  lock: a CEL compile that holds the lock for tens of milliseconds never delays a probe. A worker that dies
  (killed for memory, say) is replaced; only the review it was judging is refused.
* Worker threads (the library default, and `--worker-kind thread`) cost no extra memory, but share the
  interpreter lock, so a costly review can hold a probe back by some tens of milliseconds at a time.

Worker processes are recycled, as gunicorn's `max_requests` recycles its workers: a large review (1 MiB and
more) can leave a worker's memory at its peak for good (allocator fragmentation no trim undoes), so after
`recycle_after` large reviews, or once a worker's RSS has grown `max_rss_growth` bytes past what it held warm,
a new pool is started and warmed beside the old one, takes over, and the old one ends when its running
reviews are done. No review waits for the swap.

One worker is kept for small reviews (bodies up to `SMALL_BODY_BYTES`, which every everyday DeviceClass is):
large reviews use the others only, so a flood of costly reviews queues behind itself, never in front of the
apiserver's everyday traffic.

The byte budget bounds what queued and running reviews hold: a body is admitted to the pool only while the
bytes of all accepted, unanswered bodies stay within it, and its share is given back when its worker is done
with it (not when the caller stops waiting), so abandoned work still counts until it has really finished.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TypeVar

from webhook.server.judging import AdmissionHandler, start_worker, worker_ready

T = TypeVar("T")

# A realistic DeviceClass review is 2-4 KiB; 32 KiB holds at most a few CEL selectors of the 10 KiB maximum.
SMALL_BODY_BYTES = 32 * 1024

SHUTDOWN_WAIT_SECONDS = 5.0
"""At shutdown, how long the server waits for its workers to exit (in-flight reviews have been drained by
then; a worker still busy is left to end on its own)."""
PROCESS = "process"
THREAD = "thread"
WORKER_KINDS = (PROCESS, THREAD)


class Busy(Exception):
    """The byte budget is spent: the review is refused (429) rather than queued."""


class WorkerDied(Exception):
    """The worker process judging a review died; the pool has been replaced."""


LARGE_REVIEW_BYTES = 1024 * 1024
"""A review this large counts towards recycling the worker processes."""


@dataclass(frozen=True)
class Recycling:
    """When worker processes are replaced (see the module docstring); 0 turns a rule off."""

    after_large_reviews: int = 32
    max_rss_growth: int = 24 * 1024 * 1024


def process_rss(pid: int) -> int:
    """Resident set size of process `pid` in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class AdmissionWorkers:
    """`workers` workers judging reviews; at most `budget` bytes of bodies accepted and not yet finished.

    With `factory` (a picklable callable building the handler), the workers are processes, recycled as
    `recycling` says; else threads.
    """

    def __init__(
        self,
        workers: int,
        budget: int,
        on_change: Callable[[int, int], None] | None = None,
        factory: Callable[[], AdmissionHandler] | None = None,
        recycling: Recycling | None = None,
        on_recycle: Callable[[str], None] | None = None,
    ) -> None:
        self.workers = workers
        self.budget = budget
        self.factory = factory
        self.recycling = recycling if recycling is not None else Recycling()
        self._on_recycle = on_recycle
        self._large_reviews = 0
        self._warm_rss = 0
        self._recycling: asyncio.Task[None] | None = None
        self._lock = threading.Lock()
        self._bytes = 0
        self._reviews = 0
        self._on_change = on_change
        self._pool = self._new_pool()
        # Created on first use, inside the running loop.
        self._any_slot: asyncio.Semaphore | None = None
        self._large_slot: asyncio.Semaphore | None = None
        self._warming: asyncio.Task[None] | None = None

    @property
    def kind(self) -> str:
        return PROCESS if self.factory is not None else THREAD

    def _new_pool(self) -> concurrent.futures.Executor:
        if self.factory is None:
            return concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="admission")
        # forkserver: workers start from a clean single-threaded server, not from a copy of this process
        # with its event loop and threads.
        return concurrent.futures.ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("forkserver"),
            initializer=start_worker,
            initargs=(self.factory, os.getpid()),
        )

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

    def charge(self, held: int, size: int) -> int:
        """Add `size` bytes to a reservation already holding `held` (a body read as it arrives); raises Busy
        when that would pass the budget while other reviews hold bytes too. Returns the new holding."""
        with self._lock:
            if self._bytes > held and self._bytes + size > self.budget:
                raise Busy(f"{self._bytes} bytes of reviews already in flight (limit {self.budget})")
            self._bytes += size
            self._changed()
        return held + size

    def release(self, size: int) -> None:
        with self._lock:
            self._bytes -= size
            self._reviews -= 1
            self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self._bytes, self._reviews)

    async def run(self, reserved: int, work: Callable[[], T], size: int) -> T:
        """Run `work` (picklable, for processes) on a free worker, waiting for one; a body larger than
        `SMALL_BODY_BYTES` waits for one of the workers not kept for small reviews. The worker and the
        reservation are given back when the work finishes (a caller that gives up does not free a worker
        that is still busy), or at once when the caller gives up before the work started."""
        if self._any_slot is None or self._large_slot is None:
            self._any_slot = asyncio.Semaphore(self.workers)
            self._large_slot = asyncio.Semaphore(max(self.workers - 1, 1))
        any_slot, large_slot = self._any_slot, self._large_slot
        large = size > SMALL_BODY_BYTES
        held: list[asyncio.Semaphore] = []

        def give_back() -> None:
            for slot in held:
                slot.release()
            held.clear()
            self.release(reserved)

        try:
            if large:
                await large_slot.acquire()
                held.append(large_slot)
            await any_slot.acquire()
            held.append(any_slot)
            pool = self._pool
            try:
                future = pool.submit(work)
            except (BrokenProcessPool, RuntimeError):  # a worker died while idle: replace them, once
                self._replace(pool)
                pool = self._pool
                future = pool.submit(work)
        except (BrokenProcessPool, RuntimeError):
            give_back()
            raise WorkerDied("the admission workers are restarting") from None
        except BaseException:
            give_back()
            raise
        loop = asyncio.get_running_loop()

        def finished(_: object) -> None:
            with contextlib.suppress(
                RuntimeError
            ):  # the loop is already closed: nothing left to give back to
                loop.call_soon_threadsafe(give_back)
                if size >= LARGE_REVIEW_BYTES:
                    loop.call_soon_threadsafe(self._large_review_done, pool)

        future.add_done_callback(finished)
        try:
            return await asyncio.wrap_future(future)
        except BrokenProcessPool:
            self._replace(pool)
            raise WorkerDied("the worker judging this review stopped") from None

    # --- recycling ----------------------------------------------------------------------------------------

    def pids(self) -> list[int]:
        """The current pool's worker processes (none for threads)."""
        processes = getattr(self._pool, "_processes", None) or {}
        return [int(pid) for pid in processes]

    def rss(self) -> int:
        """The largest RSS of the current pool's workers."""
        return max((process_rss(pid) for pid in self.pids()), default=0)

    def _large_review_done(self, pool: concurrent.futures.Executor) -> None:
        """On the loop, after a large review: recycle when a rule says so."""
        if self.factory is None or pool is not self._pool or self._recycling is not None:
            return
        self._large_reviews += 1
        rules = self.recycling
        if rules.after_large_reviews and self._large_reviews >= rules.after_large_reviews:
            reason = f"{self._large_reviews} large reviews"
        elif rules.max_rss_growth and self._warm_rss and self.rss() > self._warm_rss + rules.max_rss_growth:
            reason = f"worker RSS {self.rss() >> 20} MiB, {self._warm_rss >> 20} MiB when warm"
        else:
            return
        self._recycling = asyncio.get_running_loop().create_task(self.recycle(reason))

    async def recycle(self, reason: str = "asked") -> None:
        """Start and warm a new pool beside the current one, swap, and let the old one finish its reviews."""
        try:
            fresh = self._new_pool()
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(loop.run_in_executor(fresh, worker_ready) for _ in range(self.workers)))
            with self._lock:
                old, self._pool = self._pool, fresh
                self._large_reviews = 0
            old.shutdown(wait=False, cancel_futures=False)
            if self._on_recycle is not None:
                self._on_recycle(reason)
        except (OSError, BrokenProcessPool, RuntimeError):
            pass  # the current pool keeps serving; the next large review tries again
        finally:
            self._recycling = None

    def _replace(self, broken: concurrent.futures.Executor) -> None:
        """A new pool for a broken one, its processes started at once (they take seconds to warm up)."""
        with self._lock:
            if self._pool is not broken:
                return
            self._pool = self._new_pool()
        broken.shutdown(wait=False, cancel_futures=True)
        with contextlib.suppress(RuntimeError):  # no running loop: the next review starts them
            self._warming = asyncio.get_running_loop().create_task(self.warm_up())

    async def warm_up(self) -> None:
        """Start every worker now (processes build and warm their handler), not on the first review."""
        if self.factory is None:
            return
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._pool, worker_ready) for _ in range(self.workers)))
        self._warm_rss = max(self._warm_rss, self.rss())

    def use_threads(self) -> None:
        """Judge on threads from now on (worker processes could not start)."""
        old, self.factory = self._pool, None
        self._pool = self._new_pool()
        old.shutdown(wait=False, cancel_futures=True)

    def shutdown(self, timeout: float = SHUTDOWN_WAIT_SECONDS) -> None:
        """Drop queued work, let running work end on its own (a review is never interrupted), and wait up to
        `timeout` seconds for the workers to exit. A process pool still winding down when the interpreter
        exits races the exit hook of concurrent.futures (`_python_exit` wakes the pool's manager thread while
        that thread closes its wake-up pipe), which then prints "Exception ignored in: <module 'threading'>"
        to stderr, outside the JSON log. The wait runs on a thread of its own, so a worker busy with a long
        review delays the exit by `timeout` at most."""
        pool = self._pool
        closer = threading.Thread(
            target=pool.shutdown, kwargs={"wait": True, "cancel_futures": True}, name="workers-shutdown"
        )
        closer.daemon = True
        closer.start()
        closer.join(timeout)
