"""The JSON reader's fast path (orjson plus a duplicate-key certificate) answers exactly as the exact reader
(json with a duplicate-refusing hook) does: the same objects, and every duplicate key still refused."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resourceapi import documents
from resourceapi.documents import DocumentError, load_documents


def exact(text: str) -> list[Any]:
    """The exact reader alone (the fast path switched off)."""
    original = documents._single_json_document
    documents._single_json_document = lambda _text, _numbers: None  # type: ignore[assignment]
    try:
        return [(d.obj, d.finite) for d in load_documents(text, "x.json")]
    finally:
        documents._single_json_document = original  # type: ignore[assignment]


def outcome(load: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", load(text)
    except DocumentError as exc:
        return "error", str(exc)


def fast_or_exact(text: str) -> list[Any]:
    return [(d.obj, d.finite) for d in load_documents(text, "x.json")]


@pytest.mark.parametrize(
    "text",
    [
        '{"kind": "A", "a": 1, "a": 2}',
        '{"kind": "A", "m": {"x": 1, "y": {"z": [1, {"q": 1, "q": 1}]}}}',
        '{"kind": "A", "a" : 1, "a":2}',
        '{"kind": "A",\n"a"\n:\n1,\t"a"\t: 2}',
        '{"kind": "A", "a\\"": 1, "a\\"": 2}',
        '{"kind": "A", "a\\\\": 1, "a\\\\": 2}',
        '{"kind": "A", "e": "x ? y : z", "a": 1, "a": 2}',
        '{"kind": "A", "s": "{\\"k\\":1,\\"k\\":2}", "d": 1, "d": 2}',
        '{"kind": "A", "": 1, "": 2}',
        '{"kind": "A", "\\u0061": 1, "a": 2}',
        '{"kind": "A", "a": "\\u003a", "a": 1}',
        '{"kind": "A", "a": 1, "a": "\\u003A"}',
    ],
    ids=[
        "top",
        "deep",
        "space-before-colon",
        "whitespace-runs",
        "escaped-quote-in-key",
        "backslash-ending-key",
        "ternary-in-a-string",
        "json-in-a-string",
        "empty-key",
        "escaped-spelling",
        "escaped-colon",
        "escaped-colons-balancing-a-dropped-value",
    ],
)
def test_every_duplicate_key_is_still_refused(text: str) -> None:
    assert outcome(fast_or_exact, text)[0] == "error"
    assert outcome(fast_or_exact, text) == outcome(exact, text)
    assert "already set in map" in outcome(fast_or_exact, text)[1]


@pytest.mark.parametrize(
    "text",
    [
        '{"kind": "A", "s": "{\\"k\\":1,\\"k\\":2}"}',
        '{"kind": "A", "e": "x ? y : z", "f": "a\\":b"}',
        '{"kind": "A", "n": NaN}',
        '{"kind": "A", "big": 123456789012345678901234567890}',
        '{"kind": "A", "s": "\\ud800"}',
        '{"kind": "A"}{"kind": "B"}',
        '{"kind": "A", "k\\\\": 1, "k": 2}',
    ],
    ids=["json-in-a-string", "colons-in-strings", "nan", "big-int", "lone-surrogate", "stream", "backslash"],
)
def test_what_the_fast_path_passes_on_reads_as_before(text: str) -> None:
    assert outcome(fast_or_exact, text) == outcome(exact, text)
    assert outcome(fast_or_exact, text)[0] == "ok"


def test_a_kubectl_dump_takes_the_fast_path() -> None:
    dump = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p{i}",
                    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"a":1,"b":"c"}'},
                    "labels": {"expr": "a >= 1 && b < 2"},
                },
                "spec": {"containers": [{"name": "c", "image": "registry.example/app:1.4"}]},
            }
            for i in range(3)
        ],
    }
    text = json.dumps(dump, indent=4)
    assert documents._single_json_document(text, documents._Numbers()) == [dump]
    # Go's encoder (kubectl -o json) escapes <, > and & in strings
    go_style = text.replace(">", "\\u003e").replace("<", "\\u003c").replace("&", "\\u0026")
    assert documents._single_json_document(go_style, documents._Numbers()) == [dump]


keys = st.sampled_from(["a", "b", "kind", 'a"', "a\\", "x:y", " ", ""])
scalars = st.one_of(
    st.integers(-5, 5),
    st.integers(),  # beyond 64 bits too
    st.floats(allow_nan=False, allow_infinity=False),  # read as `json` reads them, every digit
    st.booleans(),
    st.none(),
    st.sampled_from(["v", 'q"', "t : u", "\\", "\u00e9\U0001f600", "\x1f"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(keys, inner), max_size=4),
    max_leaves=12,
)


def render(value: Any, sep: str) -> str:
    """JSON text of `value`, where a list of (key, value) pairs is an object written with those pairs as they
    are (duplicates included), `sep` between a key and its colon."""
    if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
        return "{" + ", ".join(f"{json.dumps(k)}{sep}: {render(v, sep)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(render(v, sep) for v in value) + "]"
    return json.dumps(value)


@settings(max_examples=400, deadline=None)
@given(pairs=st.lists(st.tuples(keys, values), max_size=5), sep=st.sampled_from(["", " ", "\n", "\t "]))
def test_the_fast_path_answers_as_the_exact_reader(pairs: list[tuple[str, Any]], sep: str) -> None:
    text = render([("kind", "A"), *pairs], sep)
    assert outcome(fast_or_exact, text) == outcome(exact, text)


@settings(max_examples=600, deadline=None)
@given(number=st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,3})?\Z"))
def test_every_number_is_read_as_json_reads_it(number: str) -> None:
    """orjson's reading of a number as written (long mantissas, exponents out of range) is `json`'s, to the
    last bit, or it declines and the exact reader reads it."""
    text = f'{{"kind": "A", "n": {number}, "l": [{number}]}}'
    fast, slow = outcome(fast_or_exact, text), outcome(exact, text)
    assert fast == slow
    if fast[0] == "ok":
        ((obj, finite),) = fast[1]
        assert repr(obj["n"]) == repr(slow[1][0][0]["n"]) == repr(json.loads(text)["n"])  # -0.0 == 0.0
        assert finite == math.isfinite(json.loads(text)["n"])


@settings(max_examples=200, deadline=None)
@given(items=st.lists(st.tuples(keys, values), max_size=4), sep=st.sampled_from(["", " "]))
def test_a_large_lists_items_are_counted_one_at_a_time_as_one_encoding(
    items: list[tuple[str, Any]], sep: str
) -> None:
    """A large text's List items are encoded one at a time (no buffer as large as the dump): the colons
    counted are those of the one encoding, and a duplicate inside an item is still refused."""
    body = render([("kind", "A"), *items], sep)
    text = f'{{"apiVersion": "v1", "kind": "List", "metadata": {{"a": 1}}, "items": [{body}, {body}]}}'
    expected = outcome(exact, text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(documents, "_LARGE", 0)
        assert outcome(fast_or_exact, text) == expected
    doc = json.loads(text)

    def colons(large: bool) -> int | None:
        try:
            return documents._encoded_colons(doc, large)
        except TypeError:  # not encodable (an integer beyond 64 bits): the exact reader reads it
            return None

    assert colons(True) == colons(False)
