"""`dra-capacity serve` and `dra-capacity validate` (shared/spec/cli-contract.md)."""

from __future__ import annotations

from typing import Any


def add_commands(sub: Any) -> None:
    """Register `serve` and `validate` on the top-level subparsers."""
    serve = sub.add_parser("serve", help="serve the DeviceClass admission webhook over HTTPS")
    try:
        # Imported here, not at module level, so `validate` works even where the server cannot be loaded.
        from webhook.serve_cmd import add_serve_arguments, run_serve
    except Exception as exc:  # the server module failing to load must not break `validate`
        reason = str(exc)
        serve.set_defaults(func=lambda args: _unavailable(reason))
    else:
        add_serve_arguments(serve)
        serve.set_defaults(func=run_serve)

    from webhook.validate_cmd import add_validate_arguments

    validate = sub.add_parser(
        "validate",
        help="run the webhook's mutation and validation offline on DeviceClass files",
        description="Run exactly the webhook's mutation + validation on every DeviceClass in FILE... "
        "(other kinds are skipped with a note on stderr). Exit 0 when all are allowed, 1 when any is "
        "rejected, 2 for bad usage or unreadable input.",
    )
    add_validate_arguments(validate)


def _unavailable(reason: str) -> int:
    raise SystemExit(f"error: serve is not available: {reason}")
