"""`make run REALNODE=1` as a newcomer runs it: `dra-capacity sandbox --real-node` starts one real node beside
the kwok ones in under a minute once built, prints the README's real-node steps, which work (`kubectl logs`
shows each pod's share); the kwok example keeps its counts; Ctrl-C leaves nothing. Without root it says
why."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.sandbox_run import CLI, readme_steps, run_step, start_sandbox
from support.waiting import wait_for

from localcluster.realnode import host

SETPRIV_NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


def test_sandbox_with_a_real_node(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("a real node needs root")
    before = host.read_sysctls()
    sandbox = start_sandbox(tmp_path / "run", "--real-node", timeout=120)
    try:
        took = sandbox.ready_at - sandbox.started
        print(f"sandbox with a real node ready in {took:.1f} s")
        assert took < 60, sandbox.lines
        assert any("real-node-0 Ready in" in line and "kubelet v1.37" in line for line in sandbox.lines)
        at = sandbox.lines.index("  and on the real node:")
        assert [line[2:] for line in sandbox.lines[at + 1 : at + 4]] == readme_steps(
            "sandbox-real-node-steps"
        )
        steps = readme_steps("sandbox-real-node-steps")
        assert run_step(sandbox, steps[0]).returncode == 0

        def running() -> bool:
            out = run_step(sandbox, "kubectl get pods -l app=gpu-real --no-headers").stdout.splitlines()
            return len(out) == 4 and all(" Running " in line for line in out)

        wait_for("the 4 real-node pods Running", running, timeout=90, interval=0.5)
        logs = run_step(sandbox, steps[2])
        assert logs.returncode == 0 and "_request_0=true" in logs.stdout, logs
        # The kwok example keeps the README's counts: the real node's taint keeps its 17 pods off it.
        run_step(sandbox, "kubectl apply -f docs/examples/gpu-shared/deployment.yaml")

        def counted() -> bool:
            out = run_step(sandbox, "kubectl get pods -l app=gpu-shared --no-headers -o wide").stdout
            lines = out.splitlines()
            running = [line for line in lines if " Running " in line]
            return len(lines) == 17 and len(running) == 16 and not any("real-node" in line for line in lines)

        wait_for("16 of the kwok example Running and 1 Pending", counted, timeout=90, interval=0.5)
    finally:
        lines = sandbox.stop(timeout=90)
    assert any("stopped the real node: nothing left" in line for line in lines), lines[-5:]
    assert host.read_sysctls() == before


def test_without_root_it_says_why(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        done = subprocess.run(
            [CLI, "sandbox", "--dir", str(tmp_path), "--no-build", "--real-node"],
            capture_output=True,
            text=True,
        )
    else:
        tmp_path.chmod(0o777)
        done = subprocess.run(
            [*SETPRIV_NOBODY, CLI, "sandbox", "--dir", str(tmp_path), "--no-build", "--real-node"],
            capture_output=True,
            text=True,
            env={**os.environ, "HOME": str(tmp_path)},
            timeout=60,
        )
    assert done.returncode == 2, done
    assert "--real-node: a real node needs root" in done.stderr
    assert "Traceback" not in done.stderr
