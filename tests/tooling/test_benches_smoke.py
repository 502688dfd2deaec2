"""Every bench in the Makefile's `bench:` target, run at a smoke size: it must exit 0 and print its figure
lines. What CI does not run, rots (issue 37): a bench that no longer imports, or a fixture that changed under
it, fails here instead of on the day someone wants its figures. Speed is never asserted (the sizes are far
too small for the figures to mean anything); each run is at most about a minute and all of them together a
few minutes on two busy cores (bench/README.md, "Smoke runs").

The double-based benches are `slow` (`make slow`); the side-by-side one needs the real control plane and is
`realcluster` as well, so it runs in the real-cluster tier."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A hang guard only; the runs take 0.3 to 45 s each here (docs/testing.md).
TIMEOUT = 240


@dataclass(frozen=True)
class Smoke:
    argv: tuple[str, ...]  # bench/<script> and its small-size flags
    figures: tuple[str, ...]  # regular expressions, each matching a line of stdout
    # simulate_dump.py exits 1 when a target is missed, which at this size it is: the last line printed (the
    # placement ratio) shows that it ran to its end.
    missed_targets_exit_one: bool = False

    @property
    def id(self) -> str:
        return Path(self.argv[0]).stem + ("-http" if "--http" in self.argv else "")


N = r"[\d,.]+"

SMOKES = (
    Smoke(
        ("bench/cel_compile.py", "--compiles", "50", "--devices", "16", "--rounds", "2"),
        (rf"median {N} us, p99 {N} us per compile", rf"Selector\.matches: {N} evaluations/s"),
    ),
    Smoke(
        ("bench/admission_handler.py", "--seconds", "0.1"),
        (rf"^validate \(realistic\)\s+{N} us/call", rf"^CEL compile, cache miss\s+{N} ms/call"),
    ),
    Smoke(
        ("bench/webhook_bench.py", "--duration", "1", "--rounds", "1", "--connections", "4"),
        (rf"^throughput ratio validate/baseline: {N}", rf"^p99 validate: {N} ms"),
    ),
    Smoke(
        # One attack: the bench's fixed quiet phases (6 + 3 + 8 s, 15 s idle at the end) are most of its time.
        ("bench/hostile.py", "--settle", "5", "--only", "huge_headers"),
        (rf"^quiet /validate latency .* p99 {N} ms", r"^huge_headers\s+431\s", rf"^memory at start {N} MB"),
    ),
    Smoke(
        ("bench/gpu_shares.py", "--n", "5", "--n", "10"),
        (
            r"^N=\s+10\s+pods=\s+320\s+bound=\s+320\s.* pods/s",
            rf"^ratio us/pod\(N=10\) / us/pod\(N=5\) = {N}",
        ),
    ),
    Smoke(
        ("bench/claim_pods.py", "--n", "5", "--n", "10", "--e2e-size", "20,50"),
        (
            rf"^ratio us/pod\(N=10\) / us/pod\(N=5\) = {N} wall",
            r"^simulate end to end: N=20 pods=50 bound=50 ",
            rf"^end to end: {N} s wall",
        ),
    ),
    Smoke(("bench/allocator_core.py", "5", "10"), (rf"^per-pod cost ratio N=10 / N=5: {N}",)),
    Smoke(("bench/quantity_ops.py", "--number", "1000"), (rf"^a \+ b\s+{N}\s+{N}\s+{N}$",)),
    Smoke(
        ("bench/startup.py", "--runs", "2"),
        (rf"^dra-capacity --help\s+{N} ms wall\s+{N} ms CPU", rf"^dra-capacity top --help\s+{N} ms wall"),
    ),
    Smoke(
        ("bench/simulate_dump.py", "--nodes", "50", "--pods", "200", "--runs", "1"),
        (
            rf"^JSON bare parse\s+{N}s\s+reader\s+{N}s",
            r"^end to end simulate -f dump\.json: .* exit 0",
            rf"^us/pod\(50 nodes\) / us/pod\(100 nodes\) = {N}",
        ),
        missed_targets_exit_one=True,
    ),
    Smoke(
        ("bench/simulate_input_checks.py", "--nodes", "20", "--pods", "100", "--repeat", "1"),
        (rf"reader \+ checks\s+{N} s\s+{N}x parse",),
    ),
    Smoke(
        ("bench/top_bench.py", "--nodes", "50", "--running", "100", "--pending", "100", "--changes", "10"),
        (rf"^1\. cold `top`:\s+{N} s CPU", rf"^2\. warm refresh:\s+median\s+{N} ms", r"^3\. metrics upkeep:"),
    ),
    Smoke(
        ("bench/binder_bench.py", "--nodes", "5,10", "--pods", "20", "--single", "5"),
        (rf"^10 nodes: {N} pods/s bound with 16 pending", rf"^per-pod cost 10 vs 5 nodes: binder CPU {N}"),
    ),
    Smoke(
        ("bench/mutate_pods_bench.py", "--duration", "1", "--rounds", "1", "--connections", "4"),
        (rf"^throughput ratio mutate-pods/baseline: {N}", rf"^routing logic alone: {N} us per review"),
    ),
    Smoke(
        ("bench/cluster_warnings.py", "--seconds", "0.1", "--devices", "80"),
        (rf"^validate, warm cluster view\s+{N} us/call", rf"^one slice republished: validate\s+{N} ms"),
    ),
    Smoke(
        ("bench/cluster_warnings.py", "--http", "--duration", "1", "--devices", "80"),
        (r"^API double seeded with 80 devices", rf"^throughput ratio validate/baseline: {N}"),
    ),
    Smoke(
        ("bench/migrate_plan.py", "--nodes", "40", "--pods", "160", "--batch", "10"),
        (rf"^plan: 4 steps of 10 nodes, {N} pod moves", rf"^time: {N} s CPU", rf"^peak RSS: {N} GiB"),
    ),
    Smoke(
        ("bench/binder_memory.py", "--nodes", "20", "--running", "80"),
        (
            rf"^capacity metrics off: ready after {N} s, first Binding after {N} s; RSS {N} MiB",
            rf"^capacity metrics on : ready after {N} s, first Binding after {N} s; RSS {N} MiB",
            r"^units used counted with the capacity metrics on: 81 \(expected 81\)",
        ),
    ),
)

SIDE_BY_SIDE = Smoke(
    (
        "bench/kube_scheduler_side_by_side.py",
        "--nodes",
        "5",
        "--pods",
        "20",
        "--inflight",
        "8",
        "--burst",
        "40",
    ),
    tuple(
        rf"^{w} 5 nodes: pods/s binder {N} kube-scheduler {N} ratio {N} \({mode}"
        for w in ("A", "B")
        for mode in ("burst", "8 in flight")
    ),
)


def run(smoke: Smoke, tmp_path: Path) -> None:
    # This tree's code for the bench and every process it starts; webhook_bench.json into tmp_path, not over
    # the last real run's in bench/out/.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_OUT": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, *smoke.argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    said = (
        f"{' '.join(smoke.argv)} exited {done.returncode}\n"
        f"stdout:\n{done.stdout}\nstderr:\n{done.stderr[-4000:]}"
    )
    allowed = (0, 1) if smoke.missed_targets_exit_one else (0,)
    assert done.returncode in allowed, said
    missing = [f for f in smoke.figures if not re.search(f, done.stdout, re.MULTILINE)]
    assert not missing, f"figure lines missing: {missing}\n{said}"


@pytest.mark.slow
@pytest.mark.parametrize("smoke", SMOKES, ids=[s.id for s in SMOKES])
def test_the_bench_runs_at_a_smoke_size_and_prints_its_figures(smoke: Smoke, tmp_path: Path) -> None:
    run(smoke, tmp_path)


@pytest.mark.slow
@pytest.mark.realcluster
def test_the_side_by_side_bench_runs_small_on_the_real_control_plane(tmp_path: Path) -> None:
    run(SIDE_BY_SIDE, tmp_path)


def bench_target_commands() -> list[tuple[str, ...]]:
    """The Makefile's `bench:` recipe, one command a line, as bench/<script> and its flags."""
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe is not None
    commands = []
    for line in recipe.group(1).splitlines():
        words = [w for w in line.split() if not w.startswith("$(")]
        commands.append(tuple(words))
    return commands


