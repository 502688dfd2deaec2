"""The API server's structural checks for the kinds simulate reads: known fields, JSON types, required fields.

The field tree comes from resourceapi/schemas/fields.json, generated from the `kubernetes` client's models
(themselves generated from the API server's OpenAPI) by scripts/gen_field_schemas.py. `check_fields` walks
an object once (linear in its size): unknown fields are collected, as strict field validation names them
(`spec.devices[0].basic`); the first wrong type or missing required field is returned as a `FieldProblem`.

Leniencies, so a valid object is never refused: a string field also takes a number (quantities are strings
or numbers on the wire, and the generated models do not say which fields are quantities); a required integer
or boolean may be absent (the decoder reads zero, and the validation rules that care say so themselves);
nothing under `status` is required (the API server does not validate status on create).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from resourceapi.jsontypes import json_type

_TYPE_NAMES = {"s": "string", "i": "integer", "b": "boolean", "n": "number"}


@dataclass(frozen=True)
class FieldProblem:
    path: str
    message: str


@dataclass
class FieldReport:
    unknown: list[str]
    problem: FieldProblem | None = None


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("resourceapi").joinpath("schemas/fields.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


def known_kind(api_version: str, kind: str) -> bool:
    return f"{api_version}/{kind}" in _schema()["kinds"]


def check_fields(api_version: str, kind: str, obj: dict[str, Any]) -> FieldReport:
    """Unknown field paths, and the first structural problem, of an object of a kind in the schema."""
    schema = _schema()
    report = FieldReport(unknown=[])
    root = schema["kinds"][f"{api_version}/{kind}"]
    _Walker(schema["types"], report).model(obj, root, "", required=True)
    return report


class _Walker:
    def __init__(self, types: dict[str, Any], report: FieldReport) -> None:
        self.types = types
        self.report = report

    def fail(self, path: str, message: str) -> None:
        if self.report.problem is None:
            self.report.problem = FieldProblem(path, message)

    def value(self, value: Any, tp: Any, path: str, required: bool) -> None:
        if value is None:
            return
        if isinstance(tp, str):
            if tp == "o" or self._scalar_ok(value, tp):
                return
            self.fail(path, f'Invalid value: "{json_type(value)}": must be of type {_TYPE_NAMES[tp]}')
            return
        kind = tp[0]
        if kind == "m":
            self.model(value, tp[1], path, required)
        elif kind == "l":
            if not isinstance(value, list):
                self.fail(path, f'Invalid value: "{json_type(value)}": must be of type array')
                return
            sub = tp[1]
            for i, item in enumerate(value):
                self.value(item, sub, f"{path}[{i}]", required)
        else:
            if not isinstance(value, dict):
                self.fail(path, f'Invalid value: "{json_type(value)}": must be of type object')
                return
            sub = tp[1]
            for key, item in value.items():
                self.value(item, sub, f"{path}[{key}]", required)

    @staticmethod
    def _scalar_ok(value: Any, tp: str) -> bool:
        if tp == "s":
            return isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))
        if tp == "b":
            return isinstance(value, bool)
        if tp == "i":
            return isinstance(value, int) and not isinstance(value, bool)
        return isinstance(value, int | float) and not isinstance(value, bool)

    def model(self, value: Any, name: str, path: str, required: bool) -> None:
        if not isinstance(value, dict):
            self.fail(path, f'Invalid value: "{json_type(value)}": must be of type object')
            return
        spec = self.types[name]
        fields = spec["fields"]
        prefix = f"{path}." if path else ""
        for key, item in value.items():
            sub = fields.get(key)
            where = f"{prefix}{key}"
            if sub is None:
                self.report.unknown.append(where)
            else:
                self.value(item, sub, where, required and not (not path and key == "status"))
        if required:
            for key in spec["required"]:
                if value.get(key) is None and fields[key] not in ("i", "b"):
                    self.fail(f"{prefix}{key}", "Required value")
