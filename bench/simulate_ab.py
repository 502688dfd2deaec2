"""`dra-capacity simulate -f DUMP` from two or more source trees, taken in turn: a change's worth end to end.

Each tree is a checkout of this repository (`git archive <commit> | tar -x -C DIR`, or a worktree), run with
its own modules first on the path and this interpreter's packages. Per round, every tree runs the command
once, in a fresh process; printed per run: CPU seconds (user + system of the command) and peak RSS; then, per
tree, the median CPU and the median of its per-round ratio to the first tree (taking the trees in turn puts a
slow spell of the shared machine on all of them alike).

    .venv/bin/python bench/simulate_dump.py --phase generate --path /tmp/dump --nodes 5000 --pods 20000
    .venv/bin/python bench/simulate_ab.py --dump /tmp/dump/dump.json --rounds 3 . /tmp/tree-without-x
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

RUN = "import sys; from dra_capacity.cli import main; sys.exit(main())"


def run_once(tree: Path, dump: Path) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of one `simulate -f dump -o json` from `tree` (this child's own, from
    wait4)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, "simulate", "-f", str(dump), "-o", "json"],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: simulate failed with exit code {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss in KiB


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dump", type=Path, required=True, help="the dump (JSON or YAML) simulate reads")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("trees", type=Path, nargs="+", help="source trees; the first is the reference")
    args = parser.parse_args()
    trees = [t.resolve() for t in args.trees]
    cpu: dict[Path, list[float]] = {t: [] for t in trees}
    for round_ in range(args.rounds):
        for tree in trees:
            seconds, rss = run_once(tree, args.dump)
            cpu[tree].append(seconds)
            print(f"round {round_ + 1}  {tree}: {seconds:.2f} s CPU, peak RSS {rss:.0f} MiB", flush=True)
    reference = cpu[trees[0]]
    for tree in trees:
        ratios = [c / r for c, r in zip(cpu[tree], reference, strict=True)]
        print(
            f"{tree}: median {statistics.median(cpu[tree]):.2f} s CPU, "
            f"x{statistics.median(ratios):.3f} of {trees[0].name or trees[0]} (per-round ratios "
            f"{', '.join(f'{r:.3f}' for r in ratios)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
