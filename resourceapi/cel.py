"""The DRA CEL environment: the public names the webhook and the allocator use (see docs/internals.md)."""

from __future__ import annotations

from resourceapi.celcache import CacheStats, CelCache
from resourceapi.celcompile import CelIssue, CompileResult, compile_selector
from resourceapi.celcost import COST_LIMIT
from resourceapi.celdevice import CelRuntimeError, DeviceInput, Selector, device_input
from resourceapi.celenv import EnvKey

__all__ = [
    "COST_LIMIT",
    "CacheStats",
    "CelCache",
    "CelIssue",
    "CelRuntimeError",
    "CompileResult",
    "DeviceInput",
    "EnvKey",
    "Selector",
    "compile_selector",
    "device_input",
]
