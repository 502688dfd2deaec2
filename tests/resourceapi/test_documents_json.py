"""The JSON reader answers as `json` reads the text, and refuses every duplicate key (kubectl's decoder does),
wherever it is and however it is spelled."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resourceapi.manifests.documents import DocumentError, load_documents


class _Duplicate(ValueError):
    pass


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Duplicate()
    return out


def exact(text: str) -> list[Any]:
    """The reference: `json` with a duplicate-refusing hook, document after document; a duplicate or a syntax
    error raises DocumentError (its message is the reader's own, so only the outcome kind is compared)."""
    constants = {
        "NaN": math.nan,
        "Infinity": math.inf,
        "-Infinity": -math.inf,
    }  # one object each, as the reader
    decoder = json.JSONDecoder(object_pairs_hook=_refuse_duplicates, parse_constant=constants.__getitem__)
    docs, pos = [], 0
    while pos < len(text):
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            break
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except (_Duplicate, ValueError):
            raise DocumentError("refused") from None
        finite = all(math.isfinite(v) for v in _numbers(doc))
        docs.append((doc, finite))
    return docs


def _numbers(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return [value] if isinstance(value, float) else []


def kind_of(outcome_: tuple[str, Any]) -> tuple[str, Any]:
    """An outcome with an error's message left out (the reader's names the line, the reference's does not)."""
    return outcome_ if outcome_[0] == "ok" else ("error", None)


def outcome(load: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", load(text)
    except DocumentError as exc:
        return "error", str(exc)


def reader(text: str) -> list[Any]:
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
def test_every_duplicate_key_is_refused(text: str) -> None:
    assert outcome(reader, text)[0] == "error"
    assert kind_of(outcome(reader, text)) == kind_of(outcome(exact, text))
    assert "already set in map" in outcome(reader, text)[1]


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
def test_texts_without_a_duplicate_read_as_json_reads_them(text: str) -> None:
    assert outcome(reader, text) == outcome(exact, text)
    assert outcome(reader, text)[0] == "ok"


def test_a_kubectl_dump_reads_as_its_items() -> None:
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
    assert [d.obj for d in load_documents(text, "x.json")] == dump["items"]
    # Go's encoder (kubectl -o json) escapes <, > and & in strings
    go_style = text.replace(">", "\\u003e").replace("<", "\\u003c").replace("&", "\\u0026")
    assert [d.obj for d in load_documents(go_style, "x.json")] == dump["items"]


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
def test_the_reader_answers_as_json_with_a_duplicate_check(pairs: list[tuple[str, Any]], sep: str) -> None:
    text = render([("kind", "A"), *pairs], sep)
    assert kind_of(outcome(reader, text)) == kind_of(outcome(exact, text))


@settings(max_examples=600, deadline=None)
@given(number=st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,3})?\Z"))
def test_every_number_is_read_as_json_reads_it(number: str) -> None:
    """A number as written (long mantissas, exponents out of range) reads as `json` reads it, to the last bit,
    and `finite` says whether it read as NaN or an infinity."""
    text = f'{{"kind": "A", "n": {number}, "l": [{number}]}}'
    fast, slow = outcome(reader, text), outcome(exact, text)
    assert fast == slow
    if fast[0] == "ok":
        ((obj, finite),) = fast[1]
        assert repr(obj["n"]) == repr(slow[1][0][0]["n"]) == repr(json.loads(text)["n"])  # -0.0 == 0.0
        assert finite == math.isfinite(json.loads(text)["n"])
