"""Prometheus metrics of the binder, in a registry of its own (served by procrt/health.py).

The project's own names follow kube-scheduler's where they overlap (`scheduler_resourceclaim_creates_total`,
`scheduler_pod_scheduling_sli_duration_seconds`), prefixed `dra_capacity_binder_`. Two series carry
kube-scheduler's exact names, labels, help and buckets, because KEP-6406's rollback signal and SLI are
written against them (`scheduler_unschedulable_pods`, `scheduler_plugin_execution_duration_seconds`:
binder/scheduler_metrics.py, docs/binder.md); so do preemption's (`scheduler_preemption_attempts_total`,
`scheduler_preemption_victims`, binder/postfilter.py) and the binding conditions' (v1.38.0-beta.0's
`scheduler_dra_bindingconditions_allocations_total` and `..._wait_duration_seconds`, binding_conditions.py).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

PLUGIN_DURATION_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))  # ExponentialBuckets(0.00001, 1.5, 20)
BINDING_CONDITIONS_WAIT_BUCKETS = tuple(0.1 * 2**i for i in range(14))  # ExponentialBuckets(0.1, 2, 14)
PREEMPTION_VICTIMS_BUCKETS = tuple(float(2**i) for i in range(7))  # ExponentialBuckets(1, 2, 7)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class BinderMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.pods_bound = Counter("dra_capacity_binder_pods_bound", "Pods bound to a node.", registry=r)
        self.pods_unschedulable = Counter(
            "dra_capacity_binder_pods_unschedulable",
            "Placement attempts that found no node, by reason (the scheduler-style reason per node).",
            ["reason"],
            registry=r,
        )
        self.bind_latency = Histogram(
            "dra_capacity_binder_bind_latency_seconds",
            "Time from the pod's creationTimestamp to its Binding.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.attempts = Counter(
            "dra_capacity_binder_allocation_attempts",
            "Placement attempts by result (bound, unschedulable, error).",
            ["result"],
            registry=r,
        )
        self.claim_creates = Counter(
            "dra_capacity_binder_resourceclaim_creates",
            "ResourceClaim creates by status (success, failure).",
            ["status"],
            registry=r,
        )
        self.conflicts = Counter(
            "dra_capacity_binder_api_conflicts",
            "409 Conflict answers, by the write that got them.",
            ["operation"],
            registry=r,
        )
        self.retries = Counter(
            "dra_capacity_binder_api_retries",
            "API writes retried (after a conflict or a transient error), by operation.",
            ["operation"],
            registry=r,
        )
        self.claims_deleted = Counter(
            "dra_capacity_binder_claims_deleted",
            "Extended-resource claims deleted, by why (leftover, failed-bind).",
            ["why"],
            registry=r,
        )
        self.recovered = Counter(
            "dra_capacity_binder_binds_resumed",
            "Binds completed from a claim already allocated and reserved (crash recovery).",
            registry=r,
        )
        self.not_routed = Counter(
            "dra_capacity_binder_pods_not_routed",
            "Pods that should have been routed to this binder but kept the default scheduler.",
            registry=r,
        )
        self.other_scheduler = Counter(
            "dra_capacity_binder_pods_other_scheduler",
            "Pods that request a resource this binder serves but name another scheduler (not the default).",
            registry=r,
        )
        self.not_opted_in = Counter(
            "dra_capacity_binder_pods_not_opted_in",
            "Pods that request a resource this binder serves from a namespace not opted in to routing.",
            registry=r,
        )
        self.foreign_allocations = Gauge(
            "dra_capacity_binder_foreign_allocations",
            "Devices this binder serves that another scheduler allocated (1 per claim and device while it "
            "lasts): one allocator per device did not hold.",
            ["namespace", "pod", "claim", "device"],
            registry=r,
        )
        # kube-scheduler's own names, for the pods this binder places (binder/scheduler_metrics.py)
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for "
            "all plugins that caused it to not schedule and so this metric have meaning only when broken "
            "down by plugin.",
            ["plugin", "profile"],
            registry=r,
        )
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=PLUGIN_DURATION_BUCKETS,
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now",
            registry=r,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims for preemption initiated by a single pod",
            buckets=PREEMPTION_VICTIMS_BUCKETS,
            registry=r,
        )
        # DRADeviceBindingConditions' two series (registered upstream only with that gate; here always, empty
        # until a device with binding conditions is allocated)
        self.binding_conditions_allocations = Counter(
            "scheduler_dra_bindingconditions_allocations_total",
            "Number of allocations using devices with BindingConditions, counted per driver per scheduling "
            "attempt, by scheduler profile.",
            ["profile", "driver", "status"],
            registry=r,
        )
        self.binding_conditions_wait = Histogram(
            "scheduler_dra_bindingconditions_wait_duration_seconds",
            "Time in seconds spent waiting for BindingConditions to be satisfied during PreBind, by "
            "scheduler profile.",
            ["profile", "driver", "status"],
            buckets=BINDING_CONDITIONS_WAIT_BUCKETS,
            registry=r,
        )
        self.leader = Gauge("dra_capacity_binder_leader", "1 while this replica holds the lease.", registry=r)
        self.pending = Gauge(
            "dra_capacity_binder_pending_pods", "Pods in the queue, by state.", ["state"], registry=r
        )

    content_type = CONTENT_TYPE_LATEST

    def render(self) -> bytes:
        return generate_latest(self.registry)
