"""JSON syntax errors worded as Go's encoding/json, and the apiserver's compact re-encoding."""

from __future__ import annotations

import pytest

from resourceapi.machinery.rawjson import GoJSONError, compact_bytes, loads


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("xxx", "invalid character 'x' looking for beginning of value"),
        ("", "unexpected end of JSON input"),
        ('{"a": 1', "unexpected end of JSON input"),
        ('"abc', "unexpected end of JSON input"),
        ("1 2", "invalid character '2' after top-level value"),
        ("{1: 2}", "invalid character '1' looking for beginning of object key string"),
        ('{"a" 1}', "invalid character '1' after object key"),
        ('{"a": 1 "b": 2}', "invalid character '\"' after object key:value pair"),
        ("[1 2]", "invalid character '2' after array element"),
        ("NaN", "invalid character 'N' looking for beginning of value"),
        ("{'a': 1}", "invalid character '\\'' looking for beginning of object key string"),
    ],
)
def test_syntax_errors_use_go_wording(text: str, want: str) -> None:
    with pytest.raises(GoJSONError) as exc:
        loads(text)
    assert str(exc.value) == want


def test_compact_bytes_are_compact_and_html_escaped() -> None:
    assert (
        compact_bytes({"a": "<&>", "b": [1, 2.5], "c": "é"})
        == '{"a":"\\u003c\\u0026\\u003e","b":[1,2.5],"c":"é"}'.encode()
    )


def test_compact_bytes_reject_nan() -> None:
    with pytest.raises(ValueError):
        compact_bytes({"a": float("nan")})
