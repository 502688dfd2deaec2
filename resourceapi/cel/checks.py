"""Type checks upstream makes and the cel-expr-python checker cannot: a capacity entry is a Quantity.

cel-expr-python sees `device.capacity[d].x` as `dyn`, so `device.capacity["d"].memory >= 5` would pass its
checker; upstream rejects it with `found no matching overload`. This pass walks the checked AST and, for
every call taking a capacity entry, asks whether any overload the checker kept for that call takes a Quantity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from resourceapi.cel.checked import type_name
from resourceapi.cel.messages import QUANTITY_TYPE
from resourceapi.cel.shape import Shape, children, shape_of

# Overload ids that accept a Quantity at the given argument positions (receiver = position 0).
_QUANTITY_POSITIONS: dict[str, tuple[int, ...]] = {
    "quantity_sign": (0,),
    "quantity_is_greater_than": (0, 1),
    "quantity_is_less_than": (0, 1),
    "quantity_compare_to": (0, 1),
    "quantity_get_float": (0,),
    "quantity_get_int": (0,),
    "quantity_is_integer": (0,),
    "quantity_add": (0, 1),
    "quantity_add_int": (0,),
    "quantity_sub": (0, 1),
    "quantity_sub_int": (0,),
    "dyn_includes_dyn": (0, 1),
    "to_dyn": (0,),
    "type": (0,),
    "conditional": (1, 2),
    "optional_of": (0,),
    "optional_ofNonZeroValue": (0,),
    "in_list": (0,),
    "in_map": (0,),
}
# Overloads whose type parameter must bind the same type at both positions.
_SAME_TYPE = {"equals", "not_equals"}
_FLEXIBLE = {"dyn", QUANTITY_TYPE}


@dataclass(frozen=True)
class TypeIssue:
    """A type error found in the checked AST: message (cel-go wording) and source offset of the call."""

    offset: int
    message: str


def _arg_type(checked: Any, e: Any) -> str:
    if shape_of(e) is Shape.CAPACITY_VALUE:
        return QUANTITY_TYPE
    t = checked.type_map.get(e.id)
    return type_name(t) if t is not None else "dyn"


def _accepts(checked: Any, overload_ids: list[str], args: list[Any], position: int) -> bool:
    for oid in overload_ids:
        if position in _QUANTITY_POSITIONS.get(oid, ()):
            return True
        if oid in _SAME_TYPE and len(args) == 2 and _arg_type(checked, args[1 - position]) in _FLEXIBLE:
            return True
    return False


def _signature(types: list[str], member: bool) -> str:
    """cel-go's `formatFunctionDeclType`: `(a, b)`, or `target.(a)` for a member call."""
    if member:
        return f"{types[0]}.({', '.join(types[1:])})"
    return f"({', '.join(types)})"


def quantity_issues(checked: Any) -> list[TypeIssue]:
    """Calls that take a capacity entry where none of the checker's candidate overloads takes a Quantity, and
    message literals (our types are messages only to the checker)."""
    issues: list[TypeIssue] = []
    positions = checked.source_info.positions
    stack = [checked.expr]
    while stack:
        e = stack.pop()
        stack.extend(reversed(children(e)))
        kind = e.WhichOneof("expr_kind")
        if kind == "struct_expr" and e.struct_expr.message_name:
            # Upstream declares no message types: `kubernetes.Quantity{...}` names nothing there.
            name = e.struct_expr.message_name
            issues.append(
                TypeIssue(positions.get(e.id, 0), f"undeclared reference to '{name}' (in container '')")
            )
            continue
        if kind != "call_expr":
            continue
        call = e.call_expr
        member = call.HasField("target")
        args = ([call.target] if member else []) + list(call.args)
        ref = checked.reference_map.get(e.id)
        if ref is None or not ref.overload_id:
            continue
        overloads = list(ref.overload_id)
        for pos, arg in enumerate(args):
            if shape_of(arg) is not Shape.CAPACITY_VALUE or _accepts(checked, overloads, args, pos):
                continue
            sig = _signature([_arg_type(checked, a) for a in args], member)
            issues.append(
                TypeIssue(
                    positions.get(e.id, 0),
                    f"found no matching overload for '{call.function}' applied to '{sig}'",
                )
            )
            break
    issues.sort(key=lambda i: i.offset)
    return issues


ANY_RANGE = "expression of type 'any' cannot be range of a comprehension (must be list, map, or dynamic)"


def attribute_range_issues(checked: Any) -> list[TypeIssue]:
    """Comprehensions (`exists`, `all`, `map`, ...) over a device attribute's value: upstream declares that
    value `any` unless DRAListTypeAttributes is on (`attributeTypeV131` in
    dynamic-resource-allocation/cel/compile.go; `dyn` with the gate), and cel-go cannot range over `any`.
    Our environment declares it `dyn`, so the caller applies this check without the gate."""
    issues: list[TypeIssue] = []
    positions = checked.source_info.positions
    stack = [checked.expr]
    while stack:
        e = stack.pop()
        stack.extend(reversed(children(e)))
        if e.WhichOneof("expr_kind") != "comprehension_expr":
            continue
        rng = e.comprehension_expr.iter_range
        if shape_of(rng) is Shape.ATTRIBUTE_VALUE:
            issues.append(TypeIssue(positions.get(rng.id, 0), ANY_RANGE))
    issues.sort(key=lambda i: i.offset)
    return issues
