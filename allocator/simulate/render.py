"""Simulate's output: the JSON contract (shapes in docs/simulate.md, key order included) and the table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from allocator.simulate.run import ClaimOutcome, ClaimRun, PodOutcome, PodRun, Simulation
from allocator.structured.cluster import Cluster
from allocator.structured.ids import DeviceID
from resourceapi.api.resource_v1 import AllocationResult, ResourceSlice
from resourceapi.machinery.quantity import Format, Quantity


def _claim_json(c: ClaimOutcome) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namespace": c.namespace,
        "name": c.name,
        "allocation": c.allocation.to_api() if c.allocation else None,
    }
    if c.reserved_for:
        out["reservedFor"] = [r.to_api() for r in c.reserved_for]
    return out


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
    if p.claim_statuses:  # what the resourceclaim controller writes for claims it generated from templates
        entry["resourceClaimStatuses"] = [{"name": e, "resourceClaimName": c} for e, c in p.claim_statuses]
    if p.victims:  # placed by preemption: the pods evicted for it
        entry["victims"] = [{"namespace": ns, "name": name} for ns, name in p.victims]
    if p.explain is not None:
        entry["explain"] = list(p.explain)
    if any(c.devices for c in p.containers):
        entry["containers"] = [
            {
                "name": c.name,
                "devices": [
                    {
                        "claim": d.claim,
                        "request": d.request,
                        "driver": d.driver,
                        "pool": d.pool,
                        "device": d.device,
                    }
                    for d in c.devices
                ],
            }
            for c in p.containers
        ]
    return entry


def to_json(sim: Simulation) -> dict[str, Any]:
    """The result as the contract's JSON document."""
    if isinstance(sim, ClaimRun):
        out: dict[str, Any] = {
            "mode": "claims",
            "node": sim.node,
            "result": sim.result,
            "reason": sim.reason,
            "claims": [_claim_json(c) for c in sim.claims],
        }
        if sim.explain is not None:
            out["explain"] = list(sim.explain)
        return out
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
            notes.extend(f"  {line}" for line in sim.explain or ())
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
            notes.extend(f"  {line}" for line in p.explain or ())
        elif p.victims:
            gone = ", ".join(f"{ns}/{name}" for ns, name in p.victims)
            notes.append(f"{owner}: bound on {node} by preempting {gone}")
            notes.extend(f"  {line}" for line in p.explain or ())
    return rows, notes


def render_table(sim: Simulation, cluster: Cluster, slices: Sequence[ResourceSlice]) -> str:
    """People's view: a row per allocated device share; then, after the run, capacity used/total per device
    (a device allocated exclusively is wholly in use) and consumed/total per counter set."""
    header = ["POD" if isinstance(sim, PodRun) else "CLAIM", "RESULT", "NODE", "REQUEST", "DEVICE", "SHARE"]
    rows, notes = _result_rows(sim)
    lines = _table([[*header, "CONSUMED"], *rows])
    if notes:
        lines.append("")
        lines.extend(notes)
    ordered = sorted(slices, key=lambda s: (s.spec.driver, s.spec.pool.name, s.metadata.name))
    for table in (_device_rows(cluster, ordered), _counter_rows(cluster, ordered)):
        if len(table) > 1:
            lines.append("")
            lines.extend(_table(table))
    return "\n".join(lines) + "\n"


def _device_rows(cluster: Cluster, slices: Sequence[ResourceSlice]) -> list[list[str]]:
    rows = [["DEVICE", "CAPACITY", "USED", "TOTAL"]]
    for s in slices:
        for d in s.spec.devices or []:
            device = DeviceID(s.spec.driver, s.spec.pool.name, d.name)
            exclusive = device in cluster.state.dedicated
            if not d.capacity:
                if exclusive:
                    rows.append([str(device), "-", "in use", "-"])
                continue
            for cap, (used, total) in sorted(cluster.device_capacity(device).items()):
                rows.append([str(device), cap, str(total if exclusive else used), str(total)])
    return rows


def _counter_rows(cluster: Cluster, slices: Sequence[ResourceSlice]) -> list[list[str]]:
    """Per counter set of each pool (its newest generation): what allocated devices consume, of the total."""
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        key = (s.spec.driver, s.spec.pool.name)
        newest[key] = max(newest.get(key, s.spec.pool.generation), s.spec.pool.generation)
    totals: dict[tuple[str, str, str, str], Quantity] = {}
    consumed: dict[tuple[str, str, str, str], Fraction] = {}
    for s in slices:
        driver, pool = s.spec.driver, s.spec.pool.name
        if s.spec.pool.generation != newest[(driver, pool)]:
            continue
        for cs in s.spec.shared_counters or []:
            for name, counter in cs.counters.items():
                totals[(driver, pool, cs.name, name)] = counter.value
        for d in s.spec.devices or []:
            if not d.consumes_counters or not cluster.state.is_allocated(DeviceID(driver, pool, d.name)):
                continue
            for use in d.consumes_counters:
                for name, counter in use.counters.items():
                    counter_key = (driver, pool, use.counter_set, name)
                    consumed[counter_key] = consumed.get(counter_key, Fraction(0)) + counter.value.value
    rows = [["COUNTER SET", "COUNTER", "CONSUMED", "TOTAL"]]
    for (driver, pool, set_name, name), total in sorted(totals.items()):
        used = consumed.get((driver, pool, set_name, name), Fraction(0))
        fmt = total.format if used.denominator == 1 else Format.DECIMAL_SI
        rows.append([f"{driver}/{pool}/{set_name}", name, str(Quantity.from_fraction(used, fmt)), str(total)])
    return rows
