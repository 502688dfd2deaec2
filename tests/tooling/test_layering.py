"""The layering contracts in pyproject.toml cover every module they are about: every module of the allocator
core (a new core module that the contract forgot could import the binding controller or the cluster client
unnoticed), and every top-level package but `kubeio` (which alone may import the `kubernetes` client)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _modules(package: str) -> set[str]:
    return {
        f"{package}.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / package).iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    }


def test_every_allocator_core_module_is_forbidden_to_import_the_binder_and_cluster_io() -> None:
    (contract,) = [c for c in _contracts() if "allocator.binder" in c.get("forbidden_modules", [])]
    assert {"kubeio", "kubernetes"} <= set(contract["forbidden_modules"])
    core = _modules("allocator") - {"allocator.binder"}
    assert core - set(contract["source_modules"]) == set()


def test_only_kubeio_imports_the_kubernetes_client() -> None:
    (contract,) = [c for c in _contracts() if c.get("forbidden_modules") == ["kubernetes"]]
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    roots = set(config["tool"]["importlinter"]["root_packages"])
    assert set(contract["source_modules"]) == roots - {"kubeio"}
