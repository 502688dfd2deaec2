"""`dra-capacity sandbox` where the real control plane is not built and may not be (`--no-build`): it says so
in its first line, runs the API double instead, installs the product there, and its printed steps give 16
bound pods with shares and a FailedScheduling Event for the 17th; Ctrl-C stops every process it started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.sandbox_run import start_sandbox

pytestmark = pytest.mark.slow
KUBECTL = str(Path(sys.executable).parent / "kubectl")


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=60
    )


def test_without_a_built_control_plane_the_double_serves_and_says_so_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRA_CAPACITY_CONTROLPLANE_DIR", str(tmp_path / "no-binaries"))
    sandbox = start_sandbox(tmp_path / "run")
    try:
        assert sandbox.lines[0].startswith("USING THE API DOUBLE, not a real control plane: ")
        assert "(--no-build)" in sandbox.lines[0]
        create = next(line.strip() for line in sandbox.lines if "kubectl create" in line).split("  #")[0]
        pods_file = create.split(" -f ")[1].strip()
        done = _kubectl(sandbox.kubeconfig, "create", "--validate=false", "-f", pods_file)
        assert done.returncode == 0, done.stderr

        def bound() -> list[dict[str, object]]:
            items = json.loads(_kubectl(sandbox.kubeconfig, "get", "pods", "-o", "json").stdout)["items"]
            return [p for p in items if p["spec"].get("nodeName")]

        deadline = time.monotonic() + 60
        while len(bound()) < 16 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(bound()) == 16
        claims = json.loads(_kubectl(sandbox.kubeconfig, "get", "resourceclaims", "-o", "json").stdout)[
            "items"
        ]
        assert len(claims) == 16
        assert all(c["status"]["allocation"]["devices"]["results"][0]["shareID"] for c in claims)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            events = json.loads(_kubectl(sandbox.kubeconfig, "get", "events", "-o", "json").stdout)["items"]
            if any(e["reason"] == "FailedScheduling" for e in events):
                break
            time.sleep(0.2)
        else:
            pytest.fail("no FailedScheduling Event for the 17th pod")
    finally:
        lines = sandbox.stop()
    assert sandbox.proc.returncode == 0, "\n".join(lines)
    stopped = next(line for line in lines if line.startswith("stopped PIDs"))
    pids = [int(p) for p in stopped.split("PIDs ")[1].split()]
    assert len(pids) == 3
    assert not [p for p in pids if os.path.exists(f"/proc/{p}") and _running(p)]


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_failed_build_falls_back_to_the_double_and_says_so(tmp_path: Path) -> None:
    """A `go` on PATH that cannot build (here: one that only fails): the build's own progress, then the
    fallback's line, then the double as above."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "go").write_text("#!/bin/sh\necho 'go: cannot build here' >&2\nexit 1\n")
    (fake / "go").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "DRA_CAPACITY_CONTROLPLANE_DIR": str(tmp_path / "no-binaries"),
    }
    sandbox = start_sandbox(tmp_path / "run", build=True, env=env)
    lines = sandbox.stop()
    assert lines[0].startswith("building the real control plane on first use")
    assert "10-25 min on 2 cores" in lines[0]
    fallback = next(i for i, line in enumerate(lines) if line.startswith("USING THE API DOUBLE"))
    assert "the control plane build failed (exit 1)" in lines[fallback]
    assert any("FAILED at step" in line for line in lines[1:fallback])
    assert sandbox.proc.returncode == 0
