"""Toleration matching shared by node taints (core/v1) and device taints (resource.k8s.io/v1).

Upstream has the same rule twice (`v1.Toleration.ToleratesTaint` and `resourceclaim.ToleratesTaint`); the two
API types have the same four fields, so one function serves both.
"""

from __future__ import annotations

from typing import Protocol


class _Toleration(Protocol):
    @property
    def key(self) -> str | None: ...
    @property
    def operator(self) -> str | None: ...
    @property
    def value(self) -> str | None: ...
    @property
    def effect(self) -> str | None: ...


class _Taint(Protocol):
    @property
    def key(self) -> str | None: ...
    @property
    def value(self) -> str | None: ...
    @property
    def effect(self) -> str | None: ...


def tolerates(toleration: _Toleration, taint: _Taint) -> bool:
    """Effect and key match when set; `Exists` matches any value, `Equal` (the default) the same value."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.value or "") == (taint.value or "")
    return False
