"""What the binder's parts share: options, the informers, the lock, the queue, the assume cache, the writer.

Every part (`scheduling_cycle`, `binding_cycle`, `phases`, `snapshot`, `audit`) is built on one
`BinderContext`, as upstream's schedule_one.go functions are methods of one `Scheduler`. All writes go
through `writer` (one guard: `Stopped` once this replica may not write), so a precondition such as a lease
fence has one place to go.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from allocator.scheduling.placement import Strategy
from allocator.structured.devicetaints import rules_apply
from binder.assume import AssumeCache
from binder.diagnosis import DEFAULT_RATE, Diagnoser
from binder.events import EventSink
from binder.metrics import BinderMetrics
from binder.names import DEFAULT_SCHEDULER_NAME
from binder.scheduler_metrics import DEFAULT_SAMPLE_PERCENT, PluginTimer
from binder.scheduling_queue import SchedulingQueue
from binder.writes import Writer
from kubeio.informer import Informer
from kubeio.kube import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    STORAGE_CLASSES,
    Kube,
    Obj,
)
from resourceapi.gates import FeatureGates

log = logging.getLogger("dra_capacity.binder")

STEPS = ("placed", "claim-created", "claim-allocated", "pod-status-patched", "bound")
"""The points of the sequence after which a crash hook may fire (the chaos test kills there)."""


class Stopped(BaseException):
    """This replica may not write any more (lease lost, stopping, or killed by a test): abandon the work as
    a killed process would, without cleanup; the next leader's leftover handling finishes it."""


def log_decision(**fields: Any) -> None:
    """One JSON line per decision (the command installs the JSON formatter on this logger)."""
    log.info("decision", extra={"fields": fields})


@dataclass
class BinderOptions:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    strategy: Strategy = "binpack"
    bind_workers: int = 16  # binding cycles in flight at once (kube-scheduler runs each in its own goroutine)
    audit_routing: bool = True
    route_whole_devices: bool = (
        False  # the audit counts whole-device classes too (--route-whole-device-classes)
    )
    routing_all_namespaces: bool = False  # the audit's routing rule (--pod-routing-namespaces=all)
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    watch_timeout: float = 300.0
    hook: Callable[[str, Obj], None] | None = None  # test hook after each step (see STEPS)
    instance: str = ""
    plugin_metrics_sample_percent: int = DEFAULT_SAMPLE_PERCENT  # scheduler_plugin_execution_duration_seconds
    diagnoses_per_second: float = DEFAULT_RATE  # FailedScheduling Events that name the requirement
    bind_timeout_seconds: float = 600.0  # VolumeBinding's PreBind wait (VolumeBindingArgs.bindTimeoutSeconds)
    binding_timeout_seconds: float = 600.0  # DynamicResources' binding-conditions wait (DynamicResourcesArgs)
    preemption: bool = True  # DefaultPreemption's PostFilter (--preemption; binder/postfilter.py)
    extra: dict[str, Any] = field(default_factory=dict)


