"""Each command imports only what it runs: help and version never load the server, the CEL engine or the
cluster client (bench/startup.py measures the time)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("aiohttp", "prometheus_client", "cryptography", "cel_expr_python", "kubernetes", "pydantic")

_PROBE = """
import sys
from dra_capacity.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[0].split(",")))
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
"""


def _heavy_modules_after(*argv: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.replace("sys.argv[0]", repr(",".join(HEAVY))), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = next(x for x in proc.stderr.splitlines() if x.startswith("HEAVY="))
    return [m for m in line.removeprefix("HEAVY=").split(",") if m]


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("simulate", "--help"), ("top", "--help"), ("--version",), ()],
    ids=["help", "simulate-help", "top-help", "version", "no-command"],
)
def test_help_imports_no_server_cel_or_cluster_client(argv: tuple[str, ...]) -> None:
    assert _heavy_modules_after(*argv) == []


def test_the_probe_sees_heavy_imports_when_they_happen() -> None:
    # serve --help must build the server's flags, so it imports the server: the probe must notice.
    assert "aiohttp" in _heavy_modules_after("serve", "--help")
