#!/usr/bin/env python3
"""Regenerate tests/differential/data/realistic.jsonl: CEL selectors (as DeviceClasses) and ResourceSlice
shapes from upstream's test tables and public DRA drivers, each with its source (repository, path, ref), for
the differential to judge.

    .venv/bin/python scripts/realistic_inputs.py   # reads the Go module cache (`go mod download` the tags)

Upstream's tables are read from the module cache (k8s.io/kubernetes and the staging modules at the 1.38
pin: Go test tables, and scheduler_perf's DRA templates with `{{.Index}}` rendered as 0). The drivers'
selectors are in scripts/realistic_drivers.json and their slices in scripts/realistic_slices.json: copied
from their charts, examples and docs, or, where a driver builds its slices in Go, the shape that code
publishes (`note` says which), each with its repository, path and commit.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "differential" / "data" / "realistic.jsonl"
DRIVERS = ROOT / "scripts" / "realistic_drivers.json"
SLICES = ROOT / "scripts" / "realistic_slices.json"
MOD = Path.home() / "go" / "pkg" / "mod" / "k8s.io"
TAG = "v1.38.0-beta.0"
STAGING = "v0.38.0-beta.0"
# (module directory, its path in kubernetes/kubernetes, files or directories to read)
UPSTREAM = (
    (
        f"dynamic-resource-allocation@{STAGING}",
        "staging/src/k8s.io/dynamic-resource-allocation",
        ("cel", "structured"),
    ),
    (
        f"kubernetes@{TAG}",
        "",
        (
            "test/e2e/dra",
            "test/e2e_dra",
            "test/integration/dra",
            "pkg/scheduler/framework/plugins/dynamicresources",
            "pkg/apis/resource/validation",
            "pkg/registry/resource",
            "test/integration/scheduler_perf/dra",
        ),
    ),
)
# scheduler_perf's DRA templates: Go text/templates; those whose only placeholder is {{.Index}} are rendered.
PERF_TEMPLATES = "test/integration/scheduler_perf/dra/templates"
_PLACEHOLDER = re.compile(r"\{\{[^}]*\}\}")
_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"|`([^`]*)`')


def _selectors(text: str) -> list[str]:
    out = []
    for m in _LITERAL.finditer(text):
        if m.group(1) is not None:
            try:
                value = json.loads(f'"{m.group(1)}"')
            except json.JSONDecodeError:
                continue
        else:
            value = m.group(2)
        if "device." in value and len(value) < 4000 and not value.startswith(("spec.", "metadata")):
            out.append(value)
    return out


def _cel_expressions(obj: Any) -> list[str]:
    """Every `cel: {expression: ...}` in a parsed YAML document."""
    if isinstance(obj, dict):
        cel = obj.get("cel")
        own = [cel["expression"]] if isinstance(cel, dict) and isinstance(cel.get("expression"), str) else []
        return own + [e for v in obj.values() for e in _cel_expressions(v)]
    if isinstance(obj, list):
        return [e for v in obj for e in _cel_expressions(v)]
    return []


def _yaml_documents(path: Path) -> list[Any]:
    text = path.read_text(errors="replace").replace("{{.Index}}", "0")
    if _PLACEHOLDER.search(text):
        return []  # a template with loops or conditions: not rendered here
    try:
        return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except yaml.YAMLError:
        return []


def upstream() -> list[dict[str, object]]:
    found: dict[str, dict[str, object]] = {}
    for module, prefix, parts in UPSTREAM:
        base = MOD / module
        for part in parts:
            for path in sorted((base / part).rglob("*")):
                rel = path.relative_to(base).as_posix()
                if path.suffix == ".yaml":
                    texts = [e for d in _yaml_documents(path) for e in _cel_expressions(d)]
                elif path.suffix == ".go" and (
                    rel.endswith("_test.go") or rel.startswith("test/") or "allocatortesting" in rel
                ):
                    texts = _selectors(path.read_text(errors="replace"))
                else:
                    continue  # test tables only, not the error texts of the sources
                for expression in texts:
                    found.setdefault(
                        expression,
                        {
                            "repo": "kubernetes/kubernetes",
                            "path": f"{prefix}/{rel}".lstrip("/"),
                            "ref": TAG,
                        },
                    )
    return [{"expression": e, "source": s} for e, s in found.items()]


def drivers() -> list[dict[str, object]]:
    return json.loads(DRIVERS.read_text()) if DRIVERS.is_file() else []


def slices() -> list[tuple[dict[str, Any], dict[str, object]]]:
    """(spec, source) of every ResourceSlice shape: the drivers' file, then scheduler_perf's templates."""
    out = [(dict(e["spec"]), dict(e["source"])) for e in json.loads(SLICES.read_text())]
    base = MOD / f"kubernetes@{TAG}"
    for path in sorted((base / PERF_TEMPLATES).glob("resourceslice-*.yaml")):
        for doc in _yaml_documents(path):
            if doc.get("kind") == "ResourceSlice":
                source = {
                    "repo": "kubernetes/kubernetes",
                    "path": f"{PERF_TEMPLATES}/{path.name}",
                    "ref": TAG,
                }
                out.append((doc["spec"], source | {"note": "{{.Index}} rendered as 0; spec only"}))
    return out


def resource_slice(spec: dict[str, Any], source: dict[str, object]) -> dict[str, object]:
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    return {
        "source": source,
        "object": {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"realistic-slice-{digest}"},
            "spec": spec,
        },
    }


def device_class(expression: str, source: dict[str, object]) -> dict[str, object]:
    digest = hashlib.sha256(expression.encode()).hexdigest()[:12]
    return {
        "source": source,
        "object": {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": f"realistic-{digest}"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        },
    }


def main() -> int:
    rows = [device_class(str(r["expression"]), dict(r["source"])) for r in upstream() + drivers()]  # type: ignore[arg-type]
    rows += [resource_slice(spec, source) for spec, source in slices()]
    seen: set[str] = set()
    unique = []
    for row in rows:
        key = json.dumps(row["object"], sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(row)
    OUT.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in unique))
    for kind, what in (("DeviceClass", "selectors"), ("ResourceSlice", "ResourceSlice shapes")):
        mine = [r for r in unique if r["object"]["kind"] == kind]  # type: ignore[index]
        repos = {str(r["source"]["repo"]) for r in mine}  # type: ignore[index]
        print(f"{OUT.relative_to(ROOT)}: {len(mine)} {what} from {len(repos)} repositories")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
