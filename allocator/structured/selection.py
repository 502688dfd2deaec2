"""Selector matching with caches: class selectors per (class version, device record), request selectors per
(expressions, device record). A device record lives as long as its slice version, so a slice change drops its
cached results with it. CEL compile and runtime errors are fatal, with upstream's messages
(`staging/src/k8s.io/dynamic-resource-allocation/structured/internal/experimental/allocator_experimental.go`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from allocator.structured.celfailures import CelFailure, FailureKind, SelectorFailure
from allocator.structured.errors import AllocationError
from allocator.structured.pools import DeviceRecord, node_matches
from resourceapi.api.resource_v1 import DeviceClass
from resourceapi.cel.cache import program_bytes

NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for "
    "optional fields"
)


# Compiled programs kept by one Matcher, by estimated memory (resourceapi/cel/cache.py): emptied when full.
PROGRAMS_MAX_BYTES = 32 * 1024 * 1024


class Program(Protocol):
    """A compiled selector."""

    def matches(self, device: Any) -> bool: ...

    def ast_size(self) -> int:
        """Serialized size of its checked AST (the compile cache's weight)."""
        ...


class SelectorEngine(Protocol):
    """What selection needs of CEL: compile once, build a device's input once, evaluate."""

    def compile(self, expression: str) -> Program | CelFailure:
        """The program, or the compile failure (e.g. "compilation failed: ERROR: <input>:1:1: ...")."""
        ...

    def device_input(self, device: DeviceRecord) -> Any: ...

    def evaluate(self, program: Program, device_input: Any) -> bool | CelFailure:
        """The result, or the runtime failure."""
        ...


class ClassRecord:
    """One DeviceClass version: its identity is the cache key of selector results."""

    __slots__ = ("config", "model", "name", "selectors")

    def __init__(self, model: DeviceClass) -> None:
        self.model = model
        self.name = model.metadata.name
        self.selectors: tuple[str | None, ...] = tuple(
            s.cel.expression if s.cel is not None else None for s in model.spec.selectors or ()
        )
        self.config = model.spec.config or []


def enhance_runtime_error(text: str) -> str:
    """Upstream cel.EnhanceRuntimeError: a hint for `no such key` errors."""
    if "no such key:" in text and NO_SUCH_KEY_HINT not in text:
        return text + NO_SUCH_KEY_HINT
    return text


class Matcher:
    """Evaluates class and request selectors against devices, caching per device record."""

    __slots__ = ("_engine", "_programs", "_programs_bytes")

    def __init__(self, engine: SelectorEngine) -> None:
        self._engine = engine
        self._programs: dict[str, Program | CelFailure] = {}
        self._programs_bytes = 0

    def _program(self, expression: str) -> Program | CelFailure:
        program = self._programs.get(expression)
        if program is None:
            program = self._engine.compile(expression)
            if isinstance(program, CelFailure):
                weight = program_bytes(expression, None, len(program.message))
            else:
                weight = program_bytes(expression, program.ast_size())
            if self._programs_bytes + weight > PROGRAMS_MAX_BYTES:
                self._programs.clear()
                self._programs_bytes = 0
            self._programs[expression] = program
            self._programs_bytes += weight
        return program

    def _evaluate(self, device: DeviceRecord, selectors: tuple[str | None, ...]) -> bool | SelectorFailure:
        """True/False, or the first selector that failed to compile or to evaluate."""
        for i, expression in enumerate(selectors):
            program = self._program(expression or "")
            if isinstance(program, CelFailure):
                return SelectorFailure(i, program)
            if device.cel_input is None:
                device.cel_input = self._engine.device_input(device)
            result = self._engine.evaluate(program, device.cel_input)
            if isinstance(result, CelFailure):
                return SelectorFailure(i, CelFailure.runtime_error(enhance_runtime_error(result.message)))
            if not result:
                return False
        return True

    def class_matches(self, device: DeviceRecord, cls: ClassRecord) -> bool:
        cached = device.class_matches.get(cls)
        if cached is None:
            cached = self._evaluate(device, cls.selectors)
            device.class_matches[cls] = cached
        if isinstance(cached, bool):
            return cached
        raise _error(f"class {cls.name}", device, cached)

    def request_matches(self, device: DeviceRecord, selectors: tuple[str, ...], claim: str) -> bool:
        if not selectors:
            return True
        cached = device.request_matches.get(selectors)
        if cached is None:
            cached = self._evaluate(device, selectors)
            device.request_matches[selectors] = cached
        if isinstance(cached, bool):
            return cached
        raise _error(f"claim {claim}", device, cached)


def _error(owner: str, device: DeviceRecord, failed: SelectorFailure) -> AllocationError:
    """Upstream's wording: compile errors name no device, runtime errors name the device."""
    where, message = f"{owner}: selector #{failed.index}", failed.failure.message
    if failed.failure.kind is FailureKind.COMPILE:
        return AllocationError(f"{where}: CEL compile error: {message}")
    return AllocationError(f"{where} on device {device.id}: CEL runtime error: {message}")


def per_device_node_matches(device: DeviceRecord, node_name: str, labels: Mapping[str, str]) -> bool:
    """Per-device node selection of a slice with perDeviceNodeSelection."""
    if not device.slice.per_device:
        return True
    return node_matches(node_name, labels, device.node_name, device.all_nodes, device.node_selector)
