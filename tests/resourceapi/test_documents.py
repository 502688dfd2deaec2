"""Manifest streams load like kubectl reads them; bad input is a DocumentError naming source and document."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from resourceapi.manifests.documents import DocumentError, load_documents
from resourceapi.manifests.yaml_events import MAX_DEPTH

CLASS_A = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: a\n"
CLASS_B = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: b\n"


def test_single_yaml_document() -> None:
    (doc,) = load_documents(CLASS_A, "a.yaml")
    assert (doc.kind, doc.api_version, doc.name, doc.where) == (
        "DeviceClass",
        "resource.k8s.io/v1",
        "a",
        "a.yaml: document 1",
    )


def test_multi_document_stream_keeps_order_and_numbers() -> None:
    docs = load_documents(CLASS_A + "---\n" + CLASS_B, "s.yaml")
    assert [(d.name, d.index) for d in docs] == [("a", 1), ("b", 2)]


def test_empty_documents_are_skipped_and_not_numbered() -> None:
    docs = load_documents("---\n---\n" + CLASS_A + "---\n# comment only\n---\n" + CLASS_B, "s.yaml")
    assert [(d.name, d.index) for d in docs] == [("a", 1), ("b", 2)]


@pytest.mark.parametrize("text", ["", "\n", "# nothing\n", "---\n"])
def test_empty_stream_has_no_documents(text: str) -> None:
    assert load_documents(text, "e.yaml") == []


def test_list_is_flattened_with_item_positions() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- kind: DeviceClass\n  metadata: {name: a}\n- kind: Pod\n"
    docs = load_documents(text, "l.yaml")
    assert [(d.kind, d.item, d.where) for d in docs] == [
        ("DeviceClass", 0, "l.yaml: document 1, items[0]"),
        ("Pod", 1, "l.yaml: document 1, items[1]"),
    ]


def test_typed_list_is_flattened() -> None:
    text = "kind: DeviceClassList\nitems:\n- kind: DeviceClass\n  metadata: {name: a}\n"
    assert [d.name for d in load_documents(text, "l.yaml")] == ["a"]


def test_empty_list_gives_no_documents() -> None:
    assert load_documents("kind: List\nitems: []\n", "l.yaml") == []


def test_json_document() -> None:
    (doc,) = load_documents(
        '{"apiVersion": "v1", "kind": "DeviceClass", "metadata": {"name": "j"}}', "j.json"
    )
    assert (doc.kind, doc.name) == ("DeviceClass", "j")


@pytest.mark.parametrize(
    ("text", "finite"),
    [
        ('{"kind": "A", "x": 1.5, "y": 1e308, "z": null}', True),
        ('{"kind": "A", "x": NaN}', False),
        ('{"kind": "A", "x": Infinity}', False),
        ('{"kind": "A", "x": -Infinity}', False),
        ('{"kind": "A", "x": 1e400}', False),  # beyond the double range: json reads an infinity
        ('{"kind": "A"}\n{"kind": "B", "x": -1e999}', False),  # the stream's documents together
        ('{"kind": "A", "x": 1e400, "n": 123456789012345678901234567890}', False),  # the exact reader's
        ('{"kind": "A", "x": 1.5, "n": 123456789012345678901234567890}', True),
        ('{"kind": "A"}\n{"kind": "B", "x": 2e9}', True),
        ("kind: A\nx: 1\n", False),  # YAML's numbers are not looked at
    ],
)
def test_a_json_reader_says_whether_every_number_is_finite(text: str, finite: bool) -> None:
    assert {d.finite for d in load_documents(text, "f.json")} == {finite}


def test_json_indented_with_tabs_loads_as_kubectl_does() -> None:
    text = '{\n\t"kind": "DeviceClass",\n\t"metadata": {\n\t\t"name": "t"\n\t}\n}\n'
    assert [d.name for d in load_documents(text, "t.json")] == ["t"]


def test_concatenated_json_objects_are_a_stream() -> None:
    docs = load_documents('{"kind": "A", "metadata": {"name": "1"}}\n{"kind": "B"}\n', "s.json")
    assert [(d.kind, d.index) for d in docs] == [("A", 1), ("B", 2)]


def test_json_list_is_flattened() -> None:
    docs = load_documents('{"kind": "List", "items": [{"kind": "A"}, {"kind": "B"}]}', "l.json")
    assert [d.kind for d in docs] == ["A", "B"]


def test_yaml_flow_mapping_still_loads() -> None:
    assert [d.kind for d in load_documents("{kind: A}", "f.yaml")] == ["A"]


def test_timestamps_stay_strings() -> None:
    (doc,) = load_documents("kind: A\nmetadata:\n  creationTimestamp: 2024-01-01T00:00:00Z\n", "t.yaml")
    assert doc.obj["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"


def test_name_falls_back_to_generate_name() -> None:
    (doc,) = load_documents("kind: A\nmetadata:\n  generateName: gpu-\n", "g.yaml")
    assert doc.name == "gpu-"


def test_name_is_empty_without_metadata() -> None:
    (doc,) = load_documents("kind: A\n", "n.yaml")
    assert doc.name == ""


def errors_of(text: str, source: str = "bad.yaml") -> str:
    with pytest.raises(DocumentError) as exc:
        load_documents(text, source)
    return str(exc.value)


def test_invalid_yaml_names_source_line_and_column() -> None:
    assert errors_of("kind: A\n  x: : :\n- y\n").startswith("bad.yaml: not valid YAML or JSON (line ")


def test_invalid_json_names_source_line_and_column() -> None:
    message = errors_of('{\n\t"kind": "A",\n\t"x": ]\n}\n', "bad.json")
    assert message == "bad.json: not valid YAML or JSON (line 3, column 7): Expecting value"


def test_json_that_fails_but_is_valid_yaml_loads_as_yaml_as_kubectl_does() -> None:
    # k8s.io/apimachinery/pkg/util/yaml/decoder.go YAMLOrJSONDecoder: JSON first, then YAML; the JSON error
    # is reported only when both fail. A flow mapping with tabs and an empty value is valid YAML.
    assert load_documents('{\n\t"kind": "A",\n\t"x": \n}\n', "f.json")[0].obj == {"kind": "A", "x": None}


def test_non_object_document_names_document_and_type() -> None:
    assert errors_of(CLASS_A + "---\n- a\n- b\n") == "bad.yaml: document 2: expected an object, got a list"


@pytest.mark.parametrize(
    ("text", "kind"), [("just text\n", "a string"), ("42\n", "a number"), ("true\n", "a boolean")]
)
def test_scalar_document_is_rejected(text: str, kind: str) -> None:
    assert errors_of(text) == f"bad.yaml: document 1: expected an object, got {kind}"


@pytest.mark.parametrize("text", ["metadata: {name: a}\n", "kind: ''\n", "kind: 3\n"])
def test_document_without_kind_is_rejected(text: str) -> None:
    assert errors_of(text) == "bad.yaml: document 1: missing field 'kind'"


def test_list_items_must_be_a_list() -> None:
    assert errors_of("kind: List\nitems: 3\n") == "bad.yaml: document 1: field 'items' must be a list"


def test_list_item_without_kind_names_the_item() -> None:
    text = "kind: List\nitems:\n- kind: A\n- metadata: {}\n"
    assert errors_of(text) == "bad.yaml: document 1, items[1]: expected an object with 'kind'"


def test_one_bad_document_rejects_the_whole_stream() -> None:
    with pytest.raises(DocumentError):
        load_documents(CLASS_A + "---\n[unclosed\n", "s.yaml")


def test_unsafe_yaml_tags_are_refused() -> None:
    assert "could not determine a constructor" in errors_of("kind: A\nx: !!python/object:os.system\n")


@pytest.mark.parametrize(
    "text", ["[" * 5000 + "]" * 5000, '{"kind": "A", "x": ' + "[" * 5000 + "]" * 5000 + "}"]
)
def test_absurdly_deep_nesting_is_an_error_not_a_crash(text: str) -> None:
    assert errors_of(text).endswith("nested too deeply")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("kind: Pod\nmetadata: {name: a}\nmetadata: {name: b}\n", "(line 3, column 1)"),
        ("kind: Pod\nspec: {a: 1, a: 2}\n", "(line 2, column 14)"),
        ('{"kind": "Pod", "kind": "Node"}', "(document from line 1)"),
    ],
    ids=["yaml-top-level", "yaml-nested-flow", "json"],
)
def test_duplicate_keys_are_an_error_naming_the_key(text: str, where: str) -> None:
    with pytest.raises(DocumentError) as exc:
        load_documents(text, "dup.yaml")
    assert str(exc.value).startswith(f"dup.yaml: not valid YAML or JSON {where}: key ")
    assert "already set in map" in str(exc.value)


# --- the libyaml event reader keeps PyYAML's safe-loader results and errors ---------------------------------

MIXED = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: m, creationTimestamp: 2026-01-01T00:00:00Z}
data:
  plain: text
  quoted: "123"
  single: 'yes'
  int: 42
  octal: 0o17
  hex: 0x1F
  float: 1.5
  exp: 6.02e+23
  inf: .inf
  bool: true
  yes11: yes
  null1: null
  null2: ~
  empty:
  date: 2026-01-01
  folded: >
    a
    b
  literal: |
    x
  nested: [1, [2, {a: b}], {c: [d]}]
  explicit: !!str 12
  anchor: &a {k: v}
  alias: *a
  ? complex
  : key
  3: int key
"""


