"""The allocator's selector engine on the shared DRA CEL environment (resourceapi's CEL modules).

Selectors are compiled with the "stored expressions" environment, as upstream's allocator does: every declared
field is known regardless of gates. A device's CEL input is built once per device record.
"""

from __future__ import annotations

from typing import Any

from allocator.structured.celfailures import CelFailure
from allocator.structured.features import Features
from allocator.structured.pools import DeviceRecord
from allocator.structured.selection import Program
from resourceapi.cel import CelRuntimeError, compile_selector, device_input
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Quantity


class CelEngine:
    """`SelectorEngine` backed by resourceapi's CEL environment."""

    def __init__(self, gates: FeatureGates) -> None:
        self._gates = gates
        self._qualified_wins = Features.from_gates(gates).qualified_name_wins  # the release's, in CEL too

    def compile(self, expression: str) -> Program | CelFailure:
        result = compile_selector(expression, self._gates, stored=True)
        if result.program is None:
            return CelFailure.compile_error(
                "; ".join(issue.detail for issue in result.issues) or "compilation failed"
            )
        program: Program = result.program
        return program

    def device_input(self, device: DeviceRecord) -> Any:
        capacity: dict[str, Quantity] = {name: entry.quantity for name, entry in device.capacity.items()}
        return device_input(
            device.id.driver, device.raw_attributes, capacity, device.allow_multi, self._qualified_wins
        )

    def evaluate(self, program: Program, device_input: Any) -> bool | CelFailure:
        try:
            return bool(program.matches(device_input))
        except CelRuntimeError as exc:
            return CelFailure.runtime_error(str(exc))
        except Exception as exc:  # an engine failure is reported as the selector's error, never a traceback
            return CelFailure.runtime_error(f"{type(exc).__name__}: {exc}")
