"""The API server's structural checks for the kinds simulate reads: JSON types and required fields.

The field tree comes from resourceapi/schemas/fields.json, generated from the `kubernetes` client's models
(themselves generated from the API server's OpenAPI) by scripts/gen_field_schemas.py. `check_fields` walks
an object once (linear in its size) and returns the first wrong type or missing required field as a
`FieldProblem`. Unknown fields are skipped here (dra_capacity/strict_fields.py names them).

Leniencies, so a valid object is never refused: a string field also takes a number (quantities are strings
or numbers on the wire, and the generated models do not say which fields are quantities); a required integer
or boolean may be absent (the decoder reads zero, and the validation rules that care say so themselves);
nothing under `status` is required (the API server does not validate status on create).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from resourceapi.jsontypes import json_type

SCHEMA_FILE = Path(__file__).resolve().parent / "schemas" / "fields.json"  # package data (pyproject.toml)
_TYPE_NAMES = {"s": "string", "i": "integer", "b": "boolean", "n": "number"}


@dataclass(frozen=True)
class FieldProblem:
    path: str
    message: str


@dataclass
class FieldReport:
    problem: FieldProblem | None = None


@cache
def _schema() -> dict[str, Any]:
    text = SCHEMA_FILE.read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


def known_kind(api_version: str, kind: str) -> bool:
    return f"{api_version}/{kind}" in _schema()["kinds"]


def check_fields(api_version: str, kind: str, obj: dict[str, Any]) -> FieldProblem | None:
    """The first structural problem of an object of a kind in the schema, or None."""
    schema = _schema()
    report = FieldReport()
    root = schema["kinds"][f"{api_version}/{kind}"]
    _Walker(schema["types"], report).model(obj, root, None, required=True)
    return report.problem


# A field path as a chain, formatted only when a problem is reported: (parent, "." | "[", key) or None.
_Path = tuple[Any, str, Any] | None


def _format(path: _Path) -> str:
    parts: list[str] = []
    while path is not None:
        parent, sep, key = path
        parts.append(f".{key}" if sep == "." else f"[{key}]")
        path = parent
    return "".join(reversed(parts)).removeprefix(".")


def _scalar_ok(value: Any, tp: str) -> bool:
    cls = value.__class__
    if tp == "s":
        return cls is str or cls is int or cls is float or isinstance(value, str)
    if tp == "b":
        return cls is bool
    if tp == "i":
        return cls is int
    if tp == "n":
        return cls is int or cls is float
    return True  # "o": anything


class _Walker:
    def __init__(self, types: dict[str, Any], report: FieldReport) -> None:
        self.types = types
        self.report = report

    def fail(self, path: _Path, message: str) -> None:
        if self.report.problem is None:
            self.report.problem = FieldProblem(_format(path), message)

    def value(self, value: Any, tp: Any, path: _Path, required: bool) -> None:
        if value is None:
            return
        if tp.__class__ is str:
            if not _scalar_ok(value, tp):
                self.fail(path, f'Invalid value: "{json_type(value)}": must be of type {_TYPE_NAMES[tp]}')
            return
        kind = tp[0]
        if kind == "m":
            self.model(value, tp[1], path, required)
        elif kind == "l":
            if value.__class__ is not list:
                self.fail(path, f'Invalid value: "{json_type(value)}": must be of type array')
                return
            sub = tp[1]
            for i, item in enumerate(value):
                self.value(item, sub, (path, "[", i), required)
        else:
            if value.__class__ is not dict:
                self.fail(path, f'Invalid value: "{json_type(value)}": must be of type object')
                return
            sub = tp[1]
            if sub.__class__ is str:
                for key, item in value.items():
                    if item is not None and not _scalar_ok(item, sub):
                        self.value(item, sub, (path, "[", key), required)
                return
            for key, item in value.items():
                self.value(item, sub, (path, "[", key), required)

    def model(self, value: Any, name: str, path: _Path, required: bool) -> None:
        if value.__class__ is not dict:
            self.fail(path, f'Invalid value: "{json_type(value)}": must be of type object')
            return
        spec = self.types[name]
        fields = spec["fields"]
        for key, item in value.items():
            sub = fields.get(key)
            if sub is None or item is None:
                continue
            elif sub.__class__ is str:
                if not _scalar_ok(item, sub):
                    self.value(item, sub, (path, ".", key), required)
            else:
                self.value(item, sub, (path, ".", key), required and not (path is None and key == "status"))
        if required:
            for key in spec["required"]:
                if value.get(key) is None and fields[key] not in ("i", "b"):
                    self.fail((path, ".", key), "Required value")
