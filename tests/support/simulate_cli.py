"""`dra-capacity simulate` (and the other commands) run in-process by the tests: objects written as manifest
files, output captured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_capacity.cli import main

# The keys of a pod's entry in simulate's JSON, in the contract's order (docs/simulate.md).
POD_ENTRY_KEYS = [
    "namespace",
    "name",
    "result",
    "reason",
    "node",
    "claim",
    "extendedResourceClaimStatus",
    "containers",
]


def write_manifests(tmp_path: Path, name: str, *objs: Any) -> str:
    """Write `objs` (dicts, or models with `to_api()`) as one multi-document YAML file; return its path."""
    docs = [o if isinstance(o, dict) else o.to_api() for o in objs]
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`dra-capacity ARGV...`: exit code, stdout, stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`dra-capacity simulate ARGV...`: exit code, stdout, stderr."""
    return run_cli(capsys, "simulate", *argv)


def assert_unreadable_cluster_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *command: str
) -> None:
    """A kubeconfig that is not one ends `dra-capacity COMMAND` with exit 2, nothing on stdout and one
    `COMMAND: error:` line on stderr."""
    config = tmp_path / "kubeconfig"
    config.write_text("not: a kubeconfig\n")
    code, out, err = run_cli(capsys, *command, "--kubeconfig", str(config))
    assert (code, out) == (2, "")
    assert err.startswith(f"dra-capacity {' '.join(command)}: error: ") and err.count("\n") == 1
