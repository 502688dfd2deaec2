"""The whole table: every theme's rows, keyed by upstream's case names (unique across themes)."""

from __future__ import annotations

from support.allocatortesting import (
    admin_access,
    allocation_mode_all,
    basics,
    constraints,
    consumable_capacity,
    device_taints,
    list_type_attributes,
    multi_host,
    partitionable_devices,
    prioritized_list,
)
from support.allocatortesting.builders import Case

THEMES = (
    admin_access,
    allocation_mode_all,
    basics,
    constraints,
    consumable_capacity,
    device_taints,
    list_type_attributes,
    multi_host,
    partitionable_devices,
    prioritized_list,
)


def _merge() -> dict[str, Case]:
    table: dict[str, Case] = {}
    for theme in THEMES:
        for name, case in theme.CASES.items():
            if name in table:
                raise ValueError(f"case {name!r} of {theme.__name__} is in the table twice")
            table[name] = case
    return table


TABLE: dict[str, Case] = _merge()
