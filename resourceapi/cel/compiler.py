"""`compile_selector`: parse, type-check and cost-estimate a DRA device selector, with upstream's verdicts.

Issues read like the DRA compiler's (`dynamic-resource-allocation/cel/compile.go`): `compilation failed:
ERROR: <input>:L:C: <msg>\\n | <source line>\\n | <caret>` (cel-go's rendering), `must evaluate to bool or the
unknown type, not <type>`, and `too complex, exceeds cost limit`. cel-cpp's wording is translated to cel-go's
where they differ in stable parts (member-call signatures, `undefined field`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from resourceapi.api.limits import COST_LIMIT
from resourceapi.cel.checked import parse_checked, parse_parsed, type_name
from resourceapi.cel.checks import attribute_range_issues, quantity_issues
from resourceapi.cel.cost import estimate_cost
from resourceapi.cel.device import Selector
from resourceapi.cel.env import EnvKey, checking_env
from resourceapi.cel.literals import literal_issues
from resourceapi.cel.messages import QUANTITY_TYPE
from resourceapi.cel.shape import Shape, children, shape_of
from resourceapi.gates import DRA_LIST_TYPE_ATTRIBUTES, FeatureGates
from resourceapi.releases import release

IssueKind = Literal["invalid", "forbidden", "required", "internal"]

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_UNDEFINED_FIELD = re.compile(r"undefined field '([^']*)' not found in struct '[^']*'")
_ERROR_HEADER = re.compile(r"^ERROR: <input>:(\d+):(\d+): (.*)$")
_NO_OVERLOAD = re.compile(r"^found no matching overload for '([^']+)' applied to '\((.*)\)'$")
_ACCEPTED_RESULTS = {"bool", "dyn", "any"}


@dataclass(frozen=True)
class CelIssue:
    """One problem with an expression; `kind` maps to a field error type (invalid, forbidden, ...)."""

    kind: IssueKind
    detail: str


@dataclass(frozen=True)
class CompileResult:
    """Outcome of `compile_selector`: issues (empty when valid), the program, and the estimated cost."""

    expression: str
    issues: list[CelIssue] = field(default_factory=list)
    program: Selector | None = None
    cost: int = 0

    @property
    def ok(self) -> bool:
        return not self.issues


def render_error(source: str, offset: int, message: str) -> str:
    """cel-go's `Error.ToDisplayString`: header, source line, caret line (a dot per column, then `^`)."""
    line_start = source.rfind("\n", 0, offset) + 1
    line_no = source.count("\n", 0, offset) + 1
    line_end = source.find("\n", offset)
    snippet = source[line_start : line_end if line_end != -1 else len(source)]
    column = offset - line_start
    return f"ERROR: <input>:{line_no}:{column + 1}: {message}" + _snippet(snippet, column)


def _snippet(line: str, column: int) -> str:
    line = line.replace("\t", " ")
    dots = "".join("\uff0e" if ord(ch) > 0x7F else "." for ch in line[:column])
    caret = "\uff3e" if column < len(line) and ord(line[column]) > 0x7F else "^"
    return f"\n | {line}\n | {dots}{caret}"