def test_every_bench_the_makefile_runs_has_a_smoke_run() -> None:
    smoked = {(s.argv[0], "--http" in s.argv) for s in (*SMOKES, SIDE_BY_SIDE)}
    commands = bench_target_commands()
    assert len(commands) >= 17
    missing = [c for c in commands if (c[0], "--http" in c) not in smoked]
    assert not missing, f"add a Smoke to tests/tooling/test_benches_smoke.py for {missing}"


SIDE_BY_SIDE_PVC = Smoke(
    (
        "bench/kube_scheduler_side_by_side.py",
        "--nodes",
        "3",
        "--pods",
        "6",
        "--inflight",
        "4",
        "--workloads",
        "B",
        "--modes",
        "inflight",
        "--pvc",
    ),
    (rf"^B 3 nodes: pods/s binder {N} kube-scheduler {N} ratio {N} \(4 in flight",),
)


@pytest.mark.slow
@pytest.mark.realcluster
def test_the_side_by_side_bench_runs_small_with_pvc_pods(tmp_path: Path) -> None:
    """`--pvc` (issue 38): WaitForFirstConsumer claims with static local PVs, the PV controller on."""
    run(SIDE_BY_SIDE_PVC, tmp_path)


BINDER_STORM = Smoke(
    ("bench/binder_storm.py", "--smoke"),
    (
        rf"^quiet: p50 {N} ms p99 {N} ms",
        rf"^storm: p50 {N} ms p99 {N} ms; {N} republishes; binder CPU {N} s/s and {N} placement attempts",
        rf"^storm p99 / quiet p99: {N} .*binder RSS {N} MiB",
    ),
)


