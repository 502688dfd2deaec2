"""Upstream's shared allocator table (support/allocatortesting): one runner for every row.

A row is the claims, classes, slices, node, gates and earlier allocations of one upstream case, with its
expected results or error (and, where upstream counts them, allocateOne steps); the test id is upstream's
name.
"""

from __future__ import annotations

import pytest
from support.allocatortesting.case import Case, check_case
from support.allocatortesting.table import TABLE


@pytest.mark.parametrize("case", TABLE.values(), ids=list(TABLE))
def test_allocate_matches_upstream(case: Case) -> None:
    check_case(case)
