"""The realistic differential inputs (data/realistic.jsonl, scripts/realistic_inputs.py) name their source."""

from __future__ import annotations

import json

from differential.corpus import REALISTIC, corpus_objects, realistic


def test_every_realistic_input_names_its_repository_path_and_ref() -> None:
    rows = [json.loads(line) for line in REALISTIC.read_text().splitlines()]
    assert len(rows) >= 100
    for row in rows:
        assert {"repo", "path", "ref"} <= set(row["source"]), row
        assert row["object"]["kind"] == "DeviceClass"


def test_the_realistic_inputs_are_part_of_the_corpus() -> None:
    names = {o.get("metadata", {}).get("name") for _, o in corpus_objects()}
    assert {o["metadata"]["name"] for _, o in realistic()} <= names
