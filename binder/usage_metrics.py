"""The binder's capacity metrics: units used and total per class and per node, pending pods and headroom per
class, kept current from the informers (one change at a time, `allocator/capacity/feed.py`), never
recomputed over the cluster on a scrape.

Cardinality is bounded by classes x nodes; per-device series (classes x devices) only with `per_device`
(`dra-capacity bind --per-device-metrics`). Headroom is a collector: a scrape asks the view, which counts
again only the nodes that changed since the last scrape (allocator/capacity/headroom.py).

Tiny API, so that it can be wired wherever the binder's informers live:

    usage = UsageMetrics(registry, gates)
    usage.feed.attach(classes=..., slices=..., nodes=..., claims=..., pods=...)   # informers
    # or drive it directly: usage.feed.on_claim("MODIFIED", old, new), usage.feed.on_slice(...), ...
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from allocator.capacity.feed import HandlerHost, ObjectFeed
from allocator.capacity.usage import SHARED_NODE
from allocator.capacity.view import CapacityView
from allocator.scheduling.placement import Strategy
from resourceapi.gates import FeatureGates


class _Registered(Protocol):
    @property
    def registry(self) -> CollectorRegistry: ...


class _Options(Protocol):
    @property
    def strategy(self) -> Strategy: ...


class BinderLike(Protocol):
    """What `attach_to` reads of the binding controller: its metrics registry, options and informers."""

    @property
    def metrics(self) -> _Registered: ...
    @property
    def options(self) -> _Options: ...
    @property
    def classes(self) -> HandlerHost: ...
    @property
    def slices(self) -> HandlerHost: ...
    @property
    def nodes(self) -> HandlerHost: ...
    @property
    def claims(self) -> HandlerHost: ...
    @property
    def pods(self) -> HandlerHost: ...


log = logging.getLogger("dra_capacity.binder")
PREFIX = "dra_capacity_binder_"
SHARED_NODE_LABEL = "<shared>"
HEADROOM = PREFIX + "class_headroom_pods"
PENDING = PREFIX + "class_pending_pods"


class UsageMetrics:
    """Gauges updated as the view changes; headroom and pending pods computed at scrape from kept state."""

    def __init__(
        self,
        registry: CollectorRegistry,
        gates: FeatureGates,
        *,
        strategy: Strategy = "binpack",
        per_device: bool = False,
        headroom: bool = True,
    ) -> None:
        r = registry
        self.per_device = per_device
        self.class_total = Gauge(
            PREFIX + "class_capacity_units",
            "Units of the class's extended resource its devices hold (pods of one unit).",
            ["class", "resource"],
            registry=r,
        )
        self.class_used = Gauge(
            PREFIX + "class_used_units",
            "Units of the class's extended resource allocated.",
            ["class", "resource"],
            registry=r,
        )
        self.node_total = Gauge(
            PREFIX + "node_capacity_units",
            "Units of each class a node's devices hold.",
            ["node", "class"],
            registry=r,
        )
        self.node_used = Gauge(
            PREFIX + "node_used_units",
            "Units of each class allocated on a node's devices.",
            ["node", "class"],
            registry=r,
        )
        self.device_used: Gauge | None = None
        if per_device:
            self.device_used = Gauge(
                PREFIX + "device_used_units",
                "Units of each class allocated on one device (opt-in: --per-device-metrics).",
                ["node", "class", "driver", "pool", "device"],
                registry=r,
            )
        self.view = CapacityView(gates, strategy, on_usage_change=self._changed, with_headroom=headroom)
        self.feed = ObjectFeed(self.view)
        self._dirty_devices: set[str] = set()
        self._resources: dict[str, str] = {}  # class -> the resource label of its series
        self._device_series: dict[str, list[tuple[str, ...]]] = {}  # class -> its per-device label sets
        r.register(_ScrapeCollector(self))

    @classmethod
    def attach_to(
        cls, binder: BinderLike, gates: FeatureGates, extra: Mapping[str, Any]
    ) -> UsageMetrics | None:
        """The capacity metrics on the binder's registry, fed by its informers; None when turned off
        (`extra["capacity_metrics"]` false: `bind --capacity-metrics=false`). `extra["per_device_metrics"]`
        adds the per-device series."""
        if not extra.get("capacity_metrics", True):
            return None
        usage = cls(
            binder.metrics.registry,
            gates,
            strategy=binder.options.strategy,
            per_device=bool(extra.get("per_device_metrics")),
        )
        usage.feed.attach(
            classes=binder.classes,
            slices=binder.slices,
            nodes=binder.nodes,
            claims=binder.claims,
            pods=binder.pods,
        )
        return usage

    def _changed(self, class_name: str, node: str) -> None:
        """One (class, node) moved: its node series and the class totals are set again (O(1))."""
        unit = self.view.usage.classes.get(class_name)
        label = node or SHARED_NODE_LABEL
        per_node = self.view.usage.by_node.get(class_name, {})
        figures = per_node.get(node)
        if figures is None:
            self._remove(self.node_total, label, class_name)
            self._remove(self.node_used, label, class_name)
        else:
            self.node_total.labels(label, class_name).set(figures.total)
            self.node_used.labels(label, class_name).set(float(figures.used))
        totals = self.view.usage.by_class.get(class_name)
        old = self._resources.get(class_name)
        if old is not None and (unit is None or totals is None or unit.resource != old):
            self._remove(self.class_total, class_name, old)
            self._remove(self.class_used, class_name, old)
            del self._resources[class_name]
        if unit is not None and totals is not None:
            self._resources[class_name] = unit.resource
            self.class_total.labels(class_name, unit.resource).set(totals.total)
            self.class_used.labels(class_name, unit.resource).set(float(totals.used))
        if self.device_used is not None:
            self._dirty_devices.add(class_name)

    @staticmethod
    def _remove(gauge: Gauge, *labels: str) -> None:
        with contextlib.suppress(KeyError):
            gauge.remove(*labels)

    def refresh_devices(self) -> None:
        """Per-device series of the classes that changed (only with per_device; at scrape)."""
        if self.device_used is None or not self._dirty_devices:
            return
        for class_name in sorted(self._dirty_devices):
            for labels in self._device_series.pop(class_name, []):
                self._remove(self.device_used, *labels)
            series = self._device_series[class_name] = []
            for device, node, _total, used in self.view.usage.devices_of(class_name):
                labels = (node or SHARED_NODE_LABEL, class_name, *device.id)
                self.device_used.labels(*labels).set(float(used))
                series.append(labels)
        self._dirty_devices.clear()


class _ScrapeCollector(Collector):
    """Headroom and pending pods per class, answered from the view under the feed's lock."""

    def __init__(self, metrics: UsageMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(HEADROOM, _HEADROOM_HELP, labels=["class", "resource"])
        yield GaugeMetricFamily(PENDING, _PENDING_HELP, labels=["class", "resource"])

    def collect(self) -> Iterator[GaugeMetricFamily]:
        m = self.metrics
        headroom = GaugeMetricFamily(HEADROOM, _HEADROOM_HELP, labels=["class", "resource"])
        pending = GaugeMetricFamily(PENDING, _PENDING_HELP, labels=["class", "resource"])
        with m.feed.lock:
            m.refresh_devices()
            waiting = m.view.pending_by_class()
            for name, unit in sorted(m.view.usage.classes.items()):
                pending.add_metric([name, unit.resource], waiting.get(name, 0))
                try:
                    room = m.view.class_headroom(name)
                except Exception:  # a scrape never fails for one class: it goes without that series
                    log.exception("headroom of class %s could not be counted", name)
                    continue
                if room is not None:
                    headroom.add_metric([name, unit.resource], room.count)
        yield headroom
        yield pending


_HEADROOM_HELP = (
    "How many more pods of one unit of the class's extended resource fit now, counted by placement."
)
_PENDING_HELP = "Pending pods that ask for the class's extended resource."

__all__ = ["HEADROOM", "PENDING", "SHARED_NODE", "UsageMetrics"]
