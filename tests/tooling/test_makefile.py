"""`make run &` then `make test`: two set-ups at once build the virtualenv once (the Makefile's flock), with a
stand-in interpreter that records what it is asked to do (no real venv, no network)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/sh
# stands in for `python3 -m venv DIR`: slow, so that a second set-up overlaps the first
echo "venv $*" >> "{log}"
sleep 2
mkdir -p "$3/bin"
cat > "$3/bin/python" <<'INNER'
#!/bin/sh
echo "python $*" >> "{log}"
INNER
chmod +x "$3/bin/python"
"""


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("flock") is None, reason="needs make, flock")
def test_concurrent_setups_build_the_venv_once(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON.format(log=log))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    venv = tmp_path / "venv"
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), "install", f"VENV={venv}", f"PYTHON={fake}"]
    env = {**os.environ, "MAKEFLAGS": ""}
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    second = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    outputs = [p.communicate(timeout=60)[0] for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outputs
    calls = log.read_text().splitlines()
    assert [c for c in calls if c.startswith("venv ")] == [f"venv -m venv {venv}"]
    assert sum("-e .[dev]" in c for c in calls) == 1
    assert (venv / ".installed-stamp").exists()
    assert any(f"{venv} is up to date" in out for out in outputs)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_image_push_without_registry_says_what_to_set() -> None:
    env = {**os.environ, "MAKEFLAGS": ""}
    proc = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "image-push"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode != 0
    assert (
        "make image-push: set REGISTRY to where the cluster pulls from, for example make image-push "
        "REGISTRY=registry.example.com/team"
    ) in proc.stderr