def _split_types(text: str) -> list[str]:
    """`map(string, dyn), int` → [`map(string, dyn)`, `int`]: commas at parenthesis depth zero."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _call_at(parsed: Any, offset: int) -> Any | None:
    """The call expression the parser placed at `offset` (a `(` or an operator), if any."""
    if parsed is None:
        return None
    positions = parsed.source_info.positions
    stack = [parsed.expr]
    while stack:
        e = stack.pop()
        if e.WhichOneof("expr_kind") == "call_expr" and positions.get(e.id) == offset:
            return e
        stack.extend(children(e))
    return None


def _offset(source_lines: list[str], line: int, column: int) -> int:
    return sum(len(s) + 1 for s in source_lines[: line - 1]) + column - 1


def _translate_message(message: str, source_lines: list[str], line: int, column: int, parsed: Any) -> str:
    message = _UNDEFINED_FIELD.sub(r"undefined field '\1'", message)
    m = _NO_OVERLOAD.match(message)
    call = _call_at(parsed, _offset(source_lines, line, column)) if m else None
    if m is None or call is None:
        return message
    types = _split_types(m.group(2))
    member = call.call_expr.HasField("target")
    args = ([call.call_expr.target] if member else []) + list(call.call_expr.args)
    if len(args) == len(types):
        # What cel-expr-python cannot declare (messages.py), as upstream's checker names it.
        for i, arg in enumerate(args):
            shape = shape_of(arg)
            if shape is Shape.CAPACITY_DOMAIN and types[i] == "map(string, dyn)":
                types[i] = f"map(string, {QUANTITY_TYPE})"
            elif shape is Shape.CAPACITY_VALUE and types[i] == "dyn":
                types[i] = QUANTITY_TYPE
    sig = f"{types[0]}.({', '.join(types[1:])})" if member and types else f"({', '.join(types)})"
    return f"found no matching overload for '{m.group(1)}' applied to '{sig}'"


def _logical_operands(
    message: str, source: str, source_lines: list[str], line: int, column: int, parsed: Any
) -> list[str]:
    """cel-go checks `&&` and `||` operand by operand: `expected type 'bool' but found 'int'` at each operand
    that is not a bool, where cel-cpp reports the operator with no matching overload. [] for other errors."""
    m = _NO_OVERLOAD.match(message)
    if m is None or m.group(1) not in ("_&&_", "_||_"):
        return []
    call = _call_at(parsed, _offset(source_lines, line, column))
    types = _split_types(m.group(2))
    if call is None or len(call.call_expr.args) != len(types):
        return []
    positions = parsed.source_info.positions
    return [
        render_error(source, positions.get(arg.id, 0), f"expected type 'bool' but found '{t}'")
        for arg, t in zip(call.call_expr.args, types, strict=True)
        if t not in ("bool", "dyn")
    ]


def translate_compile_error(raw: str, source: str, parsed: Any = None) -> str:
    """cel-cpp's compile status text → cel-go's `issues.String()` (same layout, cel-go wording); `parsed` is
    the unchecked AST (`parse_parsed`), used to name types as upstream does."""
    text = _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", raw.strip()))
    source_lines = source.split("\n")
    out: list[str] = []
    for line in text.split("\n"):
        m = _ERROR_HEADER.match(line)
        if m and "'*error*'" in m.group(3):
            continue  # cel-cpp's follow-on error on an operand that failed; cel-go reports the first only
        if m:
            ln, col = int(m.group(1)), int(m.group(2))
            logical = _logical_operands(m.group(3), source, source_lines, ln, col, parsed)
            if logical:
                out.extend(logical)
                continue
            msg = _translate_message(m.group(3), source_lines, ln, col, parsed)
            snippet = _snippet(source_lines[ln - 1], col - 1) if 1 <= ln <= len(source_lines) else ""
            if not source:  # cel-go places an empty input's error at column 0, and has no line to show
                col, snippet = 0, ""
            out.append(f"ERROR: <input>:{ln}:{col}: {msg}{snippet}")
        elif not out:
            out.append(line)
    return "\n".join(out)


def _parse_only(env: Any, expression: str) -> Any:
    try:
        return parse_parsed(env.compile(expression, disable_check=True).serialize())
    except RuntimeError:
        return None


def compile_selector(expression: str, gates: FeatureGates, *, stored: bool = False) -> CompileResult:
    """Compile a selector in the NewExpressions environment of `gates` (validation), or with `stored` in the
    StoredExpressions environment as the scheduler does: every field and function, and no cost limit
    (upstream's allocator disables the estimate; `cost` is still filled in)."""
    env = checking_env(EnvKey.for_gates(gates, stored))
    try:
        compiled = env.compile(expression)
    except RuntimeError as exc:
        parsed = _parse_only(env, expression) if "found no matching overload" in str(exc) else None
        detail = "compilation failed: " + translate_compile_error(str(exc), expression, parsed)
        if not release(gates.release).cel_container_in_undeclared:
            detail = detail.replace(" (in container '')", "")
        return CompileResult(expression, [CelIssue("invalid", detail)], None, COST_LIMIT + 1)
    checked = parse_checked(compiled.serialize())
    literals = literal_issues(checked)
    type_errors = quantity_issues(checked) + [i for i in literals if i.kind == "invalid"]
    if not stored and not gates.enabled(DRA_LIST_TYPE_ATTRIBUTES):
        type_errors += attribute_range_issues(checked)
    if type_errors:
        type_errors.sort(key=lambda t: t.offset)
        rendered = "\n".join(render_error(expression, t.offset, t.message) for t in type_errors)
        if not release(gates.release).cel_container_in_undeclared:
            rendered = rendered.replace(" (in container '')", "")
        return CompileResult(
            expression, [CelIssue("invalid", "compilation failed: " + rendered)], None, COST_LIMIT + 1
        )
    root_type = checked.type_map.get(checked.expr.id)
    result_type = type_name(root_type) if root_type is not None else "dyn"
    if result_type not in _ACCEPTED_RESULTS:
        detail = f"must evaluate to bool or the unknown type, not {result_type}"
        return CompileResult(expression, [CelIssue("invalid", detail)], None, COST_LIMIT + 1)
    failed = next((i for i in literals if i.kind == "internal"), None)
    if failed is not None:  # upstream builds the program before it estimates the cost
        return CompileResult(expression, [CelIssue("internal", failed.message)], None, COST_LIMIT + 1)
    cost = estimate_cost(checked, release(gates.release).cel_url_sizes)
    too_costly = cost > COST_LIMIT and not stored
    issues = [CelIssue("forbidden", "too complex, exceeds cost limit")] if too_costly else []
    return CompileResult(expression, issues, Selector(expression, checked), cost)
