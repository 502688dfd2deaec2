"""`dra-capacity serve`: the admission webhook over HTTPS (flags and limits: docs/install.md).

Startup problems (bad flags, missing or mismatched certificates, a port in use) end with one line on stderr
and exit 2, never a traceback. SIGTERM and SIGINT stop the server gracefully with exit 0. The process runs on
a `procrt.manager.Manager`, as `bind` and `certs controller` do: its signals, its plain-HTTP probe and metrics
listeners (`--health-listen`, `--metrics-listen`) and the stop order are the Manager's.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import ipaddress
import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from certs.files import CertFileError, ensure_self_signed
from dra_capacity.cliopts import (
    add_feature_gates_flag,
    add_server_version_interval_flag,
    positive_float,
    positive_int,
)
from dra_capacity.routing_setup import add_routing_arguments, start_pod_router
from kubeio.config import ClusterConfigError, configuration, in_cluster
from procrt.manager import ListenError, Manager
from resourceapi.gates import FeatureGates, GateError
from webhook.server import logs
from webhook.server.fairness import parse_networks
from webhook.server.judging import Switchable
from webhook.server.limits import ServerLimits
from webhook.server.metrics import WebhookMetrics
from webhook.server.server import (
    AdmissionHandler,
    CertificateEvents,
    HandlerCall,
    Listen,
    WebhookServer,
    process_manager,
)
from webhook.server.tlsreload import DEFAULT_CHECK_INTERVAL, CertificateReloader
from webhook.server.workers import PROCESS, WORKER_KINDS

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


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The `serve` flags, the limits, and a hidden one for tests."""
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
    parser.add_argument(
        "--health-listen",
        type=parse_listen,
        default=None,
        metavar="HOST:PORT",
        help="serve /healthz, /readyz and /metrics over plain HTTP on this address, on a thread of its own: "
        "probes there never wait behind webhook clients (the chart's probes use it)",
    )
    parser.add_argument(
        "--native-rules",
        choices=("warn", "deny"),
        default="warn",
        help=(
            "findings on fields the API server validates natively (metadata, selectors, config, "
            "extendedResourceName): 'warn' (default) answers them with warnings and a metric, since the API "
            "server has already accepted those fields before calling the webhook; 'deny' rejects them. Rules "
            "the API server lacks (the KEP-6406 field, its annotation) always deny"
        ),
    )
    add_limit_arguments(parser)
    parser.add_argument(
        "--cluster-warnings",
        choices=("auto", "off"),
        default="auto",
        help="warn about DeviceClasses that no published device can serve (auto: when --kubeconfig is "
        "given or in a pod; reads ResourceSlices and DeviceClasses, never rejects)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="cluster to read for the warnings and for /mutate-pods (default: in-cluster config)",
    )
    add_routing_arguments(parser)
    parser.add_argument(
        "--cert-check-interval", type=positive_float, default=DEFAULT_CHECK_INTERVAL, help=argparse.SUPPRESS
    )
    add_server_version_interval_flag(parser)


