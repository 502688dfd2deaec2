"""Label and field selectors, parsed and matched as `staging/src/k8s.io/apimachinery/pkg/labels/selector.go`
and `staging/src/k8s.io/apimachinery/pkg/fields/selector.go` do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .resources import ResourceType


class SelectorError(ValueError):
    """A selector string that does not parse."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return has and value == self.values[0]
        if self.op == "!=":
            return not has or value != self.values[0]
        if self.op == "in":
            return has and value in self.values
        if self.op == "notin":
            return not has or value not in self.values
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("gt", "lt") and has:
            try:
                lhs, rhs = int(str(value)), int(self.values[0])
            except ValueError:
                return False
            return lhs > rhs if self.op == "gt" else lhs < rhs
        return False


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_label_selector(text: str) -> list[Requirement]:
    """`a=b,c!=d,e in (x,y),f notin (z),g,!h` into requirements (all must match)."""
    reqs: list[Requirement] = []
    if not text.strip():
        return reqs
    for raw in _split_top(text):
        part = raw.strip()
        if not part:
            raise SelectorError(f"unable to parse requirement: found '', expected: identifier in {text!r}")
        m = re.fullmatch(r"([^\s!=<>(),]+)\s+(in|notin)\s+\((.*)\)", part)
        if m:
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            reqs.append(Requirement(m.group(1), m.group(2), values))
            continue
        m = re.fullmatch(r"([^\s!=<>(),]+)\s*(==|!=|=|>|<)\s*([^\s!=<>(),]*)", part)
        if m:
            op = {"==": "=", ">": "gt", "<": "lt"}.get(m.group(2), m.group(2))
            reqs.append(Requirement(m.group(1), op, (m.group(3),)))
            continue
        m = re.fullmatch(r"!\s*([^\s!=<>(),]+)", part)
        if m:
            reqs.append(Requirement(m.group(1), "!"))
            continue
        if re.fullmatch(r"[^\s!=<>(),]+", part):
            reqs.append(Requirement(part, "exists"))
            continue
        raise SelectorError(f"unable to parse requirement: {part!r}")
    return reqs


def matches_labels(reqs: list[Requirement], labels: Mapping[str, str] | None) -> bool:
    lab = labels or {}
    return all(r.matches(lab) for r in reqs)


def label_selector_object(selector: Mapping[str, Any] | None) -> list[Requirement] | None:
    """A metav1.LabelSelector (matchLabels + matchExpressions) as requirements; None selects nothing.

    `metav1.LabelSelectorAsSelector`: a nil selector selects nothing, an empty one everything.
    """
    if selector is None:
        return None
    reqs = [Requirement(k, "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}[
            str(expr.get("operator"))
        ]
        reqs.append(Requirement(str(expr.get("key")), op, tuple(str(v) for v in expr.get("values") or [])))
    return reqs


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool


def _unescape_field_value(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str, rt: ResourceType) -> list[FieldRequirement]:
    """`spec.nodeName=n,metadata.name!=x`; a field the type does not support is an error, as upstream."""
    reqs: list[FieldRequirement] = []
    if not text.strip():
        return reqs
    allowed = {"metadata.name", *rt.field_labels}
    if rt.namespaced:
        allowed.add("metadata.namespace")
    for raw in re.split(r"(?<!\\),", text):
        part = raw.strip()
        m = re.fullmatch(r"([^=!]+?)\s*(!=|==|=)\s*(.*)", part)
        if not m:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        name = m.group(1).strip()
        if name not in allowed:
            raise SelectorError(f"field label not supported: {name}")
        reqs.append(FieldRequirement(name, _unescape_field_value(m.group(3)), m.group(2) == "!="))
    return reqs


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if path == "source" and isinstance(obj.get("source"), Mapping):
        return str(obj["source"].get("component", ""))
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if cur is None or isinstance(cur, Mapping):
        return ""
    return str(cur)


def matches_fields(reqs: list[FieldRequirement], obj: Mapping[str, Any]) -> bool:
    for r in reqs:
        value = _field_value(obj, r.field)
        if (value == r.value) == r.negate:
            return False
    return True


Predicate = Callable[[dict[str, Any]], bool]


def predicate(labels: list[Requirement], fields: list[FieldRequirement]) -> Predicate:
    def match(obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        return matches_labels(labels, meta.get("labels")) and matches_fields(fields, obj)

    return match
