"""Simulate's output: the JSON contract (shapes in the CLI contract, key order included) and the table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from allocator.cluster import Cluster
from allocator.ids import DeviceID
from allocator.simulate.run import ClaimOutcome, ClaimRun, PodOutcome, PodRun, Simulation
from resourceapi.resource_v1 import AllocationResult, ResourceSlice


def _claim_json(c: ClaimOutcome) -> dict[str, Any]:
    return {
        "namespace": c.namespace,
        "name": c.name,
        "allocation": c.allocation.to_api() if c.allocation else None,
    }


def _pod_json(p: PodOutcome) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "namespace": p.namespace,
        "name": p.name,
        "result": p.result,
        "reason": p.reason,
        "node": p.node,
        "claim": p.claim.to_api() if p.claim is not None else None,
        "extendedResourceClaimStatus": p.extended_status.to_api() if p.extended_status is not None else None,
    }
    if p.claims:
        entry["claims"] = [_claim_json(c) for c in p.claims]
    return entry


def to_json(sim: Simulation) -> dict[str, Any]:
    """The result as the contract's JSON document."""
    if isinstance(sim, ClaimRun):
        return {
            "mode": "claims",
            "node": sim.node,
            "result": sim.result,
            "reason": sim.reason,
            "claims": [_claim_json(c) for c in sim.claims],
        }
    return {"mode": "pods", "pods": [_pod_json(p) for p in sim.pods]}


def render_json(sim: Simulation) -> str:
    return json.dumps(to_json(sim), indent=2) + "\n"


# --- table output -------------------------------------------------------------------------------------------


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["   ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _share_rows(owner: str, result: str, node: str, allocation: AllocationResult | None) -> list[list[str]]:
    rows: list[list[str]] = []
    devices = allocation.devices if allocation is not None else None
    for d in (devices.results or []) if devices is not None else []:
        consumed = ",".join(f"{k}={v}" for k, v in sorted((d.consumed_capacity or {}).items()))
        share = d.share_id
        rows.append(
            [
                owner,
                result,
                node,
                d.request,
                f"{d.driver}/{d.pool}/{d.device}",
                share[:8] if share else "-",
                consumed or "-",
            ]
        )
    return rows


def _result_rows(sim: Simulation) -> tuple[list[list[str]], list[str]]:
    rows: list[list[str]] = []
    notes: list[str] = []
    if isinstance(sim, ClaimRun):
        for c in sim.claims:
            owner = f"{c.namespace}/{c.name}"
            share_rows = _share_rows(owner, sim.result, sim.node, c.allocation)
            rows.extend(share_rows or [[owner, sim.result, sim.node, "-", "-", "-", "-"]])
        if sim.result != "allocated":
            notes.append(f"{sim.result}: {sim.reason}")
        return rows, notes
    assert isinstance(sim, PodRun)
    for p in sim.pods:
        owner = f"{p.namespace}/{p.name}"
        node = p.node or "-"
        pod_rows: list[list[str]] = []
        for c in p.claims:
            pod_rows.extend(_share_rows(owner, p.result, node, c.allocation))
        if p.claim is not None:
            allocation = p.claim.status.allocation if p.claim.status is not None else None
            pod_rows.extend(_share_rows(owner, p.result, node, allocation))
        rows.extend(pod_rows or [[owner, p.result, node, "-", "-", "-", "-"]])
        if p.result != "bound":
            notes.append(f"{owner}: {p.result}: {p.reason}")
    return rows, notes


def render_table(sim: Simulation, cluster: Cluster, slices: Sequence[ResourceSlice]) -> str:
    """People's view: a row per allocated device share, then capacity used/total per device after the run."""
    header = ["POD" if isinstance(sim, PodRun) else "CLAIM", "RESULT", "NODE", "REQUEST", "DEVICE", "SHARE"]
    rows, notes = _result_rows(sim)
    lines = _table([[*header, "CONSUMED"], *rows])
    if notes:
        lines.append("")
        lines.extend(notes)
    summary = [["DEVICE", "CAPACITY", "USED", "TOTAL"]]
    for s in sorted(slices, key=lambda s: (s.spec.driver, s.spec.pool.name, s.metadata.name)):
        for d in s.spec.devices or []:
            if not d.capacity:
                continue
            device = DeviceID(s.spec.driver, s.spec.pool.name, d.name)
            for cap, (used, total) in sorted(cluster.device_capacity(device).items()):
                summary.append([str(device), cap, str(used), str(total)])
    if len(summary) > 1:
        lines.append("")
        lines.extend(_table(summary))
    return "\n".join(lines) + "\n"
