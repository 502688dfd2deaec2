#!/usr/bin/env python3
"""Regenerate tests/differential/data/realistic.jsonl: CEL selectors from upstream's test tables and public
DRA drivers, each with its source (repository, path, ref), as DeviceClasses the differential judges.

    python3 scripts/realistic_inputs.py   # reads the Go module cache (`go mod download` the tags first)

Upstream's tables are read from the module cache (k8s.io/kubernetes and the staging modules at the 1.38
pin); the drivers' selectors are in scripts/realistic_drivers.json (copied from their charts, examples and
docs, each with its repository, path and commit). Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "differential" / "data" / "realistic.jsonl"
DRIVERS = ROOT / "scripts" / "realistic_drivers.json"
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
        ),
    ),
)
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


def upstream() -> list[dict[str, object]]:
    found: dict[str, dict[str, object]] = {}
    for module, prefix, parts in UPSTREAM:
        base = MOD / module
        for part in parts:
            for path in sorted((base / part).rglob("*.go")):
                rel = path.relative_to(base).as_posix()
                if not (rel.endswith("_test.go") or rel.startswith("test/") or "allocatortesting" in rel):
                    continue  # test tables only, not the error texts of the sources
                for expression in _selectors(path.read_text(errors="replace")):
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
    seen: set[str] = set()
    unique = []
    for row in rows:
        key = json.dumps(row["object"], sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(row)
    OUT.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in unique))
    repos = {str(r["source"]["repo"]) for r in unique}  # type: ignore[index]
    print(f"wrote {OUT.relative_to(ROOT)}: {len(unique)} selectors from {len(repos)} repositories")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
