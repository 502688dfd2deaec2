"""The inputs of the project's own validation tests, extracted by the recording plugin (record.py) into
`data/corpus.jsonl`, plus the public drivers' manifests and examples already in the repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from differential.record import KINDS

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "data" / "corpus.jsonl"
# Selectors from upstream's test tables and public drivers, each with its source
# (scripts/realistic_inputs.py).
REALISTIC = Path(__file__).resolve().parent / "data" / "realistic.jsonl"
MANIFESTS = ("docs/examples", "tests/allocator/data", "tests/binder/data")


def _objects_of(jsonl: Path) -> list[tuple[str, dict[str, Any]]]:
    """The (kind, object) of each line's `object` in a JSON-lines file."""
    objs = [json.loads(line)["object"] for line in jsonl.read_text().splitlines()]
    return [(obj["kind"], obj) for obj in objs]


def recorded() -> list[tuple[str, dict[str, Any]]]:
    return _objects_of(CORPUS)


def manifests() -> list[tuple[str, dict[str, Any]]]:
    """resource.k8s.io/v1 objects of the compared kinds in the repository's example and driver manifests."""
    out = []
    for base in MANIFESTS:
        for path in sorted((ROOT / base).rglob("*.y*ml")) if (ROOT / base).is_dir() else []:
            try:
                docs = list(yaml.safe_load_all(path.read_text()))
            except yaml.YAMLError:
                continue
            for doc in docs:
                items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
                for obj in items or []:
                    if (
                        isinstance(obj, dict)
                        and obj.get("kind") in KINDS
                        and obj.get("apiVersion") == "resource.k8s.io/v1"
                    ):
                        out.append((obj["kind"], obj))
    return out


def realistic() -> list[tuple[str, dict[str, Any]]]:
    """The realistic inputs: objects no random generator draws, each line with its `source`."""
    return _objects_of(REALISTIC)


FLOOD_BYTES = 300 * 1024


def corpus_objects() -> list[tuple[str, dict[str, Any]]]:
    """Every extracted object judged by the differential (v1 only: the server serves no other version).
    Objects over 300 KiB are left out: the one such input, a flood of thousands of invalid labels, tests the
    webhook's bounded answer (docs/divergences.md), and the API server takes a minute over it."""
    return [
        (k, o)
        for k, o in recorded() + manifests() + realistic()
        if o.get("apiVersion") == "resource.k8s.io/v1" and len(json.dumps(o)) <= FLOOD_BYTES
    ]
