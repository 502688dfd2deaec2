"""Drift check: every documented example of upstream's DRA CEL libraries compiles and evaluates here.

Examples: tests/resourceapi/data/upstream_cel_examples.txt (one a line, with the documented result).
A function upstream declares that our environment does not know ("undeclared reference", "no matching
overload") fails here with its name, before a user's selector meets it in a cluster.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from resourceapi.cel import CelRuntimeError, compile_selector, device_input
from resourceapi.cel.libraries import UPSTREAM_FUNCTIONS
from resourceapi.gates import FeatureGates

EXAMPLES = Path(__file__).parent / "data" / "upstream_cel_examples.txt"
GATES = FeatureGates.defaults()
DEVICE = device_input("dra.example.com", {}, {})
_MISSING = re.compile(r"(?:undeclared reference to|found no matching overload for) '([^']+)'")


def _examples() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for line in EXAMPLES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            expression, _, expected = line.rpartition(" => ")
            out.append((expression, expected))
    return out


HETEROGENEOUS = "expected type '"


def _compile(expression: str) -> object:
    result = compile_selector(expression, GATES)
    for issue in result.issues:
        missing = _MISSING.search(issue.detail)
        if missing and (missing.group(1) in UPSTREAM_FUNCTIONS or "." in missing.group(1)):
            pytest.fail(f"upstream declares {missing.group(1)!r}, this environment does not: {issue.detail}")
    if [i.kind for i in result.issues] == ["forbidden"]:
        # over the cost limit (scans of string lists are, for kube-apiserver too: test_cel_cost.py); the
        # scheduler's environment, which has no limit, still evaluates it
        result = compile_selector(expression, GATES, stored=True)
    assert result.issues == [], result.issues
    return result.program


def test_the_example_list_covers_every_library() -> None:
    text = EXAMPLES.read_text()
    for marker in ("url(", "find(", "isSorted", "ip(", "cidr(", "format.", "sets.", "lists.", "transformMap"):
        assert marker in text


def _heterogeneous(expression: str) -> bool:
    """Upstream compiles with homogeneous aggregate literals, so it refuses the examples that mix types in a
    list or map literal (kube-apiserver v1.37.2 does: tests/differential); so must we."""
    issues = compile_selector(expression, GATES).issues
    return bool(issues) and all(HETEROGENEOUS in i.detail for i in issues)


@pytest.mark.parametrize(("expression", "expected"), _examples())
def test_documented_example_compiles_and_evaluates(expression: str, expected: str) -> None:
    if _heterogeneous(expression):
        assert any(marker in expression for marker in ("[", "{")), expression
        return
    if expected == "error":
        program = _compile(f"[{expression}].size() == 1")
        with pytest.raises(CelRuntimeError):
            program.matches(DEVICE)  # type: ignore[attr-defined]
        return
    program = _compile(f"({expression}) == ({expected})")
    assert program.matches(DEVICE) is True  # type: ignore[attr-defined]
