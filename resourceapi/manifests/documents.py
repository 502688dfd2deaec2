"""Kubernetes manifests from text: YAML or JSON, multi-document streams and `kind: List` wrappers.

Parsing only; reading files is the caller's job. Errors name the source, the document and what is wrong, and a
stream is either parsed whole or rejected whole.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from resourceapi.machinery.jsontypes import json_type_phrase
from resourceapi.machinery.objects import display_name


class DocumentError(ValueError):
    """Input that is not a usable Kubernetes object stream; the message names source and document."""


@dataclass(frozen=True)
class Document:
    """One Kubernetes object and where it came from (`source`, 1-based document number, List item index)."""

    source: str
    index: int
    obj: dict[str, Any]
    item: int | None = None
    # read from a JSON text in which no number reads as NaN or an infinity (so lists and dicts only, too);
    # False when not known: the object's JSON encoding then has a `null` only where the object has one
    # (resourceapi.manifests.interning.json_key)
    finite: bool = False

    @property
    def where(self) -> str:
        """`file.yaml: document 2` or `file.yaml: document 2, items[3]`."""
        loc = f"{self.source}: document {self.index}"
        if self.item is not None:
            loc += f", items[{self.item}]"
        return loc

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def name(self) -> str:
        return display_name(self.obj)


def load_documents(text: str, source: str) -> list[Document]:
    """Parse every object in `text`; `kind: List` (and `*List`) wrappers are flattened into their items."""
    raw_docs, finite = _parse_stream(text, source)
    out: list[Document] = []
    number = 0
    for raw in raw_docs:
        if raw is None:
            continue
        number += 1
        if not isinstance(raw, dict):
            raise DocumentError(
                f"{source}: document {number}: expected an object, got {json_type_phrase(raw)}"
            )
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind:
            raise DocumentError(f"{source}: document {number}: missing field 'kind'")
        if kind == "List" or (kind.endswith("List") and "items" in raw):
            items = raw.get("items") or []
            if not isinstance(items, list):
                raise DocumentError(f"{source}: document {number}: field 'items' must be a list")
            for i, item in enumerate(items):
                if (
                    not isinstance(item, dict)
                    or not isinstance(item.get("kind"), str)
                    or not item.get("kind")
                ):
                    raise DocumentError(
                        f"{source}: document {number}, items[{i}]: expected an object with 'kind'"
                    )
                out.append(Document(source, number, item, i, finite))
            continue
        out.append(Document(source, number, raw, finite=finite))
    return out


def _parse_stream(text: str, source: str) -> tuple[list[Any], bool]:
    """A stream that starts with `{` is read as concatenated JSON objects first, as kubectl's
    YAMLOrJSONDecoder does (JSON may be indented with tabs, which YAML forbids); anything else, or JSON that
    fails, as YAML. With the documents: whether every number is finite (Document.finite: known for JSON;
    YAML's are not looked at)."""
    json_error: DocumentError | None = None
    if _JSON_START.match(text):
        numbers = _Numbers()
        try:
            return _parse_json_stream(text, source, numbers), numbers.finite
        except DocumentError as exc:
            json_error = exc
    import yaml

    from resourceapi.manifests.yaml_events import TooDeep, load_yaml

    try:
        return load_yaml(text), False
    except yaml.YAMLError as exc:
        if json_error is not None:
            raise json_error from None
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DocumentError(f"{source}: not valid YAML or JSON{where}: {problem}") from None
    except (TooDeep, RecursionError):
        raise DocumentError(f"{source}: not valid YAML or JSON: nested too deeply") from None


_CONSTANTS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class _Numbers:
    """`json`'s hooks for the numbers that read as NaN or an infinity (`NaN`, `Infinity`, `-Infinity`, and a
    float beyond the double range such as `1e400`), read as `json` reads them; `finite` says none was read.
    A float literal costs a call (Kubernetes objects hold few: their quantities are strings), the other
    numbers none."""

    def __init__(self) -> None:
        self.finite = True

    def constant(self, text: str) -> float:
        self.finite = False
        return _CONSTANTS[text]  # as json's own table: one object each (a NaN is then equal to itself)

    def real(self, text: str) -> float:
        value = float(text)
        if math.isinf(value):  # a literal cannot read as NaN
            self.finite = False
        return value


def _parse_json_stream(text: str, source: str, numbers: _Numbers) -> list[Any]:
    decoder = json.JSONDecoder(
        object_pairs_hook=_unique_keys, parse_constant=numbers.constant, parse_float=numbers.real
    )
    docs: list[Any] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return docs
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise DocumentError(
                f"{source}: not valid YAML or JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
            ) from None
        except RecursionError:
            raise DocumentError(f"{source}: not valid YAML or JSON: nested too deeply") from None
        except _DuplicateKey as exc:
            line = text.count("\n", 0, pos) + 1
            raise DocumentError(
                f"{source}: not valid YAML or JSON (document from line {line}): {exc}"
            ) from None
        docs.append(doc)


_JSON_START = re.compile(r"\s*\{")


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # built in C; the slow search for the culprit runs only when there is one
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"key {json.dumps(key)} already set in map")
            seen.add(key)
    return out