_DEFAULTS = ServerLimits()


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's caps and timeouts (webhook/server/limits.py); the defaults suit kube-apiserver as the
    client."""
    group = parser.add_argument_group("limits (see docs/troubleshooting.md)")
    group.add_argument(
        "--workers",
        type=positive_int,
        default=_DEFAULTS.workers,
        metavar="N",
        help=f"workers judging reviews, off the loop that answers probes (default {_DEFAULTS.workers})",
    )
    group.add_argument(
        "--worker-kind",
        choices=WORKER_KINDS,
        default=PROCESS,
        help="processes: probes never wait for a costly review (about 40 MiB each); threads: no extra "
        "memory, probes may wait tens of milliseconds (default process)",
    )
    group.add_argument(
        "--max-connections",
        type=positive_int,
        default=_DEFAULTS.max_connections,
        metavar="N",
        help=f"open connections on the HTTPS listener; more are closed (default {_DEFAULTS.max_connections})",
    )
    group.add_argument(
        "--max-connections-per-source",
        type=positive_int,
        default=None,
        metavar="N",
        help="open connections one source address (an IPv6 /64) may hold; at the cap a source holding fewer "
        "evicts an idle connection of the one holding most (default a quarter of --max-connections)",
    )
    group.add_argument(
        "--protected-sources",
        type=_cidrs,
        default=(),
        metavar="CIDR,...",
        help="the API server's addresses: never evicted, an eighth of --max-connections reserved for them",
    )
    group.add_argument(
        "--max-in-flight-bytes",
        type=positive_int,
        default=_DEFAULTS.in_flight_bytes,
        metavar="BYTES",
        help="bytes of review bodies accepted and not yet answered; a review beyond gets 429 "
        f"(default {_DEFAULTS.in_flight_bytes})",
    )
    group.add_argument(
        "--keepalive-timeout",
        type=positive_float,
        default=_DEFAULTS.keepalive_timeout,
        metavar="SECONDS",
        help="close a connection idle this long, or whose request headers are still incomplete "
        f"(default {_DEFAULTS.keepalive_timeout:g}; keep it above the apiserver's 90 s idle timeout)",
    )
    group.add_argument(
        "--body-timeout",
        type=positive_float,
        default=_DEFAULTS.body_timeout,
        metavar="SECONDS",
        help=f"time allowed for a request body to arrive; 408 after (default {_DEFAULTS.body_timeout:g})",
    )
    group.add_argument(
        "--shutdown-timeout",
        type=positive_float,
        default=_DEFAULTS.shutdown_timeout,
        metavar="SECONDS",
        help="on SIGTERM, time in-flight reviews get to finish before connections are closed "
        f"(default {_DEFAULTS.shutdown_timeout:g}; keep it below terminationGracePeriodSeconds)",
    )


def _cidrs(text: str) -> tuple[str, ...]:
    """`--protected-sources`: comma-separated CIDRs, checked here, kept as text."""
    try:
        return tuple(str(n) for n in parse_networks(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def limits_of(args: argparse.Namespace) -> ServerLimits:
    return ServerLimits(
        workers=args.workers,
        max_connections=args.max_connections,
        max_connections_per_source=args.max_connections_per_source or 0,
        protected_sources=args.protected_sources,
        in_flight_bytes=args.max_in_flight_bytes,
        keepalive_timeout=args.keepalive_timeout,
        body_timeout=args.body_timeout,
        shutdown_timeout=args.shutdown_timeout,
    )


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


@dataclass(frozen=True)
class ClusterSpec:
    """Where the cluster-aware warnings read the cluster (picklable: each worker process opens its own)."""

    kubeconfig: str | None  # None: the in-cluster service account


def cluster_spec(args: argparse.Namespace) -> ClusterSpec | None:
    """The cluster behind the cluster-aware warnings, or None when they are off.

    `--cluster-warnings auto` (the default) reads the cluster when a kubeconfig is given or the process runs
    in a pod. Raises ClusterConfigError for an unusable configuration, before anything else starts."""
    if args.cluster_warnings == "off" or (not args.kubeconfig and not in_cluster()):
        return None
    configuration(args.kubeconfig)
    return ClusterSpec(args.kubeconfig)


def _served_release(
    args: argparse.Namespace, gates: FeatureGates, logger: logging.Logger, metrics: WebhookMetrics
) -> tuple[FeatureGates, Any]:
    """With a cluster: the gates on the release its `/version` reports at start, and the
    kubeio/serverversion.py `ServedRelease` that follows it (None when the cluster cannot be reached: the
    default release stands, and the informer reports the outage)."""
    from kubeio import serverversion
    from kubeio.config import connect

    try:
        kube = connect(args.kubeconfig)
    except ClusterConfigError:
        return gates, None
    served = serverversion.ServedRelease(
        kube,
        args.feature_gates,
        gates,
        logger,
        metrics=serverversion.ReleaseMetrics(metrics.registry, "dra_capacity_webhook"),
    )
    gates = served.read()
    logs.log_event(logger, logging.INFO, "judging as Kubernetes " + gates.release, release=gates.release)
    return gates, served


def load_handler(
    gates: FeatureGates, cluster: ClusterSpec | None = None, native_rules: str = "warn"
) -> AdmissionHandler:
    """The DeviceClass admission logic (webhook/deviceclass/admission.py), built where it runs (in each worker
    process); `native_rules` is `--native-rules`.

    With `cluster`, it starts its informer cache of ResourceSlices and DeviceClasses (admission never waits on
    it), which feeds the cluster-aware warnings and emits an Event on each DeviceClass that the published
    devices can no longer serve."""
    from webhook.deviceclass.admission import DeviceClassAdmission
    from webhook.deviceclass.native_rules import NativeRules

    source = None
    if cluster is not None:
        from kubeio.factory import shared_factory
        from webhook.clusterview.cluster_cache import ClusterCache, event_sink
        from webhook.deviceclass.class_events import ClassEvents

        informers = shared_factory(cluster.kubeconfig)  # the pod routing's, in the main process
        events = ClassEvents(gates, event_sink(informers.kube))
        cache = ClusterCache(informers, on_view=events.on_view)
        cache.start()
        source = cache.view
    handler = DeviceClassAdmission(gates, NativeRules(native_rules), cluster=source)
    if source is not None:
        handler.followers.append(events.switch)
    return handler


def run_serve(
    args: argparse.Namespace,
    load: Callable[[FeatureGates], AdmissionHandler] | None = None,
    inline_routes: Mapping[str, HandlerCall] | None = None,
) -> int:
    """Run the webhook until SIGTERM/SIGINT; 0 on a clean stop, 2 when it cannot start. `load` builds the
    admission logic (default `load_handler`); `inline_routes` are extra endpoints judged on the event loop
    (bench/webhook_baseline.py's allow-all baseline)."""
    try:
        gates = FeatureGates.parse(args.feature_gates)
    except GateError as exc:
        return _error(f"--feature-gates: {exc}")
    try:
        cluster = cluster_spec(args)
    except ClusterConfigError as exc:
        return _error(str(exc))
    tls_dir = Path(args.tls_dir)
    logger = logs.configure(root=True)
    metrics = WebhookMetrics()
    served = None
    if cluster is not None or args.kubeconfig or in_cluster():  # even with --cluster-warnings off
        gates, served = _served_release(args, gates, logger, metrics)
    try:
        if args.self_signed and ensure_self_signed(tls_dir, args.dns_name):
            logs.log_event(
                logger,
                logging.INFO,
                "generated a self-signed CA and serving certificate",
                ca=str(tls_dir / "ca.crt"),
                names=["localhost", "127.0.0.1", *args.dns_name],
            )
        events = CertificateEvents(metrics, logger)
        reloader = CertificateReloader(
            tls_dir, interval=args.cert_check_interval, on_reload=events.loaded, on_failure=events.failed
        )
        reloader.load()
    except CertFileError as exc:
        return _error(str(exc))
    factory = (
        functools.partial(load, gates)
        if load
        else functools.partial(load_handler, gates, cluster, args.native_rules)
    )
    try:
        # The server's own handler judges the cheap reviews on the event loop (and, with threads, all of
        # them); each worker process builds its own for the rest.
        handler = factory()
    except ImportError as exc:  # a broken installation, not bad input; still one line, not a traceback
        return _error(f"cannot load the admission logic: {exc}")
    pod_router, stop_routing = start_pod_router(args, metrics, logger)
    server = WebhookServer(
        handler,
        reloader,
        args.listen,
        serve_metrics=args.metrics_listen is None,
        metrics=metrics,
        logger=logger,
        limits=limits_of(args),
        worker_factory=factory if args.worker_kind == PROCESS else None,
        pod_router=pod_router,
        inline_routes=inline_routes,
    )
    manager = process_manager(server, health_listen=args.health_listen, metrics_listen=args.metrics_listen)
    manager.add_closer(stop_routing)
    if served is not None:
        manager.add_closer(_follow(served, handler, args.server_version_interval))
    return manager.run_async(lambda stop: _serve(server, manager, stop, args, gates, logger))


def _follow(served: Any, handler: AdmissionHandler, interval: float) -> Callable[[], None]:
    """Follow the served release (`/version` every `interval` seconds): each change switches the handler on
    the loop and, through it, every worker (webhook/server/judging.py `Switchable`). Returns the closer."""
    import threading

    if isinstance(handler, Switchable):
        served.subscribe(handler.switch)
    stop = threading.Event()
    served.watch(stop, interval)

    def close() -> None:
        stop.set()
        served.kube.close()

    return close


def host_port(host: str, port: int | None) -> str:
    """`host:port` as in a URL: an IPv6 address in brackets (`[::]:8443`), as `--listen` accepts it."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _listen_error(host: str, port: int, exc: OSError) -> int:
    # asyncio rewords strerror ("error while attempting to bind on address ..."); the errno's own text
    # is the one the troubleshooting guide lists.
    reason = os.strerror(exc.errno) if exc.errno else exc.strerror or str(exc)
    return _error(f"cannot listen on {host_port(host, port)}: {reason}")


async def _serve(
    server: WebhookServer,
    manager: Manager,
    stop: asyncio.Event,
    args: argparse.Namespace,
    gates: FeatureGates,
    logger: Any,
) -> int:
    """The HTTPS listener first, then the Manager's probe and metrics listeners; serve until `stop`."""
    try:
        await server.start()
    except OSError as exc:
        await server.stop()
        return _listen_error(args.listen.host, args.listen.port, exc)
    try:
        await manager.start_async()
    except ListenError as exc:
        await server.stop()
        return _listen_error(*exc.address, exc)
    logs.log_event(
        logger,
        logging.INFO,
        "serving",
        url=f"https://{host_port(args.listen.host, server.port)}",
        metrics=(
            f"http://{host_port(args.metrics_listen.host, manager.metrics_port)}/metrics"
            if args.metrics_listen is not None
            else f"https://{host_port(args.listen.host, server.port)}/metrics"
        ),
        health=(
            f"http://{host_port(args.health_listen.host, manager.health_port)}/readyz"
            if args.health_listen is not None
            else f"https://{host_port(args.listen.host, server.port)}/readyz"
        ),
        tls_dir=str(args.tls_dir),
        feature_gates=str(gates),
    )
    await stop.wait()
    logs.log_event(logger, logging.INFO, "shutting down")
    await server.stop()
    return 0
