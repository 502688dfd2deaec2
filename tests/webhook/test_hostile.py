"""Hostile clients against the real `dra-capacity serve` process (bench/hostile.py's attacks): every attack
gets a bounded, well-formed answer, `/healthz` keeps answering, and memory stays bounded. Thresholds are
generous (a busy 2-core machine); bench/hostile.py prints the real figures.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
# A kubelet probe times out after 1 s; the target is 100 ms, measured by bench/hostile.py on a quiet machine.
# On a machine busy with other work, the bound is also relative to /healthz latency measured quietly first.
HEALTHZ_MAX_MS = 750.0
QUIET_FACTOR = 5.0


def _load_hostile() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hostile", ROOT / "bench" / "hostile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["hostile"] = module
    spec.loader.exec_module(module)
    return module


hostile = _load_hostile()


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    # Native findings deny here, so the attacks meet the bounded rejection (warn mode: test_native_rules.py).
    with hostile.serve(("--native-rules", "deny")) as running:
        yield running


@pytest.fixture(scope="module")
def quiet_healthz_ms(server: Any) -> float:
    async def measure() -> float:
        async with hostile.watching(server, probe_interval=0.05) as watch:
            await asyncio.sleep(1.0)
        return float(max(watch.healthz_ms))

    return asyncio.run(measure())


async def _under_attack(server: Any, attack: Any) -> tuple[list[Any], Any, int]:
    before = server.rss()
    async with hostile.watching(server, probe_interval=0.05) as watch:
        hits = await attack(server)
        await asyncio.sleep(0.2)
    return hits, watch, before


def _assert_probes_answered(watch: Any, quiet_ms: float) -> None:
    assert watch.healthz_ms, "the prober never ran"
    assert watch.healthz_failures == 0
    assert watch.healthz_max_ms < max(HEALTHZ_MAX_MS, QUIET_FACTOR * quiet_ms)


async def test_100k_invalid_labels_get_a_small_bounded_denial(server: Any, quiet_healthz_ms: float) -> None:
    hits, watch, before = await _under_attack(server, hostile.attack_labels)
    (hit,) = hits
    assert hit.status == 200 and hit.size < 64 * 1024
    status = hit.json()["response"]["status"]
    assert hit.json()["response"]["allowed"] is False and status["code"] == 422
    causes = status["details"]["causes"]
    assert len(causes) == 101
    assert causes[-1]["message"] == "... and 99,900 more errors"
    assert status["message"].endswith("... and 99,990 more errors]")
    _assert_probes_answered(watch, quiet_healthz_ms)
    assert watch.rss_peak - before < 400 * MiB


async def test_32_unique_10k_selectors_are_judged_within_the_deadline(
    server: Any, quiet_healthz_ms: float
) -> None:
    hits, watch, before = await _under_attack(server, hostile.attack_selectors)
    (hit,) = hits
    assert hit.status == 200 and hit.size < 64 * 1024
    response = hit.json()["response"]
    # Allowed, or, on a machine too busy to compile 32 selectors in 9 s, a Timeout denial: never late.
    assert response["allowed"] is True or response["status"]["reason"] == "Timeout"
    _assert_probes_answered(watch, quiet_healthz_ms)
    assert watch.rss_peak - before < 400 * MiB


async def test_500_idle_connections_cost_at_most_64_kib_each(server: Any, quiet_healthz_ms: float) -> None:
    hits, watch, _ = await _under_attack(server, hostile.attack_idle)
    (hit,) = hits
    assert hit.status == 200, "not all 500 connections were accepted"
    assert hit.size <= 64 * 1024  # bytes of memory per open, idle TLS connection
    _assert_probes_answered(watch, quiet_healthz_ms)


async def test_compressed_or_broken_bodies_get_415_json(server: Any, quiet_healthz_ms: float) -> None:
    hits, watch, _ = await _under_attack(server, hostile.attack_encodings)
    for hit in hits:
        assert hit.status == 415 and hit.content_type == "application/json"
        assert "unsupported content encoding" in hit.json()["error"]
    _assert_probes_answered(watch, quiet_healthz_ms)


async def test_lone_surrogates_get_400_json(server: Any, quiet_healthz_ms: float) -> None:
    hits, watch, _ = await _under_attack(server, hostile.attack_surrogates)
    assert len(hits) == 3
    for hit in hits:
        assert hit.status == 400 and hit.content_type == "application/json"
        assert "lone UTF-16 surrogate" in json.loads(hit.body)["error"]
    _assert_probes_answered(watch, quiet_healthz_ms)


async def test_the_server_survived_and_still_judges(server: Any) -> None:
    hit = await hostile.post(server, hostile.FIXTURE.read_bytes())
    assert hit.status == 200 and hit.json()["response"]["allowed"] is True
    assert hit.headers["Server"] == "dra-capacity"  # no aiohttp or Python version for scanners


async def test_a_killed_worker_is_replaced_without_refusing_the_next_review(server: Any) -> None:
    children = hostile._children(server.pid)
    forkservers = [pid for pid in children if "forkserver" in Path(f"/proc/{pid}/cmdline").read_text()]
    workers = [c for pid in forkservers for c in hostile._children(pid)]
    assert workers, "no worker processes under the forkserver"
    os.kill(workers[0], signal.SIGKILL)
    await asyncio.sleep(0.5)
    hit = await hostile.post(server, hostile.FIXTURE.read_bytes())
    assert hit.status == 200 and hit.json()["response"]["allowed"] is True