class Informers:
    """The binder's informers (one per kind), started and stopped together: the scheduling kinds, and the
    storage kinds the volume plugins read (upstream's VolumeBinding, VolumeZone, NodeVolumeLimits and
    VolumeRestrictions listers). DeviceTaintRules are watched only while the gates apply them, as
    kube-scheduler's ResourceSlice tracker does (`taint_rules`; `watch_taint_rules` adds or drops that
    informer when the served release changes); PodDisruptionBudgets only when preemption is on (`pdbs`,
    DefaultPreemption's PDB lister)."""

    def __init__(
        self, kube: Kube, watch_timeout: float, taint_rules: bool = False, pdbs: bool = False
    ) -> None:
        self._kube, self._watch_timeout = kube, watch_timeout
        self.pods = Informer(kube, PODS, watch_timeout=watch_timeout)
        self.nodes = Informer(kube, NODES, watch_timeout=watch_timeout)
        self.classes = Informer(kube, DEVICE_CLASSES, watch_timeout=watch_timeout)
        self.slices = Informer(kube, RESOURCE_SLICES, watch_timeout=watch_timeout)
        self.claims = Informer(kube, RESOURCE_CLAIMS, watch_timeout=watch_timeout)
        self.namespaces = Informer(kube, NAMESPACES, watch_timeout=watch_timeout)
        self.pvcs = Informer(kube, PERSISTENT_VOLUME_CLAIMS, watch_timeout=watch_timeout)
        self.pvs = Informer(kube, PERSISTENT_VOLUMES, watch_timeout=watch_timeout)
        self.storage_classes = Informer(kube, STORAGE_CLASSES, watch_timeout=watch_timeout)
        self.csinodes = Informer(kube, CSI_NODES, watch_timeout=watch_timeout)
        self.csidrivers = Informer(kube, CSI_DRIVERS, watch_timeout=watch_timeout)
        self.capacities = Informer(kube, CSI_STORAGE_CAPACITIES, watch_timeout=watch_timeout)
        self.storage = [
            self.pvcs,
            self.pvs,
            self.storage_classes,
            self.csinodes,
            self.csidrivers,
            self.capacities,
        ]
        self.all = [
            self.nodes,
            self.classes,
            self.slices,
            self.claims,
            self.namespaces,
            *self.storage,
            self.pods,
        ]
        self.taint_rules: Informer | None = None
        self.watch_taint_rules(taint_rules)
        self.pdbs = Informer(kube, POD_DISRUPTION_BUDGETS, watch_timeout=watch_timeout) if pdbs else None
        if self.pdbs is not None:
            self.all.insert(0, self.pdbs)

    def synced(self) -> bool:
        return all(inf.synced.is_set() for inf in self.all)

    def watch_taint_rules(self, on: bool) -> Informer | None:
        """Add (`on`) or drop the DeviceTaintRule informer; returns the informer added or dropped (None: no
        change). The caller starts an added one and stops a dropped one; until an added one has listed,
        `synced()` is false, so nothing is placed with part of the rules."""
        if on == (self.taint_rules is not None):
            return None
        if on:
            self.taint_rules = Informer(self._kube, DEVICE_TAINT_RULES, watch_timeout=self._watch_timeout)
            self.all.insert(self.all.index(self.slices) + 1, self.taint_rules)
            return self.taint_rules
        dropped, self.taint_rules = self.taint_rules, None
        assert dropped is not None
        self.all.remove(dropped)
        return dropped


class BinderContext:
    """The shared pieces (see the module docstring). `cond` guards the queue, the assume cache and the
    snapshot; the informers' stores have their own locks."""

    def __init__(
        self,
        kube: Kube,
        gates: FeatureGates,
        options: BinderOptions,
        metrics: BinderMetrics,
        is_leader: Callable[[], bool],
    ) -> None:
        self.kube = kube
        self.gates = gates
        self.options = options
        self.metrics = metrics
        self.is_leader = is_leader
        self.scheduler_name = options.scheduler_name
        self.informers = Informers(kube, options.watch_timeout, rules_apply(gates), options.preemption)
        self.cond = threading.Condition(threading.RLock())
        self.queue = SchedulingQueue(options.initial_backoff, options.max_backoff)
        self.assume = AssumeCache()
        self.events = EventSink(kube, options.instance or "dra-capacity-binder")
        self.writer = Writer(kube, metrics, self.guard)
        self.diagnoser = Diagnoser(options.diagnoses_per_second)
        self.dead = False
        self.errors = 0
        self.changes: Counter[str] = Counter()  # relevant cluster changes seen, by kind

    def guard(self) -> None:
        if self.dead or not self.is_leader():
            raise Stopped()

    def plugin_timer(self) -> PluginTimer:
        """One pod attempt's sampling decision for the plugin durations (scheduler_metrics.py)."""
        return PluginTimer.for_attempt(
            self.metrics.plugin_duration, self.options.plugin_metrics_sample_percent
        )

    def hook(self, step: str, pod: Obj) -> None:
        if self.options.hook is not None:
            self.options.hook(step, pod)
