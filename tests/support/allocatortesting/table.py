"""The whole table: every theme's rows, keyed by upstream's case names (unique across themes)."""

from __future__ import annotations

import importlib

from support.allocatortesting.case import Case

# One module of this package per theme, each with its rows in `CASES`.
THEMES = (
    "admin_access",
    "allocation_mode_all",
    "basics",
    "binding_conditions",
    "constraints",
    "consumable_capacity",
    "device_taints",
    "list_type_attributes",
    "multi_host",
    "partitionable_devices",
    "prioritized_list",
)


def _merge() -> dict[str, Case]:
    table: dict[str, Case] = {}
    for theme in THEMES:
        cases: dict[str, Case] = importlib.import_module(f"{__package__}.{theme}").CASES
        for name, case in cases.items():
            if name in table:
                raise ValueError(f"case {name!r} of {theme} is in the table twice")
            table[name] = case
    return table


TABLE: dict[str, Case] = _merge()
