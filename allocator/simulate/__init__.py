"""`dra-capacity simulate`: what-if allocation and placement, offline.

Three steps, one module each: `inputs` loads and checks every object (nothing runs on a bad input), `run`
allocates claims (claim mode) or places pending pods (pod mode) with the same `Placer` the binder uses and
returns typed results, and `render` turns those into the JSON contract or a table for people.
"""

from __future__ import annotations

from allocator.simulate.inputs import InputError, Inputs, UsageError, load_inputs, pod_claims
from allocator.simulate.render import render_json, render_table, to_json
from allocator.simulate.run import (
    ClaimOutcome,
    ClaimRun,
    PodOutcome,
    PodRun,
    Simulation,
    run_claims,
    run_pods,
)

__all__ = [
    "ClaimOutcome",
    "ClaimRun",
    "InputError",
    "Inputs",
    "PodOutcome",
    "PodRun",
    "Simulation",
    "UsageError",
    "load_inputs",
    "pod_claims",
    "render_json",
    "render_table",
    "run_claims",
    "run_pods",
    "to_json",
]
