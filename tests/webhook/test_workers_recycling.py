"""Worker processes are recycled, as gunicorn's `max_requests` recycles its workers: after N large reviews, or
once a worker's RSS has grown past its warm size, a fresh pool takes over and the old processes end, so the
memory a large review left behind comes back."""

from __future__ import annotations

import asyncio
import functools
import os

from support.waiting import alive
from support.worker_jobs import grow

from dra_capacity.serve_cmd import load_handler
from resourceapi.gates import FeatureGates
from webhook.server.workers import LARGE_REVIEW_BYTES, AdmissionWorkers, Recycling

MiB = 1024 * 1024


async def _settle(workers: AdmissionWorkers, old: set[int], seconds: float = 60.0) -> set[int]:
    """Wait for the pool to be replaced and its old processes to end; return the new processes."""
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        now = set(workers.pids())
        if now and not now & old and not any(alive(pid) for pid in old):
            return now
        await asyncio.sleep(0.1)
    raise AssertionError(f"workers not recycled: still {workers.pids()}, old {old}")


def _workers(recycling: Recycling, reasons: list[str]) -> AdmissionWorkers:
    factory = functools.partial(load_handler, FeatureGates.parse(""))
    return AdmissionWorkers(1, 64 * MiB, None, factory, recycling, reasons.append)


def test_workers_are_recycled_after_n_large_reviews() -> None:
    reasons: list[str] = []
    workers = _workers(Recycling(after_large_reviews=2, max_rss_growth=0), reasons)

    async def run() -> None:
        await workers.warm_up()
        first = set(workers.pids())
        for _ in range(2):
            await workers.run(workers.reserve(0), os.getpid, LARGE_REVIEW_BYTES)
        fresh = await _settle(workers, first)
        assert await workers.run(workers.reserve(0), os.getpid, 1) in fresh
        small = set(workers.pids())
        for _ in range(3):  # small reviews never count
            await workers.run(workers.reserve(0), os.getpid, 1)
        assert set(workers.pids()) == small

    try:
        asyncio.run(run())
    finally:
        workers.shutdown()
    assert reasons == ["2 large reviews"]


def test_a_worker_whose_rss_grew_past_the_limit_is_replaced_and_its_memory_returned() -> None:
    reasons: list[str] = []
    workers = _workers(Recycling(after_large_reviews=0, max_rss_growth=32 * MiB), reasons)

    async def run() -> None:
        await workers.warm_up()
        (pid,) = workers.pids()
        warm = workers.rss()
        assert await workers.run(workers.reserve(0), functools.partial(grow, 48 * MiB), 2 * MiB) == pid
        (fresh,) = await _settle(workers, {pid})
        assert fresh != pid and workers.rss() < warm + 32 * MiB

    try:
        asyncio.run(run())
    finally:
        workers.shutdown()
    assert len(reasons) == 1 and reasons[0].startswith("worker RSS ")
