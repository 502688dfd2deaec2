"""`dra-capacity top` output: kubectl-style columns (`-o wide` adds the devices), or one JSON/YAML document.

Units are pods of one unit of the class's extended resource; a share a requestPolicy rounded up shows as a
fraction of a unit (decimal, at most two places in the table, exact in JSON when whole).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from allocator.capacity.headroom import Headroom
    from allocator.capacity.view import ClassRow, NodeRow, Report

SHARED_NODE_LABEL = "<shared>"  # devices no single node owns (slices for several nodes)


def number(value: Fraction | int) -> int | float:
    """A whole number as an int, else a float (JSON)."""
    if isinstance(value, int):
        return value
    return value.numerator if value.denominator == 1 else round(float(value), 4)


def _cell(value: Fraction | int) -> str:
    n = number(value)
    if isinstance(n, int):
        return str(n)
    return f"{n:.2f}".rstrip("0").rstrip(".")


def _headroom_cell(room: Headroom | None) -> str:
    if room is None:
        return "-"
    return f"{room.count}+" if room.capped else str(room.count)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """kubectl's printer: columns left-aligned, three spaces apart, upper-case headers."""
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = []
    for row in [list(header), *rows]:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def render_table(report: Report, *, wide: bool = False) -> str:
    """Two tables: classes (with pending pods and headroom), then nodes; `wide` adds the devices (and the
    class of each node row)."""
    if not report.classes:
        return "No capacity-backed extended resources found (no DeviceClass with extendedResourceName).\n"
    header = ["CLASS", "RESOURCE", "TOTAL", "USED", "FREE", "PENDING", "HEADROOM"]
    if wide:
        header.append("DEVICES")
    rows = []
    for c in report.classes:
        row = [
            c.name,
            c.resource,
            str(c.total),
            _cell(c.used),
            _cell(c.free),
            str(c.pending),
            _headroom_cell(c.headroom),
        ]
        if wide:
            row.append(str(c.devices))
        rows.append(row)
    out = _table(header, rows)
    if report.shape is not None:
        out += f"\nshape {report.shape}: {_headroom_cell(report.shape_headroom)} more fit now\n"
    node_header = ["NODE", "RESOURCE", "TOTAL", "USED", "FREE"]
    if wide:
        node_header = ["NODE", "CLASS", "RESOURCE", "TOTAL", "USED", "FREE", "DEVICES"]
    node_rows = []
    for n in report.nodes:
        node = n.node or SHARED_NODE_LABEL
        if wide:
            node_rows.append(
                [node, n.class_name, n.resource, str(n.total), _cell(n.used), _cell(n.free), str(n.devices)]
            )
        else:
            node_rows.append([node, n.resource, str(n.total), _cell(n.used), _cell(n.free)])
    if node_rows:
        out += "\n" + _table(node_header, node_rows)
    return out


def _class_doc(c: ClassRow) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": c.name,
        "resource": c.resource,
        "total": c.total,
        "used": number(c.used),
        "free": number(c.free),
        "devices": c.devices,
        "pending": c.pending,
        "headroom": c.headroom.count if c.headroom is not None else None,
        "headroomCapped": c.headroom.capped if c.headroom is not None else False,
    }
    if c.problem:
        doc["problem"] = c.problem
    return doc


def _node_doc(n: NodeRow) -> dict[str, Any]:
    return {
        "node": n.node or None,
        "class": n.class_name,
        "resource": n.resource,
        "total": n.total,
        "used": number(n.used),
        "free": number(n.free),
        "devices": n.devices,
    }


def to_json(report: Report) -> dict[str, Any]:
    """The `-o json|yaml` document: `classes` and `nodes` (node null: devices no single node owns), and
    `shape` with `--shape`."""
    doc: dict[str, Any] = {
        "classes": [_class_doc(c) for c in report.classes],
        "nodes": [_node_doc(n) for n in report.nodes],
    }
    if report.shape is not None:
        room = report.shape_headroom
        doc["shape"] = {
            "name": report.shape,
            "headroom": room.count if room is not None else None,
            "headroomCapped": room.capped if room is not None else False,
        }
    return doc
