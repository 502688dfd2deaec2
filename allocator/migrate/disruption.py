"""PodDisruptionBudgets against a drain: how many of a budget's pods a batch evicts, and how many it allows.

A budget's allowance is its `status.disruptionsAllowed` when the input has it (the disruption controller's
figure); else it is computed as that controller does (pkg/controller/disruption/disruption.go,
getExpectedPodCount): `minAvailable` or `maxUnavailable`, an integer or a percentage of the matching pods
(minAvailable rounds up, maxUnavailable rounds up as intstr.GetScaledValueFromIntOrPercent does).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from allocator.scheduling.labelselectors import selector_matches
from resourceapi.api.core_v1 import Pod
from resourceapi.api.meta import LabelSelector


@dataclass(frozen=True)
class Budget:
    namespace: str
    name: str
    selector: LabelSelector | None
    min_available: int | str | None
    max_unavailable: int | str | None
    allowed: int | None  # status.disruptionsAllowed


@dataclass(frozen=True)
class BudgetCheck:
    """One budget a batch's drain meets: its pods on the batch and the disruptions it allows now; `stalls`:
    how many of them the drain cannot evict, their replacements having no room outside the batch."""

    budget: str  # "ns/name"
    evicted: int
    allowed: int
    pods: tuple[str, ...] = ()  # "ns/name" of the batch's pods it covers
    stalls: int = 0

    @property
    def blocks(self) -> bool:
        return self.evicted > self.allowed


def read_budgets(objs: Iterable[Mapping[str, Any]]) -> list[Budget]:
    out = []
    for obj in objs:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        raw = spec.get("selector")
        selector = LabelSelector.model_validate(raw) if isinstance(raw, dict) else None
        allowed = status.get("disruptionsAllowed")
        out.append(
            Budget(
                meta.get("namespace") or "default",
                str(meta.get("name") or ""),
                selector,
                spec.get("minAvailable"),
                spec.get("maxUnavailable"),
                allowed if isinstance(allowed, int) else None,
            )
        )
    return out


def _scaled(value: int | str, total: int, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        exact = int(text[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(text)


def allowance(budget: Budget, healthy: int) -> int:
    """Disruptions the budget allows with `healthy` matching pods running."""
    if budget.allowed is not None:
        return budget.allowed
    if budget.max_unavailable is not None:
        return max(0, _scaled(budget.max_unavailable, healthy, True))
    if budget.min_available is not None:
        return max(0, healthy - _scaled(budget.min_available, healthy, True))
    return healthy


def stalled(check: BudgetCheck, placed: int) -> int:
    """How many of the budget's pods the drain cannot evict when `placed` of its evicted pods' replacements
    run elsewhere while the batch is cordoned: it evicts `allowed`, then one more per replacement running
    (the disruption controller's count of healthy pods), and nothing returns the batch before it ends."""
    return max(0, check.evicted - check.allowed - placed)


def check_drain(
    budgets: Sequence[Budget], running: Iterable[Pod], evicted: Sequence[Pod]
) -> list[BudgetCheck]:
    """The budgets the eviction of `evicted` meets (out of the `running` pods)."""
    if not budgets or not evicted:
        return []
    running = list(running)
    out = []
    for b in budgets:

        def matches(p: Pod, b: Budget = b) -> bool:
            return p.namespace == b.namespace and selector_matches(b.selector, p.metadata.labels or {})

        hit = tuple(f"{p.namespace}/{p.name}" for p in evicted if matches(p))
        if hit:
            healthy = sum(1 for p in running if matches(p))
            out.append(BudgetCheck(f"{b.namespace}/{b.name}", len(hit), allowance(b, healthy), hit))
    return out
