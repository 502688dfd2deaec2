"""Upstream's allocator `interrupt` test: a search that cannot succeed, run to the end or interrupted.

Upstream interrupts through the context (filter timeout); here the bound is a number of allocateOne steps.
"""

from __future__ import annotations

from typing import Any

from support.allocatortesting.case import (
    features,
)
from support.dra_objects import (
    CLAIM0,
    DRIVER_A,
    NODE1,
    POOL1,
    REQ0,
    SLICE1,
    claim,
    cluster,
    device,
    device_class,
    node,
    request,
    resource_slice,
)


# upstream's "interrupt" test: a search that cannot succeed (6 of 5 devices), run to the end or interrupted.
# Upstream interrupts through the context (filter timeout); here the bound is a number of allocateOne steps.
def interrupt(max_steps: int | None) -> Any:
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *(device(f"device-{i}") for i in range(1, 6)))]
    core = cluster([device_class()], slices, feature_gates=features())
    return core.allocate(node(), [claim(CLAIM0, request(REQ0, count=6))], max_steps=max_steps)


def test_interrupt_off_searches_to_the_end() -> None:
    outcome = interrupt(None)
    assert (outcome.results, outcome.error) == (None, None)


def test_interrupt_makes_the_node_fail_as_timed_out() -> None:
    outcome = interrupt(1)
    assert (outcome.results, outcome.error, outcome.node_failure) == (
        None,
        "timed out trying to allocate devices",
        True,
    )


def test_interrupt_budget_covering_the_whole_search_changes_nothing() -> None:
    steps = interrupt(None).allocate_one_calls
    assert interrupt(steps).error is None
    assert interrupt(steps - 1).error == "timed out trying to allocate devices"
