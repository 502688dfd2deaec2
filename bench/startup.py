"""Startup cost of the command: `dra-capacity --help`, `simulate --help` and `top --help` next to the floor,
a bare `python -c pass` of the same interpreter. Each is run N times in fresh processes; medians are compared
(target: within 100 ms of the floor, in CPU time: the wall clock on a shared machine mostly measures
the other jobs). Also lists the heavy modules each one imported (there should be none:
aiohttp, prometheus_client, cryptography, cel_expr_python, kubernetes, pydantic).

    .venv/bin/python bench/startup.py            # 15 runs each
    .venv/bin/python bench/startup.py --runs 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("aiohttp", "prometheus_client", "cryptography", "cel_expr_python", "kubernetes", "pydantic")
TARGET_MS = 100.0


def _script() -> list[str]:
    exe = Path(sys.executable).with_name("dra-capacity")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dra_capacity"]


def median_ms(cmd: list[str], runs: int) -> tuple[float, float]:
    """Median wall and CPU (user + system, from the child's rusage) milliseconds: on a shared machine the CPU
    figure is the one that compares."""
    wall, cpu = [], []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((usage.ru_utime + usage.ru_stime) * 1000)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(cmd)} failed")
    return statistics.median(wall), statistics.median(cpu)


def heavy_imports(args: list[str]) -> list[str]:
    """Top-level packages from HEAVY that `python -X importtime -m dra_capacity ARGS` imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dra_capacity", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    seen = set()
    for line in proc.stderr.splitlines():
        name = line.rpartition("|")[2].strip()
        if name.split(".")[0] in HEAVY:
            seen.add(name.split(".")[0])
    return sorted(seen)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    floor, floor_cpu = median_ms([sys.executable, "-c", "pass"], args.runs)
    print(
        f"python -c pass                     {floor:7.1f} ms wall  {floor_cpu:7.1f} ms CPU "
        f"(median of {args.runs})"
    )
    ok = True
    for extra in (["--help"], ["simulate", "--help"], ["top", "--help"]):
        ms, cpu = median_ms([*_script(), *extra], args.runs)
        heavy = heavy_imports(extra)
        over = cpu - floor_cpu
        ok &= over <= TARGET_MS and not heavy
        print(
            f"dra-capacity {' '.join(extra):20} {ms:7.1f} ms wall  {cpu:7.1f} ms CPU   "
            f"floor + {over:6.1f} ms CPU (target <= {TARGET_MS:.0f})   "
            f"heavy imports: {', '.join(heavy) or 'none'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
