"""Accessors for the parts of a decoded DeviceClass: never raise, empty when absent or of the wrong type."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from resourceapi.machinery.objects import annotations_of, display_name, metadata_of, parse_time, spec_of


@pytest.mark.parametrize("obj", [None, "x", [], {}, {"spec": []}, {"metadata": "x"}])
def test_missing_or_mistyped_parts_read_as_empty(obj: Any) -> None:
    assert (metadata_of(obj), spec_of(obj), annotations_of(obj)) == ({}, {}, {})


def test_mistyped_annotations_read_as_empty() -> None:
    assert annotations_of({"metadata": {"annotations": ["a"]}}) == {}


def test_parts_are_returned_as_they_are() -> None:
    obj = {"metadata": {"name": "gpu", "annotations": {"a": "b"}}, "spec": {"selectors": []}}
    assert metadata_of(obj) is obj["metadata"]
    assert spec_of(obj) is obj["spec"]
    assert annotations_of(obj) == {"a": "b"}


@pytest.mark.parametrize(
    ("metadata", "want"),
    [
        ({"name": "gpu", "generateName": "gpu-"}, "gpu"),
        ({"name": "", "generateName": "gpu-"}, "gpu-"),
        ({"name": ["gpu"], "generateName": "gpu-"}, "gpu-"),
        ({"name": 5}, ""),
        ({}, ""),
    ],
)
def test_display_name_is_the_name_else_the_generate_name_prefix(metadata: dict[str, Any], want: str) -> None:
    assert display_name({"metadata": metadata}) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04:05.250000Z", datetime(2026, 1, 2, 3, 4, 5, 250000, tzinfo=UTC)),
        ("2026-01-02T03:04:05+02:00", datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))),
        ("2026-01-02T03:04:05", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("yesterday", None),
        ("", None),
        (None, None),
        (1767323045, None),
    ],
)
def test_parse_time_reads_a_metav1_time_else_none(value: Any, want: datetime | None) -> None:
    got = parse_time(value)
    assert got == want
    assert got is None or got.tzinfo is not None
