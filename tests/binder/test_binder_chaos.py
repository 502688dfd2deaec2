"""Seeded chaos: a binder killed at a random point of the bind sequence and restarted, while pods keep
arriving and some are deleted; once quiet, the invariants hold after every run.

`make test` runs DRA_CAPACITY_CHAOS_RUNS runs (default 10); the reliability figure is 100 runs:

    DRA_CAPACITY_CHAOS_RUNS=100 .venv/bin/pytest tests/binder/test_binder_chaos.py -q -s

Kills are spread over the steps (each step takes at least runs * kills_per_run / (2 * steps) kills, so >= 10
per step at 100 runs) and counted; the counts are printed.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kubeapi import KubeAPIServer
from support.binder_harness import check_invariants, extended_claims, kube_for, wait_for
from support.gpu_cluster import device_class, gpu_slice, node, pod

from binder.controller import STEPS, Binder, BinderOptions, Stopped
from resourceapi.gates import FeatureGates

RUNS = int(os.environ.get("DRA_CAPACITY_CHAOS_RUNS", "10"))
KILLS_PER_RUN = 2
KILL_COUNTS: Counter[str] = Counter()


class Killer:
    """Kills the binder it is attached to the `nth` time `step` is reached."""

    def __init__(self, step: str, nth: int) -> None:
        self.step, self.nth = step, nth
        self.seen = 0
        self.binder: Binder | None = None
        self.fired = threading.Event()

    def __call__(self, step: str, pod_obj: dict[str, Any]) -> None:
        if step != self.step or self.fired.is_set():
            return
        self.seen += 1
        if self.seen == self.nth:
            self.fired.set()
            assert self.binder is not None
            self.binder.kill()
            raise Stopped()


def start(api: Any, hook: Killer | None) -> Binder:
    binder = Binder(
        kube_for(api),
        FeatureGates.parse(""),
        options=BinderOptions(
            initial_backoff=0.05, max_backoff=0.3, watch_timeout=30.0, bind_workers=4, hook=hook
        ),
    )
    if hook is not None:
        hook.binder = binder
    binder.start()
    assert binder.wait_synced(20)
    return binder


def quiet(api: Any, binder: Binder) -> None:
    """Wait until every pending pod was tried, nothing is in flight, and the double's emulated controllers
    (garbage collector, resourceclaim controller) have nothing left to do."""
    for _ in range(50):
        api.wait_idle()
        keys = binder.pending_keys()
        wait_for("settled", lambda keys=keys: binder.settled(keys), timeout=30)
        time.sleep(0.15)
        if binder.settled(binder.pending_keys()) and all(
            binder.queue.state(k) in (None, "unschedulable") for k in binder.pending_keys()
        ):
            api.wait_idle()
            time.sleep(0.1)
            if binder.settled(binder.pending_keys()):
                return
    raise AssertionError("never quiet")


def one_run(seed: int, workdir: Path) -> Counter[str]:
    rng = random.Random(seed)
    kills: Counter[str] = Counter()
    with KubeAPIServer(workdir=workdir) as api:
        api.seed(device_class())
        for i in range(rng.randint(1, 3)):
            api.seed(node(f"gpu-node-{i}"))
            api.seed(gpu_slice(f"gpu-node-{i}", gpus=rng.randint(1, 2), shares=4))
        names: list[str] = []
        for i in range(rng.randint(2, 5)):
            names.append(f"p{i}")
            api.seed(pod(f"p{i}", shares=rng.randint(1, 2)))
        created = len(names)
        for k in range(KILLS_PER_RUN):
            step = STEPS[(seed * KILLS_PER_RUN + k) % len(STEPS)]
            killer = Killer(step, rng.randint(1, 2))
            binder = start(api, killer)
            deadline = time.monotonic() + 5.0
            while not killer.fired.is_set() and time.monotonic() < deadline:
                if rng.random() < 0.5:
                    names.append(f"p{created}")
                    api.seed(pod(f"p{created}", shares=rng.randint(1, 2)))
                    created += 1
                if names and rng.random() < 0.2:
                    victim = names.pop(rng.randrange(len(names)))
                    api.delete("pods", victim, grace_period_seconds=0)
                killer.fired.wait(rng.uniform(0.0, 0.05))
            if killer.fired.is_set():
                kills[step] += 1
            else:
                binder.kill()
            binder.kube.close()
        final = start(api, None)
        try:
            quiet(api, final)
            check_invariants(api)
            reserved_for_unbound(api)
        finally:
            final.stop()
            final.kube.close()
    return kills


def reserved_for_unbound(api: Any) -> None:
    by_uid = {p["metadata"]["uid"]: p for p in api.list("pods", namespace=None)}
    for c in extended_claims(api):
        for ref in (c.get("status") or {}).get("reservedFor") or []:
            holder = by_uid.get(ref["uid"])
            assert holder is not None and holder["spec"].get("nodeName"), (
                f"claim {c['metadata']['name']} reserved for a pod that is gone or unbound"
            )


@pytest.mark.slow
def test_chaos_kills_at_every_step_keep_the_invariants(tmp_path: Path) -> None:
    totals: Counter[str] = Counter()
    for seed in range(RUNS):
        totals += one_run(seed, tmp_path / f"run-{seed}")
    KILL_COUNTS.update(totals)
    print(f"\nchaos: {RUNS} runs, kills per step: " + ", ".join(f"{s}={totals[s]}" for s in STEPS))
    floor = max(1, RUNS * KILLS_PER_RUN // (2 * len(STEPS)))
    assert all(totals[s] >= floor for s in STEPS), (totals, floor)
