"""Kubernetes manifests from text: YAML or JSON, multi-document streams and `kind: List` wrappers.

Parsing only; reading files is the caller's job. Errors name the source, the document and what is wrong, and a
stream is either parsed whole or rejected whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml


class DocumentError(ValueError):
    """Input that is not a usable Kubernetes object stream; the message names source and document."""


@dataclass(frozen=True)
class Document:
    """One Kubernetes object and where it came from (`source`, 1-based document number, List item index)."""

    source: str
    index: int
    obj: dict[str, Any]
    item: int | None = None

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
        meta = self.obj.get("metadata")
        if isinstance(meta, dict):
            return str(meta.get("name") or meta.get("generateName") or "")
        return ""


MAX_DEPTH = 500
"""Deepest YAML nesting accepted. libyaml's composer recurses in C without a limit (a few hundred thousand
`[` crash the interpreter), so the event reader below counts levels itself. No Kubernetes object comes close;
JSON input is bounded by the `json` decoder's own recursion limit (about 1,000)."""

_STR = "tag:yaml.org,2002:str"
_MAP_TAGS = (None, "!", "tag:yaml.org,2002:map")
_SEQ_TAGS = (None, "!", "tag:yaml.org,2002:seq")
_MERGE = "tag:yaml.org,2002:merge"


class _Loader(yaml.CSafeLoader):
    """libyaml's parser with PyYAML's safe constructors, keeping timestamps as strings, as Kubernetes does
    (RFC 3339 text), and refusing duplicate keys, as kubectl's strict YAML decoding does: a repeated key would
    silently drop what came first. `_read_yaml` drives it event by event; PyYAML's own (slower) composer and
    constructor are used only for merge keys and `!!set`/`!!omap`/`!!pairs` collections."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue  # merged keys may be overridden: only the mapping's own keys must be unique
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str | int | float | bool) or key is None:
                if key in seen:
                    raise _duplicate(key, key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def _duplicate(key: Any, mark: Any) -> yaml.MarkedYAMLError:
    return yaml.constructor.ConstructorError(None, None, f"key {json.dumps(key)} already set in map", mark)


class _NeedsFullConstructor(Exception):
    """A construct the event reader leaves to PyYAML's constructor (merge keys, `!!set`, ...)."""


class _Open:
    """A collection being read: the container, and for a mapping the key waiting for its value."""

    __slots__ = ("anchor", "container", "has_key", "is_map", "key", "key_mark")

    def __init__(self, container: dict[Any, Any] | list[Any], anchor: str | None) -> None:
        self.container = container
        self.is_map = isinstance(container, dict)
        self.anchor = anchor
        self.has_key = False
        self.key: Any = None
        self.key_mark: Any = None


def _read_yaml(data: bytes) -> list[Any]:
    """Every document of a YAML stream, built straight from libyaml's events.

    The same values PyYAML's safe loader builds (same implicit types, minus timestamps; same errors for bad
    tags, undefined or duplicate anchors and unhashable keys), several times faster than its composer and
    constructor, with duplicate keys refused at the key's line and nesting limited to MAX_DEPTH."""
    loader = _Loader(data)
    try:
        return _build(loader)
    finally:
        loader.dispose()


def _build(loader: _Loader) -> list[Any]:
    events = yaml.events
    scalar_event, alias_event = events.ScalarEvent, events.AliasEvent
    map_start, seq_start = events.MappingStartEvent, events.SequenceStartEvent
    map_end, seq_end = events.MappingEndEvent, events.SequenceEndEvent
    doc_start, stream_end = events.DocumentStartEvent, events.StreamEndEvent
    get_event = loader.get_event
    resolve: Any = loader.resolve
    plain: dict[str, Any] = {}  # plain scalar text -> its value (tags resolve by text alone)
    docs: list[Any] = []
    stack: list[_Open] = []
    top: _Open | None = None
    anchors: dict[str, Any] = {}
    while True:
        event: Any = get_event()
        kind = type(event)
        value: Any
        if kind is scalar_event:
            tag = event.tag
            if tag is None and event.implicit[0]:
                text = event.value
                try:
                    value = plain[text]
                except KeyError:
                    value = _scalar(loader, resolve(yaml.ScalarNode, text, (True, False)), event)
                    plain[text] = value
            elif tag is None or tag == "!":
                value = _scalar(loader, resolve(yaml.ScalarNode, event.value, event.implicit), event)
            else:
                value = _scalar(loader, tag, event)
            if event.anchor is not None:
                _anchor(anchors, event, value)
        elif kind is map_start or kind is seq_start:
            if event.tag not in (_MAP_TAGS if kind is map_start else _SEQ_TAGS):
                raise _NeedsFullConstructor
            if len(stack) >= MAX_DEPTH:
                raise _TooDeep
            opened = _Open({} if kind is map_start else [], event.anchor)
            if event.anchor is not None:
                _anchor(anchors, event, opened)
            if top is not None:
                stack.append(top)
            top = opened
            continue
        elif kind is map_end or kind is seq_end:
            assert top is not None
            value = top.container
            if top.anchor is not None:
                anchors[top.anchor] = value
            top = stack.pop() if stack else None
        elif kind is alias_event:
            value = anchors.get(event.anchor, anchors)
            if value is anchors:
                raise yaml.composer.ComposerError(None, None, "found undefined alias", event.start_mark)
            if isinstance(value, _Open):
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    "found a recursive alias (a collection inside itself)",
                    event.start_mark,
                )
        elif kind is doc_start:
            anchors = {}
            continue
        elif kind is stream_end:
            return docs
        else:
            continue  # stream start, document end
        if top is None:
            docs.append(value)
        elif not top.is_map:
            top.container.append(value)  # type: ignore[union-attr]
        elif top.has_key:
            top.container[top.key] = value  # type: ignore[call-overload]
            top.has_key = False
        else:
            if value.__class__ is not str:
                _check_key(value, event, top)
            elif value in top.container:
                raise _duplicate(value, event.start_mark)
            top.key, top.key_mark, top.has_key = value, event.start_mark, True


