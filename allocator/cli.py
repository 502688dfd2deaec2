"""`dra-capacity simulate` (shared/spec/cli-contract.md)."""

from __future__ import annotations

import argparse
from typing import Any


def add_commands(sub: Any) -> None:
    """Register `simulate` on the top-level subparsers."""
    simulate = sub.add_parser("simulate", help="what-if DRA allocation and pod placement, offline")
    simulate.set_defaults(func=_not_yet)


def _not_yet(args: argparse.Namespace) -> int:
    raise SystemExit("not implemented yet")
