"""The field-schema proof in C (resourceapi.schema_structs) says "clean" exactly when the walk in Python
(resourceapi.apischema.walk_fields) reports nothing: on the project's example clusters and on objects
generated from them by wrong types, nulls, unknown, missing and extra fields. So the fast path changes no
report, only its cost."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resourceapi.apischema import check_fields, known_kind, walk_fields
from resourceapi.documents import load_documents
from resourceapi.schema_structs import proves_clean

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


# a Helm values file beside manifests, there to show what `validate -f DIR` says about it (docs/validation.md)
NOT_MANIFESTS = {EXAMPLES / "ci-manifests" / "values.yaml"}


def _seeds() -> list[dict[str, Any]]:
    objs = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        if path in NOT_MANIFESTS:
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
        assert proves_clean(_key(obj), obj)


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
        (("spec", "nodeName"), True),  # a string field takes numbers (quantities), never booleans
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
def test_each_rule_of_the_walk_fails_the_proof(where: tuple[str, ...], value: Any) -> None:
    obj = copy.deepcopy(POD)
    assert _walk_clean(obj) and proves_clean("v1/Pod", obj)
    target = obj
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    assert not _walk_clean(obj)
    assert not proves_clean("v1/Pod", obj)


def test_null_is_absent_but_for_a_required_field() -> None:
    obj = copy.deepcopy(POD)
    obj["spec"]["nodeName"] = None
    obj["spec"]["containers"].append(None)
    obj["metadata"]["labels"]["x"] = None
    assert _walk_clean(obj) and proves_clean("v1/Pod", obj)
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"config": [{"opaque": {"driver": "d", "parameters": None}}]}},
    }
    assert not _walk_clean(claim)  # `parameters` is required and free-form: any value but null
    assert not proves_clean(_key(claim), claim)
    claim["spec"]["devices"]["config"][0]["opaque"]["parameters"] = {"any": ["thing"]}
    assert _walk_clean(claim) and proves_clean(_key(claim), claim)


def test_sets_and_pairs_from_yaml_are_left_to_the_walk() -> None:
    """msgspec takes a tuple or a set where a list goes; the walk does not (the API server reads JSON). YAML
    gives them only through PyYAML's constructor, and such documents are not `plain`."""
    obj = copy.deepcopy(POD)
    obj["spec"]["containers"] = tuple(obj["spec"]["containers"])
    assert proves_clean("v1/Pod", obj)  # why the gate is needed
    report = check_fields("v1", "Pod", obj, plain=False)
    assert report.problem is not None and report.problem.path == "spec.containers"
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: !!pairs [{name: c}]\n"
    (doc,) = load_documents(text, "p.yaml")
    assert not doc.plain
    assert check_fields("v1", "Pod", doc.obj, plain=doc.plain).problem is not None
    (json_doc,) = load_documents(json.dumps(POD), "p.json")
    assert json_doc.plain


# --- generated objects --------------------------------------------------------------------------------------

_SCALARS: list[Any] = [None, True, False, 0, 7, -1, 2**70, 1.5, 0.0, "", "x", "1Gi"]
_VALUES = st.sampled_from(
    [*_SCALARS, [], [None], ["a"], [1], {}, {"a": "b"}, {"name": "n"}, [{"name": "n"}], {"string": "s"}]
)
_KEYS = st.sampled_from(["name", "zz", "spec", "status", "type", "value", "string", "int", "key", "devices"])


def _locations(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _locations(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _locations(v, (*path, i))
    return found


@st.composite
def _mutated(draw: st.DrawFn) -> dict[str, Any]:
    obj = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        locations = [p for p in _locations(obj) if len(p) > 0 and p[0] not in ("apiVersion", "kind")]
        if not locations:
            break
        path = draw(st.sampled_from(locations))
        parent: Any = obj
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "add", "delete"]))
        if action == "replace":
            parent[path[-1]] = copy.deepcopy(draw(_VALUES))
        elif action == "add" and isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(_KEYS)] = copy.deepcopy(draw(_VALUES))
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
    return obj


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_the_proof_agrees_with_the_walk_on_generated_objects(obj: dict[str, Any]) -> None:
    assert proves_clean(_key(obj), obj) == _walk_clean(obj)