def _scalar(loader: _Loader, tag: str, event: Any) -> Any:
    if tag == _STR:
        return event.value
    if tag == _MERGE:
        raise _NeedsFullConstructor
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    return loader.construct_object(node)


def _anchor(anchors: dict[str, Any], event: Any, value: Any) -> None:
    if event.anchor in anchors:
        raise yaml.composer.ComposerError(
            None, None, f"found duplicate anchor {event.anchor!r}", event.start_mark
        )
    anchors[event.anchor] = value


def _check_key(key: Any, event: Any, top: _Open) -> None:
    try:
        hash(key)
    except TypeError:
        raise yaml.constructor.ConstructorError(
            "while constructing a mapping", None, "found unhashable key", event.start_mark
        ) from None
    if key in top.container:
        raise _duplicate(key, event.start_mark)


class _TooDeep(Exception):
    pass


def _depth_ok(data: bytes) -> bool:
    """Nesting within MAX_DEPTH, checked on events before PyYAML's composer (which recurses) sees the text."""
    loader = _Loader(data)
    depth = 0
    opening = (yaml.events.MappingStartEvent, yaml.events.SequenceStartEvent)
    closing = (yaml.events.MappingEndEvent, yaml.events.SequenceEndEvent)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, opening):
                depth += 1
                if depth > MAX_DEPTH:
                    return False
            elif isinstance(event, closing):
                depth -= 1
        return True
    finally:
        loader.dispose()


def _load_yaml(text: str) -> list[Any]:
    data = text.encode("utf-8")
    try:
        return _read_yaml(data)
    except _NeedsFullConstructor:
        if not _depth_ok(data):
            raise _TooDeep from None
        return list(yaml.load_all(data, Loader=_Loader))


def load_documents(text: str, source: str) -> list[Document]:
    """Parse every object in `text`; `kind: List` (and `*List`) wrappers are flattened into their items."""
    raw_docs = _parse_stream(text, source)
    out: list[Document] = []
    number = 0
    for raw in raw_docs:
        if raw is None:
            continue
        number += 1
        if not isinstance(raw, dict):
            raise DocumentError(f"{source}: document {number}: expected an object, got {_type_name(raw)}")
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
                out.append(Document(source, number, item, i))
            continue
        out.append(Document(source, number, raw))
    return out


def _parse_stream(text: str, source: str) -> list[Any]:
    """A stream that starts with `{` is read as concatenated JSON objects first, as kubectl's
    YAMLOrJSONDecoder does (JSON may be indented with tabs, which YAML forbids); anything else, or JSON that
    fails, as YAML."""
    json_error: DocumentError | None = None
    if _JSON_START.match(text):
        try:
            return _parse_json_stream(text, source)
        except DocumentError as exc:
            json_error = exc
    try:
        return _load_yaml(text)
    except yaml.YAMLError as exc:
        if json_error is not None:
            raise json_error from None
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DocumentError(f"{source}: not valid YAML or JSON{where}: {problem}") from None
    except (_TooDeep, RecursionError):
        raise DocumentError(f"{source}: not valid YAML or JSON: nested too deeply") from None


def _parse_json_stream(text: str, source: str) -> list[Any]:
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
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


def _type_name(v: object) -> str:
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    return type(v).__name__
