"""One pod's scheduling attempt, carried as one object through the scheduling and binding cycles.

Upstream: `pkg/scheduler/framework/types.go` (`QueuedPodInfo`: the pod, its queued timestamp, its attempts and
the plugins that rejected it) and `pkg/scheduler/framework/cycle_state.go` (`CycleState`: what one attempt's
plugins hand each other, from Filter to PreBind). Each hook (Reserve, PostFilter, PreBind, Bind, Unreserve)
takes the two objects, so a new step reads and writes the attempt's state without growing signatures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from allocator.scheduling.placement import Placement
from binder.hints import Key, pod_uid
from binder.models import parse
from binder.scheduler_metrics import PluginTimer
from kubeio.kube import Obj
from resourceapi.api.core_v1 import Pod
from resourceapi.api.resource_v1 import AllocationResult


@dataclass
class QueuedPodInfo:
    """A pod as the queue hands it to a scheduling cycle: its key, the informer's object, the parsed pod and
    its uid, when the attempt began (`timestamp`, monotonic), how many attempts it has had (this one
    included), and the plugins that rejected it (set when the attempt finds it unschedulable)."""

    key: Key
    obj: Obj
    pod: Pod
    uid: str
    timestamp: float
    attempts: int = 1
    unschedulable_plugins: frozenset[str] = frozenset()

    @classmethod
    def of(cls, key: Key, obj: Obj, timestamp: float, attempts: int = 1) -> QueuedPodInfo | None:
        """The attempt for the informer's `obj`; None when the pod cannot be read."""
        pod = parse(Pod, obj)
        if pod is None:
            return None
        return cls(key, obj, pod, pod_uid(obj), timestamp, attempts)

    @property
    def name(self) -> str:
        """`namespace/name`, as the decision log and the messages name the pod."""
        return f"{self.key[0]}/{self.key[1]}"


@dataclass
class Written:
    """How far PreBind got, for Unreserve: the claim it created (the latest answer), and whether the pod's
    status names it."""

    claim: Obj | None = None
    linked: bool = False
    pod: Obj | None = None  # the pod as the status patch answered (the Binding is conditional on it)


@dataclass(frozen=True)
class Reserved:
    """What Reserve hands to the binding cycle: the claim to create and its allocation (None without one)."""

    body: Obj | None
    result: AllocationResult | None


@dataclass
class CycleState:
    """One attempt's state from Filter on: the placement found, what Reserve counted, how far PreBind wrote,
    the plugin-duration sampling, and when the binding cycle began."""

    timer: PluginTimer = field(default_factory=lambda: PluginTimer(None, False))
    placement: Placement | None = None
    reserved: Reserved | None = None
    written: Written = field(default_factory=Written)
    claim_name: str | None = None  # the extended-resource claim PreBind made real (or recovery found)
    bind_started: float = 0.0  # monotonic, when the binding cycle began

    @property
    def node(self) -> str:
        """The node the placement picked (only after a bound placement)."""
        assert self.placement is not None and self.placement.node is not None
        return self.placement.node
