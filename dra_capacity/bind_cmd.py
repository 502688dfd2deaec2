"""`dra-capacity bind`: the binding controller (binder/), with leader election and health.

Startup problems (bad flags, no cluster configuration) end with one line on stderr and exit 2. SIGTERM and
SIGINT stop it cleanly (the lease is released, so a standby takes over at once) with exit 0. A leader that
loses its lease exits 1 at once, so its Deployment restarts it as a standby with a fresh view.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from dra_capacity.cliopts import (
    STRATEGY_CHOICES,
    STRATEGY_HELP,
    add_feature_gates_flag,
    add_routing_namespaces_flag,
    add_server_version_interval_flag,
    add_whole_device_flag,
)
from dra_capacity.serve_cmd import parse_listen
from kubeio import serverversion
from kubeio.config import ClusterConfigError, connect
from resourceapi.gates import FeatureGates, GateError

if TYPE_CHECKING:
    from binder.controller import Binder
    from procrt.manager import Manager

PROG = "dra-capacity bind"
DEFAULT_METRICS_LISTEN = "0.0.0.0:8080"
DEFAULT_LEASE_NAME = "dra-capacity-binder"
ONCE_TIMEOUT = 300.0


def _bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{value!r}: expected true or false")


def _seconds(value: str) -> float:
    text = value.strip().removesuffix("s")
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: expected a duration in seconds (15 or 15s)") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be greater than zero")
    return number


def _binding_timeout(value: str) -> float:
    """DynamicResourcesArgs.bindingTimeout's rule (validation_pluginargs.go): at least 1 second."""
    number = _seconds(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: must be at least 1 second")
    return number


def add_commands(sub: Any) -> None:
    parser = sub.add_parser(
        "bind",
        help="run the binding controller: place and bind pods of its scheduler name",
        description="Place pending pods whose spec.schedulerName is --scheduler-name with the allocator "
        "core, create and allocate their extended-resource ResourceClaim (KEP-5004 naming, KEP-6406 "
        "capacity), patch the pod status and bind them. See docs/binder.md.",
        epilog="endpoints (plain HTTP on --metrics-listen): GET /metrics, GET /healthz (alive), GET /readyz "
        "(200 once the informers have synced). Exit status: 0 after SIGTERM/SIGINT or a --once run that "
        "handled every pod; 1 when the lease is lost or --once hit errors; 2 for bad flags or no cluster.",
    )
    parser.add_argument("--kubeconfig", default=None, metavar="PATH", help="kubeconfig (default: in-cluster)")
    parser.add_argument("--context", default=None, metavar="NAME", help="kubeconfig context")
    parser.add_argument(
        "--scheduler-name",
        default="dra-capacity",
        metavar="NAME",
        help="spec.schedulerName of the pods to place (default dra-capacity)",
    )
    add_feature_gates_flag(parser)
    add_whole_device_flag(parser, "the routing audit")
    add_routing_namespaces_flag(parser)
    parser.add_argument("--strategy", choices=STRATEGY_CHOICES, default="binpack", help=STRATEGY_HELP)
    parser.add_argument(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="take a coordination.k8s.io/v1 Lease before placing (default true; standby replicas wait)",
    )
    parser.add_argument(
        "--lease-namespace",
        default=None,
        metavar="NS",
        help="namespace of the Lease (default: the pod's own namespace, else default)",
    )
    parser.add_argument("--lease-name", default=DEFAULT_LEASE_NAME, metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--lease-duration", type=_seconds, default=15.0, metavar="SECONDS")
    parser.add_argument("--renew-deadline", type=_seconds, default=10.0, metavar="SECONDS")
    parser.add_argument("--retry-period", type=_seconds, default=2.0, metavar="SECONDS")
    parser.add_argument(
        "--metrics-listen",
        type=parse_listen,
        default=parse_listen(DEFAULT_METRICS_LISTEN),
        metavar="HOST:PORT",
        help=f"plain-HTTP address of /metrics, /healthz, /readyz (default {DEFAULT_METRICS_LISTEN})",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="place the current pending pods once and exit (no lease: do not run beside a controller)",
    )
    parser.add_argument(
        "--capacity-metrics",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="export units used and total per class and node, pending pods and headroom per class (default "
        "true; keeps a second view of the cluster in memory, about 300 MB at 5,000 nodes)",
    )
    parser.add_argument(
        "--preemption",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="preempt lower-priority pods for a pod that fits nowhere, as kube-scheduler's DefaultPreemption "
        "does (default true; needs pods delete and PodDisruptionBudgets list and watch)",
    )
    parser.add_argument(
        "--per-device-metrics",
        action="store_true",
        help="also export units used per device (one series per device and class: many on a big cluster)",
    )
    parser.add_argument(
        "--binding-timeout",
        type=_binding_timeout,
        default=600.0,
        metavar="SECONDS",
        help="how long PreBind waits for a device's binding conditions before the claim is deleted and the "
        "pod retried, as kube-scheduler's DynamicResourcesArgs.bindingTimeout (default 600; at least 1; "
        "used where the release serves binding conditions)",
    )
    add_server_version_interval_flag(parser)
    parser.add_argument("--bind-workers", type=int, default=16, help=argparse.SUPPRESS)
    parser.set_defaults(func=run_bind)


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def _configure_logging() -> logging.Logger:
    from procrt.logs import configure

    # The informers and the elector log to the first; the binder to the second.
    logger, _ = configure(["dra_capacity.kubeio", "dra_capacity.binder"])
    return logger


def run_bind(args: argparse.Namespace) -> int:
    try:
        gates = FeatureGates.parse(args.feature_gates)
    except GateError as exc:
        return _error(f"--feature-gates: {exc}")
    if args.leader_elect and not args.lease_duration > args.renew_deadline > args.retry_period:
        return _error("leader election needs --lease-duration > --renew-deadline > --retry-period")
    from binder.process import tune_garbage_collector

    logger = _configure_logging()
    tune_garbage_collector()
    try:  # explicit, else in-cluster (a server)
        kube = connect(args.kubeconfig, args.context, pool_size=args.bind_workers + 16)
    except ClusterConfigError as exc:
        return _error(str(exc))
    served = serverversion.ServedRelease(kube, args.feature_gates, gates, logger)
    gates = served.read()
    manager, binder = _wire(args, kube, gates, logger)
    served.metrics = serverversion.ReleaseMetrics(binder.metrics.registry, "dra_capacity_binder")
    served.metrics.show(gates.release, served.tracker)
    try:
        manager.start()
    except OSError as exc:
        kube.close()
        listen = args.metrics_listen
        return _error(f"cannot listen on {listen.host}:{listen.port}: {exc.strerror or exc}")
    _log_started(args, manager, binder, gates, logger)
    stop = threading.Event()
    if not args.once:
        served.subscribe(binder.switch)
        served.watch(stop, args.server_version_interval)
    try:
        return manager.run((lambda: _run_once(binder)) if args.once else None)
    finally:
        stop.set()


def _log_started(
    args: argparse.Namespace,
    manager: Manager,
    binder: Binder,
    gates: FeatureGates,
    logger: logging.Logger,
) -> None:
    """The one "binder started" line: who, where its metrics are, and which gates and release it serves."""
    fields = {
        "scheduler_name": args.scheduler_name,
        "identity": binder.options.instance,
        "leader_elect": manager.elector is not None,
        "metrics": f"http://{args.metrics_listen.host}:{manager.health_port}/metrics",
        "feature_gates": str(gates),
        "kubernetes_release": gates.release,
    }
    logger.info("binder started", extra={"fields": fields})


def _wire(
    args: argparse.Namespace, kube: Any, gates: FeatureGates, logger: logging.Logger
) -> tuple[Manager, Binder]:
    """The binder on a procrt Manager: its health and metrics listener, its Lease (unless --once)."""
    from binder.controller import Binder, BinderOptions
    from binder.metrics import BinderMetrics
    from kubeio.election import LeaderElector, pod_namespace
    from procrt.identity import identity
    from procrt.manager import Manager

    metrics = BinderMetrics()
    listen = args.metrics_listen
    manager = Manager(
        logger,
        name="binder",
        health=(listen.host, listen.port),
        metrics=metrics.render,
        metrics_content_type=metrics.content_type,
    )
    instance = identity()
    if args.leader_elect and not args.once:
        manager.elect(
            LeaderElector(
                kube,
                args.lease_namespace or pod_namespace(),
                args.lease_name,
                instance,
                lease_duration=args.lease_duration,
                renew_deadline=args.renew_deadline,
                retry_period=args.retry_period,
            )
        )
    options = BinderOptions(
        scheduler_name=args.scheduler_name,
        strategy=args.strategy,
        bind_workers=args.bind_workers,
        instance=instance,
        audit_routing=not args.once,
        route_whole_devices=args.route_whole_device_classes,
        routing_all_namespaces=args.pod_routing_namespaces == "all",
        preemption=args.preemption,
        binding_timeout_seconds=args.binding_timeout,
        extra={"capacity_metrics": args.capacity_metrics, "per_device_metrics": args.per_device_metrics},
    )
    binder = Binder(kube, gates, options=options, metrics=metrics, is_leader=manager.is_leader)

    def started() -> None:
        metrics.leader.set(1)
        binder.relist()  # nothing the previous leader wrote may be missing from this view

    manager.on_elected(started)
    manager.add_readyz_check(lambda: None if binder.synced() else "informers not synced")
    manager.add(binder, kill=binder.kill)
    manager.add_closer(kube.close)
    return manager, binder


def _run_once(binder: Any) -> int:
    if not binder.wait_synced(60.0):
        print(f"{PROG}: error: informers did not sync within 60s", file=sys.stderr)
        return 1
    keys = binder.pending_keys()
    deadline = time.monotonic() + ONCE_TIMEOUT
    while not binder.settled(keys):
        if time.monotonic() > deadline:
            print(f"{PROG}: error: pending pods not settled within {ONCE_TIMEOUT:.0f}s", file=sys.stderr)
            return 1
        time.sleep(0.05)
    return 0 if binder.errors == 0 else 1
