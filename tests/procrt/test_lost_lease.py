"""Every leader-elected process (`bind`, `certs controller`; `serve` does not elect) runs on a procrt Manager,
so a leader that loses its lease exits 1 at once, against the kube-apiserver test double. A command that
starts to elect fails `test_every_command_that_elects_is_covered` until it is added here."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import cluster_setup
from support.binder_harness import seed_cluster, wait_for

pytestmark = pytest.mark.slow  # each waits out a lease

CLI = str(Path(sys.executable).parent / "dra-capacity")


def _bind(kube_api: Any, tmp_path: Path) -> tuple[subprocess.Popen[str], str, str]:
    seed_cluster(kube_api, nodes=1)
    proc = subprocess.Popen(
        [
            CLI,
            "bind",
            "--kubeconfig",
            str(kube_api.kubeconfig_path),
            "--lease-namespace",
            "default",
            "--metrics-listen",
            "127.0.0.1:0",
            "--lease-duration",
            "3",
            "--renew-deadline",
            "2",
            "--retry-period",
            "0.5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, "default", "dra-capacity-binder"


def _certs_controller(kube_api: Any, tmp_path: Path) -> tuple[subprocess.Popen[str], str, str]:
    cluster_setup.seed_configs(kube_api)
    proc = cluster_setup.controller(kube_api, "pod-0", tmp_path / "tls", [])
    return proc, cluster_setup.NS, f"{cluster_setup.SECRET}-certs"


Start = Callable[[Any, Path], tuple[subprocess.Popen[str], str, str]]
ELECTED = {"bind_cmd.py": _bind, "certs_cmd.py": _certs_controller}
COMMANDS = Path(__file__).parents[2] / "dra_capacity"


def test_every_command_that_elects_is_covered() -> None:
    electing = {p.name for p in COMMANDS.glob("*_cmd.py") if ".elect(" in p.read_text()}
    assert electing == set(ELECTED)


@pytest.mark.parametrize("start", [_bind, _certs_controller], ids=["bind", "certs-controller"])
def test_a_leader_that_loses_its_lease_exits_one(kube_api: Any, tmp_path: Path, start: Start) -> None:
    proc, namespace, lease = start(kube_api, tmp_path)
    try:
        wait_for(
            "lease taken",
            lambda: kube_api.get("leases", lease, namespace=namespace),
            timeout=30,
        )
        kube_api.faults.fail("update", "leases", 500, times=0)
        started = time.monotonic()
        assert proc.wait(timeout=20) == 1
        assert time.monotonic() - started < 6
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None and "lease lost" in proc.stderr.read()
