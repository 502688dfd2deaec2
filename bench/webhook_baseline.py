"""The benchmark's allow-all baseline: `dra-capacity serve` whose `/mutate` admits everything unjudged.

Run exactly like `dra-capacity serve` (same flags). `/validate` is the real DeviceClass admission; `/mutate`
goes through the same server (envelope checks, worker pool, JSON wrapping, metrics, decision log) but answers
`allowed: true` without looking at the object, so `/validate` against `/mutate` on one server measures the
cost of the rules themselves. The product has no such endpoint; only this bench script mounts it.

    .venv/bin/python bench/webhook_baseline.py --self-signed --listen 127.0.0.1:8443 --tls-dir DIR
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

from dra_capacity.serve_cmd import add_serve_arguments, load_handler, run_serve
from resourceapi.gates import FeatureGates
from webhook.server import AdmissionHandler, Outcome

BASELINE_PATH = "/mutate"


@dataclass
class AllowAll:
    """The baseline's answer: allowed, nothing else."""

    response: dict[str, Any]
    handled: bool = True
    cause_types: list[str] = field(default_factory=list)
    name: str = ""
    operation: str = ""


class BaselineAdmission:
    """The real admission on /validate, allow-all on /mutate."""

    def __init__(self, real: AdmissionHandler) -> None:
        self.real = real

    def warm_up(self) -> None:
        self.real.warm_up()

    def validate(self, request: dict[str, Any]) -> Outcome:
        return self.real.validate(request)

    def mutate(self, request: dict[str, Any]) -> Outcome:
        return AllowAll({"uid": request["uid"], "allowed": True}, operation=request.get("operation", ""))


def baseline_handler(gates: FeatureGates) -> AdmissionHandler:
    return BaselineAdmission(load_handler(gates))


def main() -> int:
    parser = argparse.ArgumentParser(prog="webhook_baseline", description=__doc__.splitlines()[0])
    add_serve_arguments(parser)
    return run_serve(parser.parse_args(), load=baseline_handler)


if __name__ == "__main__":
    sys.exit(main())
