"""JSON type names used in "must be of type ..." and envelope messages."""

from __future__ import annotations

from typing import Any

import pytest

from resourceapi.machinery.jsontypes import json_type


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, "null"),
        (True, "boolean"),
        (0, "number"),
        (1.5, "number"),
        ("", "string"),
        ([], "array"),
        ({}, "object"),
        (b"x", "bytes"),
    ],
)
def test_json_type_names_the_decoded_value(value: Any, want: str) -> None:
    assert json_type(value) == want
