"""Checks of constant arguments that upstream's DRA environment makes when it compiles a selector, which the
cel-expr-python checker does not: found by the differential against kube-apiserver v1.37.2
(tests/differential), in cel-go's words.

* `"...".format([...])` with a literal format and a literal list (cel-go's strings extension validates format
  calls): a `%s` or `%d` clause given an argument of a type it cannot format, or a clause without an argument.
* `matches` with a constant pattern that is not a valid RE2 expression: `invalid matches argument`.
* `find` / `findAll` with such a pattern: the Kubernetes regex library compiles constant patterns when the
  program is built, so the selector fails as an internal error, `program instantiation failed: ...`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from resourceapi.cel.checked import type_name
from resourceapi.cel.messages import QUANTITY_TYPE
from resourceapi.cel.shape import Shape, children, shape_of

_STRING_CLAUSE_OK = {"string", "bool", "bytes", "int", "uint", "double", "type", "null_type"}
_STRING_CLAUSE_OK_PREFIXES = ("map(", "list(", "google.protobuf.Duration", "google.protobuf.Timestamp")
_DECIMAL_OK = {"int", "uint"}
# Types whose cel-go name we know to render: the argument types these checks report.
_TYPE_NAMES = {"dyn": "google.protobuf.Any", "string": "string", "bool": "bool", "double": "double"}
_TYPE_NAMES |= {"bytes": "bytes", "int": "int", "uint": "uint"}
_CLAUSE = re.compile(r"%(%|\.?\d*[a-zA-Z])")
_RE2_UNSUPPORTED = re.compile(r"\(\?[=!<]|\\[1-9]")


@dataclass(frozen=True)
class LiteralIssue:
    """A problem with a constant argument: where (source offset), what (cel-go's words), and whether it is a
    compile error (`invalid`) or a failure to build the program (`internal`)."""

    offset: int
    message: str
    kind: str = "invalid"


def _const_string(e: Any) -> str | None:
    if (
        e.WhichOneof("expr_kind") == "const_expr"
        and e.const_expr.WhichOneof("constant_kind") == "string_value"
    ):
        return str(e.const_expr.string_value)
    return None


def _type(checked: Any, e: Any) -> str:
    t = checked.type_map.get(e.id)
    return type_name(t) if t is not None else "dyn"


def _format_issue(checked: Any, e: Any) -> LiteralIssue | None:
    call = e.call_expr
    template = _const_string(call.target)
    if template is None or len(call.args) != 1 or call.args[0].WhichOneof("expr_kind") != "list_expr":
        return None
    positions = checked.source_info.positions
    values = list(call.args[0].list_expr.elements)
    index = 0
    for clause in _CLAUSE.finditer(template):
        verb = clause.group(1)
        if verb == "%":
            continue
        if index >= len(values):
            return LiteralIssue(positions.get(e.id, 0), f"index {index} out of range")
        arg = values[index]
        index += 1
        t = _type(checked, arg)
        name = _TYPE_NAMES.get(t)
        if verb == "s" and t not in _STRING_CLAUSE_OK and not t.startswith(_STRING_CLAUSE_OK_PREFIXES):
            if name is not None:
                return LiteralIssue(
                    positions.get(arg.id, 0),
                    "error during formatting: string clause can only be used on strings, bools, bytes, ints, "
                    f"doubles, maps, lists, types, durations, and timestamps, was given {name}",
                )
        elif verb == "d" and t not in _DECIMAL_OK and name is not None:
            return LiteralIssue(
                positions.get(arg.id, 0),
                f"error during formatting: decimal clause can only be used on integers, was given {name}",
            )
    return None


def _go_regexp_error(pattern: str) -> str | None:
    """Go's `regexp.Compile` error for an invalid pattern (the common cases in Go's words), None if valid."""
    if _RE2_UNSUPPORTED.search(pattern):
        return f"invalid or unsupported Perl syntax: `{pattern}`"
    try:
        re.compile(pattern)
    except re.error as exc:
        text = str(exc.msg)
        pos = exc.pos or 0
        if text.startswith("unterminated character set"):
            return f"missing closing ]: `{pattern[pos:]}`"
        if text.startswith("missing ), unterminated subpattern"):
            return f"missing closing ): `{pattern}`"
        if text.startswith("unbalanced parenthesis"):
            return f"unexpected ): `{pattern}`"
        if text.startswith("nothing to repeat"):
            return f"missing argument to repetition operator: `{pattern[pos : pos + 1]}`"
        return f"invalid regular expression: `{pattern}`"
    return None


def _regex_issue(checked: Any, e: Any) -> LiteralIssue | None:
    call = e.call_expr
    member = call.HasField("target")
    args = list(call.args)
    pattern_arg = args[0] if member and args else (args[1] if not member and len(args) == 2 else None)
    if pattern_arg is None:
        return None
    pattern = _const_string(pattern_arg)
    if pattern is None:
        return None
    error = _go_regexp_error(pattern)
    if error is None:
        return None
    positions = checked.source_info.positions
    if call.function == "matches":
        return LiteralIssue(positions.get(pattern_arg.id, 0), "invalid matches argument")
    if member:  # find, findAll
        return LiteralIssue(0, f"program instantiation failed: error parsing regexp: {error}", "internal")
    return None


def _element_type(checked: Any, e: Any) -> str:
    """An element's type as upstream's checker has it: a device attribute's value is `any`, a capacity a
    Quantity (cel-expr-python sees both as `dyn`)."""
    shape = shape_of(e)
    if shape is Shape.ATTRIBUTE_VALUE:
        return "any"
    if shape is Shape.CAPACITY_VALUE:
        return QUANTITY_TYPE
    return _type(checked, e)


def _homogeneous_issues(checked: Any, elements: list[Any]) -> list[LiteralIssue]:
    """Upstream compiles with homogeneous aggregate literals: every element of a list literal (key or value
    of a map literal) has the first one's type; `dyn` goes with anything."""
    if len(elements) < 2:
        return []
    expected = _element_type(checked, elements[0])
    if "dyn" in expected:
        return []
    positions = checked.source_info.positions
    out = []
    for e in elements[1:]:
        found = _element_type(checked, e)
        if found != expected and "dyn" not in found:  # cel-go reports the first stray element only
            out.append(
                LiteralIssue(positions.get(e.id, 0), f"expected type '{expected}' but found '{found}'")
            )
            break
    return out


