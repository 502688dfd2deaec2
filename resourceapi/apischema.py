"""The API server's structural checks for the kinds simulate reads: JSON types and required fields.

The field tree comes from resourceapi/schemas/fields.json, generated from the `kubernetes` client's models
(themselves generated from the API server's OpenAPI) by scripts/gen_field_schemas.py. `check_fields` walks
an object once (linear in its size): it collects the unknown fields, as strict field validation names them
(`spec.devices[0].basic`), and returns the first wrong type or missing required field as a `FieldProblem`.

Leniencies, so a valid object is never refused: a string field also takes a number (quantities are strings
or numbers on the wire, and the generated models do not say which fields are quantities); a required integer
or boolean may be absent (the decoder reads zero, and the validation rules that care say so themselves);
nothing under `status` is required (the API server does not validate status on create).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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
    unknown: list[str] = field(default_factory=list)
    problem: FieldProblem | None = None


# A compiled type: ("s", allowed classes or None for any), ("m", model name), ("l", item), ("d", value).
_Type = tuple[str, Any]
_SCALARS: dict[str, frozenset[type] | None] = {
    "s": frozenset({str, int, float}),  # strings, and numbers for quantities
    "i": frozenset({int}),
    "b": frozenset({bool}),
    "n": frozenset({int, float}),
    "o": None,
}


def _compile(tp: Any) -> _Type:
    if isinstance(tp, str):
        return ("s", _SCALARS[tp]) if tp != "o" else ("s", None)
    if tp[0] == "m":
        return ("m", tp[1])
    return (tp[0], _compile(tp[1]))


@dataclass(frozen=True)
class _Model:
    fields: dict[str, _Type]
    required: tuple[str, ...]  # those whose absence is an error (not integers or booleans)
    names: dict[str, str]  # field -> JSON type name for scalar type errors


@cache
def _schema() -> tuple[dict[str, str], dict[str, _Model]]:
    doc: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    models: dict[str, _Model] = {}
    for name, spec in doc["types"].items():
        raw = spec["fields"]
        models[name] = _Model(
            fields={k: _compile(v) for k, v in raw.items()},
            required=tuple(k for k in spec["required"] if raw[k] not in ("i", "b")),
            names={k: _TYPE_NAMES.get(v, "") for k, v in raw.items() if isinstance(v, str)},
        )
    return doc["kinds"], models


def known_kind(api_version: str, kind: str) -> bool:
    return f"{api_version}/{kind}" in _schema()[0]


def check_fields(api_version: str, kind: str, obj: dict[str, Any]) -> FieldReport:
    """The unknown fields and the first structural problem of an object of a kind in the schema."""
    kinds, models = _schema()
    report = FieldReport()
    _Walker(models, report).model(obj, kinds[f"{api_version}/{kind}"], None, True)
    return report


# A field path as a chain, formatted only when a problem is reported: (parent, "." | "[", key) or None.
_Path = tuple[Any, str, Any] | None


def _format(path: _Path) -> str:
    parts: list[str] = []
    while path is not None:
        parent, sep, key = path
        parts.append(f".{key}" if sep == "." else f"[{key}]")
        path = parent
    return "".join(reversed(parts)).removeprefix(".")


_KIND_NAMES = {"l": "array", "d": "object", "m": "object"}


class _Walker:
    def __init__(self, models: dict[str, _Model], report: FieldReport) -> None:
        self.models = models
        self.report = report

    def fail(self, path: _Path, value: Any, expected: str) -> None:
        if self.report.problem is None:
            message = f'Invalid value: "{json_type(value)}": must be of type {expected}'
            self.report.problem = FieldProblem(_format(path), message)

    def value(self, value: Any, tp: _Type, path: _Path, required: bool, scalar_name: str = "") -> None:
        kind, arg = tp
        if kind == "s":
            if arg is not None and value.__class__ not in arg and not isinstance(value, str):
                self.fail(path, value, scalar_name or _scalar_name(arg))
        elif kind == "m":
            self.model(value, arg, path, required)
        elif kind == "l":
            if value.__class__ is not list:
                self.fail(path, value, "array")
                return
            for i, item in enumerate(value):
                if item is not None:
                    self.value(item, arg, (path, "[", i), required)
        else:
            if value.__class__ is not dict:
                self.fail(path, value, "object")
                return
            if arg[0] == "s":
                allowed = arg[1]
                if allowed is None:
                    return
                for key, item in value.items():
                    if item is not None and item.__class__ not in allowed and not isinstance(item, str):
                        self.fail((path, "[", key), item, _scalar_name(allowed))
                return
            for key, item in value.items():
                if item is not None:
                    self.value(item, arg, (path, "[", key), required)

    def model(self, value: Any, name: str, path: _Path, required: bool) -> None:
        """One object of a model type; lists of models and maps of scalars are walked inline (the common
        shapes), the rest through `value`."""
        if value.__class__ is not dict:
            self.fail(path, value, "object")
            return
        model = self.models[name]
        fields = model.fields
        for key, item in value.items():
            tp = fields.get(key)
            if tp is None:
                self.report.unknown.append(_format((path, ".", key)))
                continue
            if item is None:
                continue
            kind, arg = tp
            if kind == "s":
                if arg is not None and item.__class__ not in arg and not isinstance(item, str):
                    self.fail((path, ".", key), item, model.names[key])
                continue
            where = (path, ".", key)
            below = required and not (path is None and key == "status")
            if kind == "m":
                self.model(item, arg, where, below)
            elif kind == "l" and arg[0] == "m":
                if item.__class__ is not list:
                    self.fail(where, item, "array")
                    continue
                sub = arg[1]
                for i, element in enumerate(item):
                    if element is not None:
                        self.model(element, sub, (where, "[", i), below)
            elif kind == "d" and arg[0] == "s":
                if item.__class__ is not dict:
                    self.fail(where, item, "object")
                    continue
                allowed = arg[1]
                if allowed is not None:
                    for k, v in item.items():
                        if v is not None and v.__class__ not in allowed and not isinstance(v, str):
                            self.fail((where, "[", k), v, _scalar_name(allowed))
            else:
                self.value(item, tp, where, below)
        if required and model.required:
            for key in model.required:
                if value.get(key) is None and self.report.problem is None:
                    self.report.problem = FieldProblem(_format((path, ".", key)), "Required value")


def _scalar_name(allowed: frozenset[type]) -> str:
    if bool in allowed:
        return "boolean"
    if str in allowed:
        return "string"
    return "number" if float in allowed else "integer"
