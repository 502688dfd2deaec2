"""Warnings stay within 120 characters whatever the names in them."""

from __future__ import annotations

import pytest

from webhook.deviceclass import warning_texts

LONG = "x" * 253


@pytest.mark.parametrize(
    "text",
    [
        warning_texts.implicit_name_only(LONG),
        warning_texts.annotation_ignored(LONG),
        warning_texts.not_dropped(LONG, "DRAExtendedResourceCapacity"),
        warning_texts.double_spelling("s" * 32, "d" * 63 + "/" + "s" * 32),
        warning_texts.not_dropped(
            "dra-capacity.io/extended-resource-capacity-requests", "DRAExtendedResourceCapacity"
        ),
    ],
)
def test_warning_is_at_most_120_characters(text: str) -> None:
    assert len(text) <= warning_texts.MAX_WARNING_LENGTH


def test_short_names_are_kept_whole() -> None:
    assert warning_texts.implicit_name_only("gpu") == (
        "capacity requests apply only to deviceclass.resource.kubernetes.io/gpu: "
        "extendedResourceName is unset"
    )


def test_long_names_are_elided_in_the_middle() -> None:
    text = warning_texts.implicit_name_only("head-" + "m" * 240 + "-tail")
    assert "head-" in text and "-tail" in text and "..." in text
