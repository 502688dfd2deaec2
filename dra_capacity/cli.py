"""`dra-capacity`: one console script, subcommands per shared/spec/cli-contract.md.

Each side registers its own subcommands (`webhook.cli`, `allocator.cli`); this module only assembles them, so
the webhook and the allocator never import each other.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dra-capacity",
        description="KEP-6406 DRA extended-resource capacity: DeviceClass admission webhook and allocator.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    from webhook import cli as webhook_cli

    webhook_cli.add_commands(sub)
    from allocator import cli as allocator_cli

    allocator_cli.add_commands(sub)
    from dra_capacity import certs_cmd

    certs_cmd.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
