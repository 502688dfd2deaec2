"""Running `dra-capacity sandbox` as a user does, and the README's steps against it (tests/e2e and bench/)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "dra-capacity")
README_KUBECONFIG = "$PWD/.run/kubeconfig"


def readme_steps(marker: str = "sandbox-steps") -> list[str]:
    """The commands of the README's `sandbox-steps` block (or another `marker`'s), in order."""
    text = (ROOT / "README.md").read_text()
    block = text.split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]
    body = block.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in body.splitlines() if line.strip()]


@dataclass
class Sandbox:
    """A running `dra-capacity sandbox --dir DIR`: what it printed, and when."""

    dir: Path
    proc: subprocess.Popen[str]
    started: float
    lines: list[str] = field(default_factory=list)
    ready_at: float = 0.0

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def printed_steps(self) -> list[str]:
        """The next steps it printed (the indented lines after `Next`), up to the sizes note."""
        start = next(i for i, line in enumerate(self.lines) if "Next," in line) + 1
        steps = []
        for line in self.lines[start:]:
            if not line.startswith("  ") or line.startswith("  ("):
                break
            steps.append(line[2:])
        return steps

    def pid(self, name: str) -> int:
        found = next(
            re.search(rf"{name} \(PID (\d+)\)", line) for line in self.lines if f"{name} (PID" in line
        )
        assert found
        return int(found.group(1))

    def metrics_url(self) -> str:
        found = next(
            re.search(r"bind metrics (http://\S+)", line) for line in self.lines if "bind metrics" in line
        )
        assert found
        return found.group(1)

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        }

    def stop(self, timeout: float = 60) -> list[str]:
        """Ctrl-C (SIGINT to the sandbox process) and what it printed after."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        time.sleep(0.2)  # the reader thread drains stdout
        return self.lines


def start_sandbox(
    directory: Path, *flags: str, timeout: float = 180, build: bool = False, env: dict[str, str] | None = None
) -> Sandbox:
    """Start it and return once it printed its next steps (or raise with what it printed). Without `build`,
    `--no-build`: a test never starts a 10-minute build."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [CLI, "sandbox", "--dir", str(directory), *([] if build else ["--no-build"]), *flags],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    sandbox = Sandbox(directory, proc, started)
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            sandbox.lines.append(line.rstrip("\n"))
            if line.startswith("Ctrl-C stops everything"):
                sandbox.ready_at = time.monotonic()
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(timeout) or not sandbox.ready_at:
        sandbox.stop()
        raise AssertionError("the sandbox never printed its next steps:\n" + "\n".join(sandbox.lines))
    return sandbox


def run_step(sandbox: Sandbox, line: str) -> subprocess.CompletedProcess[str]:
    """One README line, in bash at the checkout, with the sandbox's kubeconfig for `$PWD/.run/kubeconfig`."""
    command = line.replace(README_KUBECONFIG, str(sandbox.kubeconfig))
    exports = f"export KUBECONFIG={sandbox.kubeconfig}; export PATH={Path(sys.executable).parent}:$PATH; "
    return subprocess.run(
        ["bash", "-c", exports + command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
