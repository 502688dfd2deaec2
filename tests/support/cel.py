"""A selector compiled for the CEL tests, with the checks each evaluating test starts from: no issues, and
a program to run (resourceapi/cel/compiler.py)."""

from __future__ import annotations

from resourceapi.cel import Selector, compile_selector
from resourceapi.gates import FeatureGates


def compiled(expression: str, gates: FeatureGates, *, stored: bool = False) -> Selector:
    """The program of `expression`, asserting that it compiled without issues; `stored`: the scheduler's
    environment (no cost limit)."""
    result = compile_selector(expression, gates, stored=stored)
    assert result.issues == [], result.issues
    assert result.program is not None
    return result.program
