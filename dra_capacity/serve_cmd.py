"""`dra-capacity serve`: the admission webhook over HTTPS (shared/spec/cli-contract.md).

Startup problems (bad flags, missing or mismatched certificates, a port in use) end with one line on stderr
and exit 2, never a traceback. SIGTERM and SIGINT stop the server gracefully with exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from certs.files import CertFileError, ensure_self_signed
from dra_capacity.cliopts import add_feature_gates_flag
from dra_capacity.routing_setup import add_routing_arguments, start_pod_router
from resourceapi.gates import FeatureGates, GateError
from webhook import logs
from webhook.metrics import WebhookMetrics
from webhook.server import AdmissionHandler, CertificateEvents, Listen, WebhookServer
from webhook.tlsreload import DEFAULT_CHECK_INTERVAL, CertificateReloader

DEFAULT_LISTEN = "0.0.0.0:8443"
DEFAULT_TLS_DIR = "/etc/dra-capacity/tls"
PROG = "dra-capacity serve"


def parse_listen(value: str) -> Listen:
    """`HOST:PORT`, `[IPv6]:PORT` or `:PORT` (all interfaces); argparse type, so errors exit 2 with usage."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"{value!r}: expected HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r}: {host!r} is not an IPv6 address") from None
    try:
        port = int(port_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r}: port {port} is out of range 0-65535")
    return Listen(host or "0.0.0.0", port)


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be greater than zero")
    return number


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The `serve` flags of cli-contract.md, plus two hidden ones for tests and bench/."""
    parser.add_argument(
        "--listen",
        type=parse_listen,
        default=parse_listen(DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"HTTPS address to serve on (default {DEFAULT_LISTEN})",
    )
    parser.add_argument(
        "--tls-dir",
        default=DEFAULT_TLS_DIR,
        metavar="DIR",
        help=f"directory holding tls.crt and tls.key, reloaded when they change (default {DEFAULT_TLS_DIR})",
    )
    parser.add_argument(
        "--self-signed",
        action="store_true",
        help="when DIR holds no certificate, generate DIR/ca.crt and a serving certificate signed by it",
    )
    parser.add_argument(
        "--dns-name",
        action="append",
        default=[],
        metavar="NAME",
        help="extra name for the self-signed serving certificate (repeatable; localhost, 127.0.0.1 always)",
    )
    add_feature_gates_flag(parser)
    parser.add_argument(
        "--metrics-listen",
        type=parse_listen,
        default=None,
        metavar="HOST:PORT",
        help="serve /metrics over plain HTTP on this address instead of on the HTTPS listener",
    )
    add_routing_arguments(parser)
    parser.add_argument("--bench-baseline-endpoint", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--cert-check-interval", type=_positive_float, default=DEFAULT_CHECK_INTERVAL, help=argparse.SUPPRESS
    )


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def load_handler(gates: FeatureGates) -> AdmissionHandler:
    """The DeviceClass admission logic (webhook/admission.py)."""
    from webhook.admission import DeviceClassAdmission

    handler: AdmissionHandler = DeviceClassAdmission(gates)
    return handler


def run_serve(args: argparse.Namespace) -> int:
    """Run the webhook until SIGTERM/SIGINT; 0 on a clean stop, 2 when it cannot start."""
    try:
        gates = FeatureGates.parse(args.feature_gates)
    except GateError as exc:
        return _error(f"--feature-gates: {exc}")
    tls_dir = Path(args.tls_dir)
    logger = logs.configure(root=True)
    try:
        if args.self_signed and ensure_self_signed(tls_dir, args.dns_name):
            logs.log_event(
                logger,
                logging.INFO,
                "generated a self-signed CA and serving certificate",
                ca=str(tls_dir / "ca.crt"),
                names=["localhost", "127.0.0.1", *args.dns_name],
            )
        metrics = WebhookMetrics()
        events = CertificateEvents(metrics, logger)
        reloader = CertificateReloader(
            tls_dir, interval=args.cert_check_interval, on_reload=events.loaded, on_failure=events.failed
        )
        reloader.load()
    except CertFileError as exc:
        return _error(str(exc))
    try:
        handler = load_handler(gates)
    except ImportError as exc:  # a broken installation, not bad input; still one line, not a traceback
        return _error(f"cannot load the admission logic: {exc}")
    pod_router, stop_routing = start_pod_router(args, metrics, logger)
    server = WebhookServer(
        handler,
        reloader,
        args.listen,
        metrics_listen=args.metrics_listen,
        metrics=metrics,
        logger=logger,
        bench_baseline=args.bench_baseline_endpoint,
        pod_router=pod_router.mutate,
    )
    try:
        return asyncio.run(_serve(server, args, gates, logger))
    except KeyboardInterrupt:
        return 0
    finally:
        stop_routing()


def host_port(host: str, port: int | None) -> str:
    """`host:port` as in a URL: an IPv6 address in brackets (`[::]:8443`), as `--listen` accepts it."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _serve(server: WebhookServer, args: argparse.Namespace, gates: FeatureGates, logger: Any) -> int:
    try:
        await server.start()
    except OSError as exc:
        await server.stop()
        where = args.listen if server.port == 0 else args.metrics_listen
        # asyncio rewords strerror ("error while attempting to bind on address ..."); the errno's own text
        # is the one the troubleshooting guide lists.
        reason = os.strerror(exc.errno) if exc.errno else exc.strerror or str(exc)
        return _error(f"cannot listen on {host_port(where.host, where.port)}: {reason}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    logs.log_event(
        logger,
        logging.INFO,
        "serving",
        url=f"https://{host_port(args.listen.host, server.port)}",
        metrics=(
            f"http://{host_port(args.metrics_listen.host, server.metrics_port)}/metrics"
            if args.metrics_listen is not None
            else f"https://{host_port(args.listen.host, server.port)}/metrics"
        ),
        tls_dir=str(args.tls_dir),
        feature_gates=str(gates),
    )
    await stop.wait()
    logs.log_event(logger, logging.INFO, "shutting down")
    await server.stop()
    return 0
