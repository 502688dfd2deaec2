"""The DRA CEL environment: the public names the webhook and the allocator use (see docs/internals.md)."""

from __future__ import annotations

from resourceapi.api.limits import COST_LIMIT
from resourceapi.cel.cache import CacheStats, CelCache
from resourceapi.cel.compiler import CelIssue, CompileResult, compile_selector
from resourceapi.cel.device import CelRuntimeError, DeviceInput, Selector, device_input
from resourceapi.cel.env import EnvKey

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
