"""Typed outcomes of selector compilation and evaluation (what `SelectorEngine` returns instead of text).

A failure keeps upstream's message; the allocator error built from it (allocator/structured/selection.py) adds
the class or claim, the selector index and, for a runtime failure, the device, as the structured allocator
does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class FailureKind(enum.Enum):
    """Whether the expression failed to compile (scheduler skew) or failed on one device."""

    COMPILE = "compile"
    RUNTIME = "runtime"


@dataclass(frozen=True, slots=True)
class CelFailure:
    """One CEL failure: its kind and upstream's message (`compilation failed: ...`, `no such key: x`)."""

    kind: FailureKind
    message: str

    @staticmethod
    def compile_error(message: str) -> CelFailure:
        return CelFailure(FailureKind.COMPILE, message)

    @staticmethod
    def runtime_error(message: str) -> CelFailure:
        return CelFailure(FailureKind.RUNTIME, message)


@dataclass(frozen=True, slots=True)
class SelectorFailure:
    """The first failing selector of a list, by index (cached per device record like a match result)."""

    index: int
    failure: CelFailure
