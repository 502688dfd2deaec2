"""kube-scheduler's metric names for the pods the binder places: `scheduler_unschedulable_pods` and
`scheduler_plugin_execution_duration_seconds` (pkg/scheduler/metrics/metrics.go; preemption's
`scheduler_preemption_attempts_total` and `scheduler_preemption_victims` too, binder/metrics.py), so that
dashboards and alerts written for KEP-6406's rollback signal and SLI see these pods too (docs/binder.md says
how to tell the binder's series from kube-scheduler's: the `job`/`pod` target labels, and `profile`, the
binder's name).

* `plugin`: the in-tree plugin whose Filter reports the same reason (the summary's reason text is
  upstream's, so the mapping is upstream's too). The binder's filters run fused in the allocator core, so
  Filter durations are not timed per plugin: only Reserve, PreBind and Unreserve (DynamicResources) and Bind
  (DefaultBinder), the extension points the binder runs as upstream does.
* Sampling: upstream records plugin durations for 10% of scheduling cycles (`pluginMetricsSamplePercent`,
  pkg/scheduler/schedule_one.go), chosen once per pod attempt for its scheduling and binding cycles; the
  binder does the same, with the percentage an option (`BinderOptions.plugin_metrics_sample_percent`).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from prometheus_client import Histogram

from allocator.scheduling.interpod import REASON_AFFINITY as REASON_POD_AFFINITY
from allocator.scheduling.interpod import REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY
from allocator.scheduling.nodeports import REASON_PORTS
from allocator.scheduling.placement import REASON_CANNOT_ALLOCATE, REASON_CLAIM_NOT_ON_NODE
from allocator.scheduling.predicates import (
    REASON_AFFINITY,
    REASON_NODE_NAME,
    REASON_TAINT,
    REASON_TOO_MANY_PODS,
    REASON_UNSCHEDULABLE,
)
from allocator.scheduling.synthesis import REASON_CANNOT_FIT
from allocator.scheduling.topologyspread import REASON_SPREAD

DYNAMIC_RESOURCES = "DynamicResources"
DEFAULT_BINDER = "DefaultBinder"
NODE_RESOURCES_FIT = "NodeResourcesFit"

# extension_point values (pkg/scheduler/metrics/metrics.go)
RESERVE = "Reserve"
PRE_BIND = "PreBind"
BIND = "Bind"
UNRESERVE = "Unreserve"

# status values: framework.Code's String()
SUCCESS = "Success"
ERROR = "Error"

DEFAULT_SAMPLE_PERCENT = 10

_PLUGIN_OF_REASON: tuple[tuple[str, str], ...] = (
    (REASON_CANNOT_ALLOCATE, DYNAMIC_RESOURCES),
    (REASON_CLAIM_NOT_ON_NODE, DYNAMIC_RESOURCES),
    (REASON_CANNOT_FIT, DYNAMIC_RESOURCES),
    (REASON_TOO_MANY_PODS, NODE_RESOURCES_FIT),
    ("Insufficient ", NODE_RESOURCES_FIT),
    (REASON_UNSCHEDULABLE, "NodeUnschedulable"),
    (REASON_NODE_NAME, "NodeName"),
    (REASON_TAINT, "TaintToleration"),
    (REASON_AFFINITY, "NodeAffinity"),
    (REASON_PORTS, "NodePorts"),
    (REASON_SPREAD, "PodTopologySpread"),
    (REASON_POD_AFFINITY, "InterPodAffinity"),
    (REASON_ANTI_AFFINITY, "InterPodAffinity"),
    (REASON_EXISTING_ANTI_AFFINITY, "InterPodAffinity"),
)


def plugin_of(reason: str) -> str:
    """The plugin whose Filter gives `reason` (one node's reason); DynamicResources for the rest (PreFilter
    statuses such as a missing DeviceClass or an invalid capacity request are the DRA plugin's)."""
    for prefix, plugin in _PLUGIN_OF_REASON:
        if reason.startswith(prefix):
            return plugin
    return DYNAMIC_RESOURCES


def plugins_of(summary: str) -> frozenset[str]:
    """The plugins that rejected the pod, from the FitError summary `0/N nodes are available: 2 r1, 1 r2.`
    (anything else: one PreFilter status, the DRA plugin's)."""
    head, sep, rest = summary.partition(": ")
    if not (sep and head.startswith("0/")):
        return frozenset({DYNAMIC_RESOURCES})
    out = set()
    for part in rest.rstrip(".").split(", "):
        count, _, reason = part.partition(" ")
        out.add(plugin_of(reason if count.isdigit() else part))
    return frozenset(out)


def unschedulable_counts(plugins_by_pod: Iterable[frozenset[str]]) -> Counter[str]:
    """`scheduler_unschedulable_pods` per plugin: a pod counts once for every plugin that rejected it."""
    out: Counter[str] = Counter()
    for plugins in plugins_by_pod:
        out.update(plugins)
    return out


class PluginTimer:
    """Times one pod attempt's extension points into the histogram, when the attempt is sampled."""

    def __init__(self, histogram: Histogram | None, sampled: bool) -> None:
        self.histogram = histogram
        self.sampled = sampled

    @classmethod
    def for_attempt(cls, histogram: Histogram, percent: int, rng: random.Random | None = None) -> PluginTimer:
        draw = (rng or random).randrange(100)
        return cls(histogram, draw < percent)

    def observe(self, plugin: str, extension_point: str, status: str, seconds: float) -> None:
        if self.sampled and self.histogram is not None:
            self.histogram.labels(plugin, extension_point, status).observe(seconds)

    @contextmanager
    def time(self, plugin: str, extension_point: str) -> Iterator[None]:
        """Time the block; status Success, or Error when it raises (Stopped included: the work was cut)."""
        started = time.perf_counter()
        status = ERROR
        try:
            yield
            status = SUCCESS
        finally:
            self.observe(plugin, extension_point, status, time.perf_counter() - started)
