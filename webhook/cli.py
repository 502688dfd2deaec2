"""`dra-capacity serve` and `dra-capacity validate` (shared/spec/cli-contract.md)."""

from __future__ import annotations

import argparse
from typing import Any


def add_commands(sub: Any) -> None:
    """Register `serve` and `validate` on the top-level subparsers."""
    serve = sub.add_parser("serve", help="serve the DeviceClass admission webhook over HTTPS")
    serve.set_defaults(func=_not_yet)
    validate = sub.add_parser("validate", help="run webhook admission offline on DeviceClass files")
    validate.set_defaults(func=_not_yet)


def _not_yet(args: argparse.Namespace) -> int:
    raise SystemExit("not implemented yet")
