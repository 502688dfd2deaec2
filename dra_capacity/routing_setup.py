"""`serve`'s pod routing (`/mutate-pods`): its flags, and the DeviceClass/Namespace cache it reads.

The cache needs the cluster: `--kubeconfig`, else the in-cluster service account. Without either, the endpoint
still answers and admits every pod unchanged (a cold cache, counted in the metrics), because routing must
never block a pod.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable

from dra_capacity.cliopts import add_routing_namespaces_flag, add_whole_device_flag
from kubeio.config import ClusterConfigError, in_cluster
from kubeio.factory import shared_factory
from webhook.podrouting.pod_routing import DEFAULT_SCHEDULER_NAME, PodRouter, PodRoutingMetrics
from webhook.podrouting.routing_cache import ClusterRoutingCache, RoutingCache
from webhook.server import logs
from webhook.server.metrics import WebhookMetrics


def add_routing_arguments(parser: argparse.ArgumentParser) -> None:
    """`--scheduler-name`; the cluster is `serve`'s own `--kubeconfig` (or the in-cluster config)."""
    parser.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        metavar="NAME",
        help=f"schedulerName /mutate-pods gives routed pods (default {DEFAULT_SCHEDULER_NAME})",
    )
    add_whole_device_flag(parser, "/mutate-pods")
    add_routing_namespaces_flag(parser)


def start_pod_router(
    args: argparse.Namespace, metrics: WebhookMetrics, logger: logging.Logger
) -> tuple[PodRouter, Callable[[], None]]:
    """The router and a function that stops its cache."""
    kubeconfig = getattr(args, "kubeconfig", None)
    scheduler_name = getattr(args, "scheduler_name", DEFAULT_SCHEDULER_NAME)
    whole = bool(getattr(args, "route_whole_device_classes", False))
    every = getattr(args, "pod_routing_namespaces", "all") == "all"
    routing_metrics = PodRoutingMetrics(metrics.registry)
    if not kubeconfig and not in_cluster():
        logs.log_event(
            logger,
            logging.INFO,
            "pod routing: no cluster configured (--kubeconfig or in-cluster); "
            "/mutate-pods admits pods unchanged",
        )
        return PodRouter(RoutingCache(whole, every), scheduler_name, routing_metrics), lambda: None
    try:
        informers = shared_factory(kubeconfig)
    except ClusterConfigError as exc:
        logs.log_event(
            logger, logging.WARNING, "pod routing: cannot load cluster configuration", error=str(exc)
        )
        return PodRouter(RoutingCache(whole, every), scheduler_name, routing_metrics), lambda: None
    cache = ClusterRoutingCache(informers, whole, every)
    cache.start()
    return PodRouter(cache, scheduler_name, routing_metrics), cache.stop
