"""The import-linter contracts in pyproject.toml name packages, not modules; what keeps them complete is that
the allocator's top level holds packages only (a new module goes into the layer it belongs to), and that every
top-level package but `kubeio` is forbidden the `kubernetes` client."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_allocator_top_level_holds_only_its_layers() -> None:
    loose = sorted(p.name for p in (ROOT / "allocator").glob("*.py") if p.name != "__init__.py")
    assert loose == []


def test_only_kubeio_imports_the_kubernetes_client() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c.get("forbidden_modules") == ["kubernetes"]]
    assert set(contract["source_modules"]) == set(config["root_packages"]) - {"kubeio"}
