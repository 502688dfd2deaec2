"""NodeResourcesFit's LeastAllocated score and NodeResourcesBalancedAllocation's score over cpu and memory
(weight 1 each, the default), as pkg/scheduler/framework/plugins/noderesources/least_allocated.go,
balanced_allocation.go and resource_allocation.go compute them. Neither plugin normalizes.

Requests are those the fit filter counts (allocator/scheduling/predicates.py); upstream's LeastAllocated uses
the non-zero defaults for containers without cpu or memory requests (docs/divergences.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from allocator.scheduling.predicates import CPU, MEMORY
from allocator.scheduling.scoring import MAX_NODE_SCORE

RESOURCES: tuple[str, ...] = (CPU, MEMORY)


def _pairs(allocatable: Mapping[str, int], requested: Mapping[str, int]) -> list[tuple[int, int]]:
    """(allocatable, requested) of each scored resource the node has (a zero allocatable is skipped)."""
    return [(allocatable.get(r, 0), requested.get(r, 0)) for r in RESOURCES if allocatable.get(r, 0) > 0]


def least_allocated(allocatable: Mapping[str, int], requested: Mapping[str, int]) -> int:
    """leastResourceScorer: per resource `(allocatable - requested) * 100 / allocatable` (0 when over),
    averaged by weight with integer division."""
    pairs = _pairs(allocatable, requested)
    if not pairs:
        return 0
    total = sum(0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc for alloc, req in pairs)
    return total // len(pairs)


def balanced_allocation(
    allocatable: Mapping[str, int], requested: Mapping[str, int], pod_requests_any: bool
) -> int:
    """balancedResourceScorer: `(1 - std) * 100` of the requested fractions (each at most 1); two resources:
    std is half their difference. PreScore skips a pod that requests none of them (score 0)."""
    if not pod_requests_any:
        return 0
    fractions = [min(req / alloc, 1.0) for alloc, req in _pairs(allocatable, requested)]
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)