def _pyyaml_reference(text: str) -> Any:
    """PyYAML's own safe loader, minus implicit timestamps: what the loader promised before libyaml."""

    class Reference(yaml.SafeLoader):
        pass

    Reference.yaml_implicit_resolvers = {
        k: [(t, rx) for t, rx in v if t != "tag:yaml.org,2002:timestamp"]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return list(yaml.load_all(text, Loader=Reference))


def test_event_reader_builds_what_pyyaml_builds() -> None:
    [doc] = load_documents(MIXED, "m.yaml")
    assert [doc.obj] == _pyyaml_reference(MIXED)
    assert doc.obj["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert doc.obj["data"]["date"] == "2026-01-01"
    assert doc.obj["data"]["alias"] is doc.obj["data"]["anchor"]


def test_merge_keys_and_set_tags_still_load() -> None:
    text = "kind: A\nbase: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\ntags: !!set {p, q}\n"
    [doc] = load_documents(text, "m.yaml")
    assert doc.obj["derived"] == {"x": 1, "y": 3}
    assert doc.obj["tags"] == {"p", "q"}


def test_duplicate_keys_under_merge_fallback_are_still_refused() -> None:
    text = "kind: A\nbase: &b {x: 1}\nd: {<<: *b, z: 1, z: 2}\n"
    assert "already set in map" in errors_of(text)


@pytest.mark.parametrize(
    "text",
    [
        "kind: A\nx: " + "[" * 200_000 + "]" * 200_000 + "\n",
        "kind: A\nx:\n" + "- " * 100_000 + "x\n",
        "[" * 600 + "]" * 600,
    ],
    ids=["flow-200k", "block-100k", "just-over-the-limit"],
)
def test_deep_yaml_is_refused_before_libyaml_can_overflow_the_stack(text: str) -> None:
    assert errors_of(text).endswith("nested too deeply")


def test_deep_yaml_under_merge_fallback_is_refused_too() -> None:
    text = "kind: A\nb: &b {x: 1}\nd: {<<: *b}\nx: " + "[" * 200_000 + "]" * 200_000 + "\n"
    assert errors_of(text).endswith("nested too deeply")


def test_nesting_up_to_the_limit_loads() -> None:
    depth = MAX_DEPTH - 1  # the document's own mapping is one level
    [doc] = load_documents("kind: A\nx: " + "[" * depth + "]" * depth + "\n", "d.yaml")
    value = doc.obj["x"]
    for _ in range(depth - 1):
        value = value[0]
    assert value == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: A\na: *nope\n", "found undefined alias"),
        ("kind: A\na: &x 1\nb: &x 2\n", "found duplicate anchor 'x'"),
        ("kind: A\nr: &r [*r]\n", "found a recursive alias"),
        ("kind: A\n? [a]\n: 1\n", "found unhashable key"),
        ("kind: A\n1: a\n1: b\n", "key 1 already set in map"),
        ("kind: A\nx: !foo bar\n", "could not determine a constructor for the tag '!foo'"),
    ],
)
def test_yaml_structure_errors_name_the_line(text: str, message: str) -> None:
    error = errors_of(text)
    assert error.startswith("bad.yaml: not valid YAML or JSON (line ")
    assert message in error


def test_anchors_do_not_leak_between_documents() -> None:
    assert "found undefined alias" in errors_of("kind: A\na: &x 1\n---\nkind: B\nb: *x\n")
