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
  POST /mutate-pods  Pod CREATE routing to the binder
plain HTTP on --health-listen (the kubelet's probes; its own thread, never behind webhook clients):
  GET  /healthz, /readyz, /metrics

HTTP status codes:
  200      every well-formed AdmissionReview; a rejection is "allowed": false with a 422 status inside
  400      not a well-formed review: empty, not JSON, wrong apiVersion/kind, no request.uid
  408      body slower than 64 KiB/s after 1 s, or not complete within --body-timeout
  413      body too large          415  Content-Type is not application/json
  429      webhook busy (the in-flight byte budget is spent); Retry-After: 1
  431      request header fields too large
  404/405  unknown path / a method other than POST on /validate and /mutate
  Refusals carry a one-line JSON body {"error": "..."}; the server never answers 5xx for bad input.

exit status: 0 after SIGTERM or SIGINT; 2 for bad flags or a startup failure (one line on stderr,
"dra-capacity serve: error: ..."; docs/troubleshooting.md lists each)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dra-capacity",
        description="KEP-6406 DRA extended-resource capacity: DeviceClass admission webhook and allocator.",
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_serve(sub)
    _add_validate(sub)
    from dra_capacity import simulate_cmd

    simulate_cmd.add_commands(sub)
    _add_bind(sub)
    _add_top(sub)
    from dra_capacity import certs_cmd

    certs_cmd.add_commands(sub)
    from dra_capacity import migrate_cmd

    migrate_cmd.add_commands(sub)
    from dra_capacity import sandbox_cmd

    sandbox_cmd.add_commands(sub)
    return parser


MAIN_EPILOG = """\
exit status (every command): 0 success; 1 the tool ran and found a failure (a rejected object, or with
simulate --fail-unschedulable a pod or claim not placed); 2 bad usage or unreadable input, one line on stderr:
"dra-capacity COMMAND: error: ...". `dra-capacity COMMAND --help` tells more.
"""


class _VersionAction(argparse.Action):
    """`--version`: looked up only when asked for (importlib.metadata costs more than the rest of --help)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _version() -> str:
    """The installed distribution's version (importlib.metadata: no import of the package's modules)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dra-capacity")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _add_serve(sub: Any) -> None:
    """`serve` is registered without importing the server (aiohttp, cryptography, prometheus-client, CEL):
    its flags live in serve_cmd, imported only when `serve` is the command being run or described."""
    if _chosen_command() != "serve":
        sub.add_parser("serve", help="serve the DeviceClass admission webhook over HTTPS")
        return
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


def _add_bind(sub: Any) -> None:
    """`bind` is registered without importing the binder (kubernetes, pydantic, the server's flags)."""
    if _chosen_command() != "bind":
        sub.add_parser("bind", help="run the binding controller: place and bind pods of its scheduler name")
        return
    from dra_capacity import bind_cmd

    bind_cmd.add_commands(sub)


def _add_top(sub: Any) -> None:
    """`top` is registered bare unless it is the command (its module reads no heavy module, but stays
    out of the way of `--help` anyway)."""
    if _chosen_command() != "top":
        sub.add_parser("top", help="shares used and free per class and node, pending pods and headroom")
        return
    from dra_capacity import top_cmd

    top_cmd.add_commands(sub)


def _add_validate(sub: Any) -> None:
    help_text = "run the webhook's mutation and validation offline on DeviceClass files"
    if _chosen_command() != "validate":
        sub.add_parser("validate", help=help_text)
        return
    from dra_capacity.validate_cmd import VALIDATE_EPILOG, add_validate_arguments

    validate = sub.add_parser(
        "validate",
        help=help_text,
        description="Run exactly the webhook's mutation + validation on every DeviceClass in FILE... "
        "(other kinds are skipped with a note on stderr).",
        epilog=VALIDATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_validate_arguments(validate)


_ARGV: list[str] = []


def _chosen_command() -> str | None:
    """The subcommand on the command line being parsed (None: none yet, e.g. `dra-capacity --help`), so that
    only its module is imported: the other subcommands get a bare parser for the command list."""
    for arg in _ARGV:
        if not arg.startswith("-"):
            return arg
    return None


def _unavailable(reason: str) -> int:
    raise SystemExit(f"dra-capacity serve: error: serve is not available: {reason}")


def main(argv: Sequence[str] | None = None) -> int:
    global _ARGV
    _ARGV = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


def kubectl_plugin() -> int:
    """`kubectl-dra_capacity`: the same commands as a kubectl plugin (`kubectl dra-capacity top`), as krew
    installs them; kubectl runs the binary with the arguments after the plugin's name."""
    return main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
