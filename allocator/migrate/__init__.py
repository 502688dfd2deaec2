"""`dra-capacity migrate plan`: from device-plugin time-slicing to DRA shares, planned node batch by batch.

`plugin_config` reads the NVIDIA device plugin's sharing config, `classes` makes the DeviceClasses and the
slices switched nodes publish, `workloads` groups the affected pods by owner with what changes for them,
`disruption` weighs PodDisruptionBudgets against a drain, and `planner` runs the move on one incremental
placement; `render` turns the plan into the JSON/YAML document and the table.
"""

from __future__ import annotations

from allocator.migrate.planner import MigrationInput, Options, Plan, PlanError, plan_migration
from allocator.migrate.plugin_config import PluginConfigError, read_plugin_config

__all__ = [
    "MigrationInput",
    "Options",
    "Plan",
    "PlanError",
    "PluginConfigError",
    "plan_migration",
    "read_plugin_config",
]