def literal_issues(checked: Any) -> list[LiteralIssue]:
    """Every such problem in the checked selector, compile errors in source order, then at most one
    program-instantiation failure (cel-go stops building the program at the first)."""
    compile_errors: list[LiteralIssue] = []
    internal: list[LiteralIssue] = []
    # (expression, exempt): the arguments of `format` are exempt from the homogeneous check, as in cel-go
    stack: list[tuple[Any, bool]] = [(checked.expr, False)]
    while stack:
        e, exempt = stack.pop()
        kind = e.WhichOneof("expr_kind")
        inner = exempt or (kind == "call_expr" and e.call_expr.function == "format")
        stack.extend((c, inner) for c in reversed(children(e)))
        if kind == "list_expr" and not exempt:
            compile_errors.extend(_homogeneous_issues(checked, list(e.list_expr.elements)))
            continue
        if kind == "struct_expr" and not e.struct_expr.message_name and not exempt:
            entries = list(e.struct_expr.entries)
            compile_errors.extend(_homogeneous_issues(checked, [x.map_key for x in entries]))
            compile_errors.extend(_homogeneous_issues(checked, [x.value for x in entries]))
            continue
        if kind != "call_expr":
            continue
        fn = e.call_expr.function
        issue = None
        if fn == "format" and e.call_expr.HasField("target"):
            issue = _format_issue(checked, e)
        elif fn in ("matches", "find", "findAll"):
            issue = _regex_issue(checked, e)
        if issue is not None:
            (internal if issue.kind == "internal" else compile_errors).append(issue)
    compile_errors.sort(key=lambda i: i.offset)
    return compile_errors or internal[:1]
