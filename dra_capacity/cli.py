"""`dra-capacity`: one console script; each subcommand lives in its own `*_cmd.py` module beside this one.

This package is the command-line layer on top of both sides: argument parsing, reading files and stdin, and
rendering. The webhook and the allocator hold the logic the commands call and never import each other.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

SERVE_EPILOG = """\
endpoints (HTTPS on --listen):
  POST /validate  ValidatingWebhook for deviceclasses.resource.k8s.io
  POST /mutate    MutatingWebhook: the feature-gate drop-on-disable JSONPatch
  GET  /healthz   200 while the process serves
  GET  /readyz    200 once the certificate is loaded and admission has warmed up, else 503
  GET  /metrics   Prometheus text (plain HTTP on --metrics-listen instead, when given)

HTTP status codes:
  200      every well-formed AdmissionReview; a rejection is "allowed": false with a 422 status inside
  400      not a well-formed review: empty, not JSON, wrong apiVersion/kind, no request.uid
  413      body too large          415  Content-Type is not application/json
  404/405  unknown path / a method other than POST on /validate and /mutate
  Refusals carry a one-line JSON body {"error": "..."}; the server never answers 5xx for bad input.

exit status: 0 after SIGTERM or SIGINT; 2 for bad flags or a startup failure (one line on stderr,
"dra-capacity serve: error: ..."; docs/troubleshooting.md lists each)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dra-capacity",
        description="KEP-6406 DRA extended-resource capacity: DeviceClass admission webhook and allocator.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_serve(sub)
    _add_validate(sub)
    from dra_capacity import simulate_cmd

    simulate_cmd.add_commands(sub)
    from dra_capacity import bind_cmd

    bind_cmd.add_commands(sub)
    return parser


def _add_serve(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve the DeviceClass admission webhook over HTTPS",
        description="Serve the DeviceClass admission webhook (AdmissionReview v1) over HTTPS.",
        epilog=SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    try:
        # Imported here, not at module level, so `validate` works even where the server cannot be loaded.
        from dra_capacity.serve_cmd import add_serve_arguments, run_serve
    except Exception as exc:  # the server module failing to load must not break `validate`
        reason = str(exc)
        serve.set_defaults(func=lambda args: _unavailable(reason))
    else:
        add_serve_arguments(serve)
        serve.set_defaults(func=run_serve)


def _add_validate(sub: Any) -> None:
    from dra_capacity.validate_cmd import add_validate_arguments

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
