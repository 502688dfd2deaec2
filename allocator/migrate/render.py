"""A plan as one document (`classes`, `workloads`, `steps`; `-o json|yaml`) and as a table for people."""

from __future__ import annotations

from typing import Any

from allocator.migrate.planner import ClassHeadroom, Move, Plan, Step


def _room(h: ClassHeadroom) -> dict[str, Any]:
    return {
        "class": h.name,
        "resource": h.resource,
        "total": h.total,
        "used": h.used,
        "free": h.free,
        "headroom": h.headroom,
        "capped": h.capped,
    }


def _move(m: Move) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namespace": m.namespace,
        "name": m.name,
        "owner": m.owner,
        "from": m.source,
        "result": m.result,
        "node": m.node,
        "via": m.via,
        "phase": m.phase,
    }
    if m.reason:
        out["reason"] = m.reason
    if m.explain is not None:
        out["explain"] = list(m.explain)
    return out


def _step(s: Step) -> dict[str, Any]:
    return {
        "step": s.index,
        "node": list(s.nodes),
        "pool": s.pool,
        "fits": s.fits,
        "actions": list(s.actions),
        "drain": {
            "evicted": sum(1 for m in s.moves if m.source in s.nodes),
            "barePods": list(s.bare),
            "daemonSetPods": list(s.daemonsets),
            "disruptionBudgets": [
                {
                    "name": b.budget,
                    "evicted": b.evicted,
                    "allowed": b.allowed,
                    "waits": b.blocks,
                    "stalls": b.stalls,
                }
                for b in s.budgets
            ],
        },
        "pods": [_move(m) for m in s.moves],
        "headroom": [_room(h) for h in s.headroom],
        "rollback": list(s.rollback),
    }


def to_json(plan: Plan) -> dict[str, Any]:
    return {
        "classes": [
            {
                "name": c.name,
                "resource": c.resource,
                "sharesPerGPU": list(c.replicas),
                "exists": c.exists,
                "driverSettings": list(c.driver_settings),
                "warnings": list(c.warnings),
                "manifest": c.manifest,
            }
            for c in plan.classes
        ],
        "workloads": [
            {
                "kind": w.kind,
                "namespace": w.namespace,
                "name": w.name,
                "resources": dict(sorted(w.resources.items())),
                "pods": len(w.pods),
                "changes": list(w.changes),
            }
            for w in plan.workloads
        ],
        "steps": [_step(s) for s in plan.steps],
        "fits": plan.fits,
        "firstFailingStep": plan.first_failing,
        "warnings": list(plan.warnings),
    }


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["   ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def render_table(plan: Plan) -> str:
    lines = ["CLASSES"]
    rows = [["CLASS", "RESOURCE", "SHARES/GPU", "STATUS"]]
    for c in plan.classes:
        rows.append(
            [c.name, c.resource, "|".join(map(str, c.replicas)), "exists" if c.exists else "to create"]
        )
    lines += _columns(rows)
    settings = sorted({s for c in plan.classes for s in c.driver_settings})
    lines += [f"  assumes: {s}" for s in settings]
    lines += [f"  warning: {w}" for w in plan.warnings]
    lines += ["", "WORKLOADS"]
    if plan.workloads:
        rows = [["NAMESPACE", "OWNER", "PODS", "ASKS"]]
        for w in plan.workloads:
            asks = ",".join(f"{r}={n}" for r, n in sorted(w.resources.items()))
            rows.append([w.namespace, f"{w.kind}/{w.name}", str(len(w.pods)), asks])
        table = _columns(rows)
        lines.append(table[0])
        for w, line in zip(plan.workloads, table[1:], strict=True):
            lines.append(line)
            lines += [f"  - {change}" for change in w.changes]
    else:
        lines.append("no workload asks for a shared resource")
    lines += ["", "STEPS"]
    rows = [
        [
            "STEP",
            "NODES",
            "EVICTED",
            "TO SHARES",
            "TO DEVICE PLUGIN",
            "UNPLACED",
            "FITS",
            "SHARES",
            "HEADROOM",
        ]
    ]
    for s in plan.steps:
        shares = sum(1 for m in s.moves if m.via == "shares")
        plugin = sum(1 for m in s.moves if m.via == "device plugin")
        unplaced = sum(1 for m in s.moves if m.result not in ("bound", "deleted"))
        room = ",".join(f"{h.name}={h.headroom}{'+' if h.capped else ''}" for h in s.headroom) or "-"
        used = ",".join(f"{h.used}/{h.total}" for h in s.headroom) or "-"
        nodes = _nodes_text(s)
        rows.append(
            [
                str(s.index),
                nodes,
                str(sum(1 for m in s.moves if m.source in s.nodes)),
                str(shares),
                str(plugin),
                str(unplaced),
                _yes(s.fits),
                used,
                room,
            ]
        )
    lines += _columns(rows)
    for s in plan.steps:
        if s.index == 0 or s.index == plan.first_failing:
            lines += ["", f"step {s.index}{' (the first that cannot keep every pod)' if not s.fits else ''}:"]
            lines += [f"  {a}" for a in s.actions]
            for m in s.moves:
                if m.result == "deleted":
                    lines.append(f"  deleted: {m.namespace}/{m.name} ({m.owner}): {m.reason}")
                elif m.result != "bound":
                    lines.append(f"  not placed: {m.namespace}/{m.name} ({m.owner}): {m.reason}")
                    lines += [f"    {why}" for why in m.explain or ()]
            lines.append("  rollback:")
            lines += [f"    {r}" for r in s.rollback]
    lines.append("")
    lines.append("-o yaml shows every step's commands, pods and rollback")
    return "\n".join(lines) + "\n"


def _nodes_text(s: Step) -> str:
    if not s.nodes:
        return "(install, classes, namespaces)"
    head = s.pool + ": " if s.pool else ""
    return head + (
        ",".join(s.nodes) if len(s.nodes) <= 3 else f"{s.nodes[0]}..{s.nodes[-1]} ({len(s.nodes)})"
    )


def _yes(value: bool) -> str:
    return "yes" if value else "no"
