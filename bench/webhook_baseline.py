"""The benchmark's allow-all baseline: `dra-capacity serve` with one more endpoint, `/bench/allow`.

Run exactly like `dra-capacity serve` (same flags). `/validate` and `/mutate` are the real DeviceClass
admission. `/bench/allow` goes through the same server (envelope checks, body reading, JSON parsing and
wrapping, metrics, decision log) and answers `allowed: true` without looking at the object, judged on the
event loop as a cheap review is; so `/validate` against `/bench/allow` on one server measures the cost of the
rules themselves (and of a worker, for reviews that need one). The product has no such endpoint; only this
bench script mounts it.

    .venv/bin/python bench/webhook_baseline.py --self-signed --listen 127.0.0.1:8443 --tls-dir DIR
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

from dra_capacity.serve_cmd import add_serve_arguments, run_serve
from webhook.server.server import Outcome

BASELINE_PATH = "/bench/allow"


@dataclass
class AllowAll:
    """The baseline's answer: allowed, nothing else."""

    response: dict[str, Any]
    handled: bool = True
    cause_types: list[str] = field(default_factory=list)
    name: str = ""
    operation: str = ""


def allow_all(request: dict[str, Any]) -> Outcome:
    operation = request.get("operation")
    return AllowAll(
        {"uid": request["uid"], "allowed": True}, operation=operation if isinstance(operation, str) else ""
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="webhook_baseline", description=__doc__.splitlines()[0])
    add_serve_arguments(parser)
    return run_serve(parser.parse_args(), inline_routes={BASELINE_PATH.lstrip("/"): allow_all})


if __name__ == "__main__":
    sys.exit(main())
