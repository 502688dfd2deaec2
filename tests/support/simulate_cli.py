"""`dra-capacity simulate` run in-process by the tests: objects written as manifest files, output captured."""

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


def run_simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`dra-capacity simulate ARGV...`: exit code, stdout, stderr."""
    code = main(["simulate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
