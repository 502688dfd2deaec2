"""Where a checked-AST node sits in the `device` object: the DRA facts the cel-expr-python checker cannot see.

The checker types `device.attributes[d]` and `device.capacity[d]` as `map(string, dyn)` and their entries as
`dyn` (messages.py). Upstream knows a capacity entry is a `kubernetes.Quantity` and knows the size limits of
every part of `device`; the type checks (checks.py), the cost estimate (cost.py) and the evaluation
rewrite (device.py) ask this module which part of `device` an expression denotes.
"""

from __future__ import annotations

import enum
from typing import Any

INDEX = "_[_]"


class Shape(enum.Enum):
    """The part of `device` an expression denotes; OTHER for anything else."""

    DEVICE = "device"
    ATTRIBUTES = "attributes"  # device.attributes: map(domain, map(id, value))
    CAPACITY = "capacity"  # device.capacity: map(domain, map(id, Quantity))
    ATTRIBUTE_DOMAIN = "attribute domain"  # device.attributes[d]: map(id, value)
    CAPACITY_DOMAIN = "capacity domain"  # device.capacity[d]: map(id, Quantity)
    ATTRIBUTE_VALUE = "attribute value"  # device.attributes[d].id: int, bool, string, semver or a list
    CAPACITY_VALUE = "capacity value"  # device.capacity[d].id: Quantity
    DRIVER = "driver"  # device.driver
    OTHER = "other"


def _selected(e: Any) -> tuple[Any, str] | None:
    """(operand, key) for `x.key` (not a presence test) and `x["key"]`/`x[k]` (key "" when not constant)."""
    kind = e.WhichOneof("expr_kind")
    if kind == "select_expr" and not e.select_expr.test_only:
        return e.select_expr.operand, e.select_expr.field
    if kind == "call_expr" and e.call_expr.function == INDEX and len(e.call_expr.args) == 2:
        key = e.call_expr.args[1]
        text = key.const_expr.string_value if key.WhichOneof("expr_kind") == "const_expr" else ""
        return e.call_expr.args[0], text
    return None


def shape_of(e: Any, shadowed: frozenset[str] = frozenset()) -> Shape:
    """Which part of `device` `e` denotes (`device` itself only when no local variable shadows it)."""
    kind = e.WhichOneof("expr_kind")
    if kind == "ident_expr":
        return Shape.DEVICE if e.ident_expr.name == "device" and "device" not in shadowed else Shape.OTHER
    sel = _selected(e)
    if sel is None:
        return Shape.OTHER
    operand, key = sel
    parent = shape_of(operand, shadowed)
    if parent is Shape.DEVICE and kind == "select_expr":
        return {"attributes": Shape.ATTRIBUTES, "capacity": Shape.CAPACITY, "driver": Shape.DRIVER}.get(
            key, Shape.OTHER
        )
    return {
        Shape.ATTRIBUTES: Shape.ATTRIBUTE_DOMAIN,
        Shape.CAPACITY: Shape.CAPACITY_DOMAIN,
        Shape.ATTRIBUTE_DOMAIN: Shape.ATTRIBUTE_VALUE,
        Shape.CAPACITY_DOMAIN: Shape.CAPACITY_VALUE,
    }.get(parent, Shape.OTHER)


def selected_operand(e: Any) -> Any | None:
    """The operand of a selection or index expression, or None."""
    sel = _selected(e)
    return None if sel is None else sel[0]


def children(e: Any) -> list[Any]:
    """Direct sub-expressions, in source order."""
    kind = e.WhichOneof("expr_kind")
    if kind == "select_expr":
        return [e.select_expr.operand]
    if kind == "call_expr":
        c = e.call_expr
        return ([c.target] if c.HasField("target") else []) + list(c.args)
    if kind == "list_expr":
        return list(e.list_expr.elements)
    if kind == "struct_expr":
        out: list[Any] = []
        for entry in e.struct_expr.entries:
            if entry.WhichOneof("key_kind") == "map_key":
                out.append(entry.map_key)
            out.append(entry.value)
        return out
    if kind == "comprehension_expr":
        c = e.comprehension_expr
        return [c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result]
    return []
