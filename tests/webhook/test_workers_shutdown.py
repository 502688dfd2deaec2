"""Stopping the admission workers: the server waits (bounded) for its worker processes to exit, so nothing of
the pool is still winding down when the interpreter exits (concurrent.futures' exit hook would race it and
print a non-JSON "Exception ignored" line to stderr)."""

from __future__ import annotations

import asyncio
import functools
import os
import time

import pytest
from support.waiting import alive

from dra_capacity.serve_cmd import load_handler
from resourceapi.gates import FeatureGates
from webhook.server.workers import AdmissionWorkers

# Waits on purpose (timeouts, floods, lease expiries): `make quick` leaves these out (docs/testing.md).
pytestmark = pytest.mark.slow


def _worker_pids(workers: AdmissionWorkers) -> set[int]:
    async def ask() -> set[int]:
        await workers.warm_up()
        pids: set[int] = set()
        for _ in range(8):
            reserved = workers.reserve(1)
            pids.add(await workers.run(reserved, os.getpid, 1))
        return pids

    return asyncio.run(ask())


def test_shutdown_returns_once_the_worker_processes_are_gone() -> None:
    workers = AdmissionWorkers(2, 1 << 20, None, functools.partial(load_handler, FeatureGates.parse("")))
    pids = _worker_pids(workers)
    assert pids and os.getpid() not in pids  # judged in worker processes
    assert all(alive(pid) for pid in pids)
    workers.shutdown()
    assert not any(alive(pid) for pid in pids)


def test_shutdown_waits_at_most_its_timeout_for_a_busy_worker() -> None:
    workers = AdmissionWorkers(1, 1 << 20, None, functools.partial(load_handler, FeatureGates.parse("")))
    [pid] = _worker_pids(workers)

    async def occupy() -> None:
        loop = asyncio.get_running_loop()
        reserved = workers.reserve(1)
        task = loop.create_task(workers.run(reserved, functools.partial(time.sleep, 3.0), 1))
        await asyncio.sleep(0.5)  # the sleep is running in the worker
        started = time.monotonic()
        workers.shutdown(timeout=0.5)
        assert time.monotonic() - started < 2.0
        await task

    asyncio.run(occupy())
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)  # the busy worker ended its work, then exited
