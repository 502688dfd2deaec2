"""YAML streams read with libyaml, event by event: PyYAML's safe-loader values several times faster.

Split from `resourceapi.manifests.documents` so that reading JSON, and commands that read nothing (`--help`),
do not
import PyYAML. Raises yaml.YAMLError subclasses (with marks) and `TooDeep`; `documents` turns them into
DocumentError.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

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
                raise TooDeep
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


class TooDeep(Exception):
    """Nesting deeper than MAX_DEPTH."""


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


def load_yaml(text: str) -> list[Any]:
    """Every document of the stream (None for an empty one), in order (`!!set`, `!!pairs` and `!!omap` go to
    PyYAML's constructor, and give sets and tuples)."""
    data = text.encode("utf-8")
    try:
        return _read_yaml(data)
    except _NeedsFullConstructor:
        if not _depth_ok(data):
            raise TooDeep from None
        return list(yaml.load_all(data, Loader=_Loader))
