"""The field-schema walk (resourceapi.manifests.apischema): the project's example clusters are clean, and
each of its
rules (types, nulls, required, unknown fields, YAML's sets and pairs) reports what it should."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from resourceapi.manifests.apischema import check_fields, known_kind, walk_fields
from resourceapi.manifests.documents import load_documents

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def _seeds() -> list[dict[str, Any]]:
    objs = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        if path.name == "values.yaml":  # Helm values, not a manifest
            continue
        for doc in load_documents(path.read_text(), path.name):
            if known_kind(doc.api_version, doc.kind):
                objs.append(doc.obj)
    return objs


SEEDS = _seeds()


def _key(obj: dict[str, Any]) -> str:
    return f"{obj.get('apiVersion')}/{obj.get('kind')}"


def _walk_clean(obj: dict[str, Any]) -> bool:
    report = walk_fields(str(obj["apiVersion"]), str(obj["kind"]), obj)
    return not report.unknown and report.problem is None


def test_the_examples_cover_the_kinds_and_are_clean() -> None:
    kinds = {_key(o) for o in SEEDS}
    assert {"v1/Pod", "v1/Node", "resource.k8s.io/v1/ResourceSlice"} <= kinds
    assert "resource.k8s.io/v1/DeviceClass" in kinds
    for obj in SEEDS:
        assert _walk_clean(obj), obj


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": 2}}}]},
    "status": {"conditions": [{"status": "False"}]},  # `type` is required, but not under status
}


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("spec", "nodeName"), True),  # a string field takes neither booleans
        (("spec", "nodeName"), 1),  # nor numbers (a quantity does)
        (("spec", "priority"), 1.0),  # an integer field takes no float
        (("spec", "priority"), True),
        (("spec", "hostNetwork"), 1),
        (("spec", "hostNetwork"), "true"),  # nor does an integer or boolean field take a string
        (("spec", "priority"), "1"),
        (("spec", "containers"), None),  # required
        (("spec", "containers"), {}),
        (("spec", "nodeNmae"), "n"),  # unknown
        (("metadata", "labels"), ["a"]),
        (("metadata", "labels", "a"), False),
    ],
)
def test_each_rule_of_the_walk_reports(where: tuple[str, ...], value: Any) -> None:
    obj = copy.deepcopy(POD)
    assert _walk_clean(obj)
    target = obj
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    assert not _walk_clean(obj)


def test_null_is_absent_but_for_a_required_field() -> None:
    obj = copy.deepcopy(POD)
    obj["spec"]["nodeName"] = None
    obj["spec"]["containers"].append(None)
    obj["metadata"]["labels"]["x"] = None
    assert _walk_clean(obj)
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"config": [{"opaque": {"driver": "d", "parameters": None}}]}},
    }
    assert not _walk_clean(claim)  # `parameters` is required and free-form: any value but null
    claim["spec"]["devices"]["config"][0]["opaque"]["parameters"] = {"any": ["thing"]}
    assert _walk_clean(claim)


def test_sets_and_pairs_from_yaml_are_not_lists() -> None:
    """A tuple or a set where a list goes is a problem (the API server reads JSON); YAML gives them through
    PyYAML's constructor (`!!pairs`, `!!set`)."""
    obj = copy.deepcopy(POD)
    obj["spec"]["containers"] = tuple(obj["spec"]["containers"])
    report = check_fields("v1", "Pod", obj)
    assert report.problem is not None and report.problem.path == "spec.containers"
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: !!pairs [{name: c}]\n"
    (doc,) = load_documents(text, "p.yaml")
    assert check_fields("v1", "Pod", doc.obj).problem is not None
    (json_doc,) = load_documents(json.dumps(POD), "p.json")
    assert check_fields("v1", "Pod", json_doc.obj).problem is None
