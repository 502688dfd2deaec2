"""`make run` to 16 pods bound (issue 29's target: under 60 s once the control plane is built).

    .venv/bin/python bench/sandbox_start.py [--runs 2]

Each run starts `dra-capacity sandbox --fresh` in a temporary directory (as `make run` does, control plane
already built), applies the README's Deployment (17 replicas of `nvidia.com/gpu.shared: 1`) with the README's
command, waits for 16 pods Running, then stops it with Ctrl-C. It prints the time to "ready", from `kubectl
apply` to 16 bound, and from start to 16 bound, with the ratio to the 60 s target.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support.sandbox_run import run_step, start_sandbox  # noqa: E402

TARGET = 60.0


def pods(env_kubeconfig: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "kubectl"),
            "--kubeconfig",
            str(env_kubeconfig),
            "get",
            "pods",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return list(json.loads(done.stdout)["items"])


def one_run(directory: Path) -> tuple[float, float, float]:
    sandbox = start_sandbox(directory, "--fresh")
    try:
        done = run_step(sandbox, "kubectl apply -f docs/examples/gpu-shared/deployment.yaml")
        assert done.returncode == 0, done.stderr
        applied = time.monotonic()
        while True:
            items = pods(sandbox.kubeconfig)
            if sum(1 for p in items if p["status"].get("phase") == "Running") == 16:  # type: ignore[attr-defined]
                break
            if time.monotonic() - applied > 120:
                raise SystemExit("16 pods were not Running after 120 s")
            time.sleep(0.1)
        bound = time.monotonic()
        return sandbox.ready_at - sandbox.started, bound - applied, bound - sandbox.started
    finally:
        sandbox.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as tmp:
            ready, apply_to_bound, total = one_run(Path(tmp) / "run")
        print(
            f"run {run + 1}: ready {ready:.1f} s; kubectl apply to 16 bound {apply_to_bound:.1f} s; "
            f"make run to 16 bound {total:.1f} s (target {TARGET:.0f} s, ratio {total / TARGET:.2f})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
