"""`dra-capacity serve` and `dra-capacity validate` (shared/spec/cli-contract.md)."""

from __future__ import annotations

import argparse
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


def add_commands(sub: Any) -> None:
    """Register `serve` and `validate` on the top-level subparsers."""
    serve = sub.add_parser(
        "serve",
        help="serve the DeviceClass admission webhook over HTTPS",
        description="Serve the DeviceClass admission webhook (AdmissionReview v1) over HTTPS.",
        epilog=SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
