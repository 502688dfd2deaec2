"""The layering contract in pyproject.toml covers every module of the allocator core (a new core module that
the contract forgot could import the binding controller unnoticed)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_allocator_core_module_is_forbidden_to_import_the_binder() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c.get("forbidden_modules") == ["allocator.binder"]]
    listed = set(contract["source_modules"])
    core = {
        f"allocator.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "allocator").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    } - {"allocator.binder"}
    assert core - listed == set()