@pytest.mark.slow
@pytest.mark.realcluster
def test_the_binder_storm_bench_runs_small_on_the_real_control_plane(tmp_path: Path) -> None:
    """Issue 42: a full pool's pending pods and a republished slice, then new pods on a fresh pool."""
    run(BINDER_STORM, tmp_path)


BINDER_PREEMPTION = Smoke(
    ("bench/binder_preemption.py", "--smoke"),
    (
        rf"^with preemption: .* {N} pods/s bound, {N} preemptions/s; creation->Binding p50/p99 {N}/{N} ms",
        rf"^without preemption: .* {N} pods/s bound; creation->Binding p50/p99 {N}/{N} ms",
        rf"^ratio with/without preemption: pods/s x{N}, p50 x{N}, binder CPU per pod x{N}",
        r"^check: exactly 1 victim per preemptor, .*: ok$",
    ),
)


@pytest.mark.slow
def test_the_binder_preemption_bench_runs_small(tmp_path: Path) -> None:
    """Issue 41: a full cluster's stream of preemptions on the API double, exactly one victim each."""
    run(BINDER_PREEMPTION, tmp_path)


BINDER_STORM_ATTEMPTS = Smoke(
    ("bench/binder_storm_attempts.py", "--nodes", "4", "--gpus", "2", "--pending", "10", "--new", "4"),
    (
        rf"^first attempts \({N} pods, in {N} s\): {N} attempts, .* mean {N} ms, p50 {N} ms",
        rf"^flushed attempts, .*: {N} attempts, .* mean {N} ms",
        rf"^new pods during the flush: {N} bound, creation->Binding p50 {N} ms, .*diagnoses run {N}",
        rf"^a snapshot built afresh at this size: {N} ms",
    ),
)


@pytest.mark.slow
def test_the_binder_storm_attempts_bench_runs_small(tmp_path: Path) -> None:
    """Issue 42: the cost of one unschedulable attempt, on the API double, and the new pods during a flush."""
    run(BINDER_STORM_ATTEMPTS, tmp_path)
