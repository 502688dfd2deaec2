"""The FailedScheduling Event's text: upstream's summary line first, then what exactly is unsatisfied.

KEP-6406's risk section says a pod that does not fit gets an Event naming the unsatisfied requirement (a
capacity name no device advertises, too few shares free). The summary (`0/2 nodes are available: 2 cannot
allocate all claims.`) is kube-scheduler's FitError text, which tools parse: it stays the first line, alone;
the reasons from the diagnosis pass of `simulate --explain` (allocator/scheduling/explain.py) follow, one per
line. The pod condition keeps the summary alone (docs/divergences.md).

The diagnosis runs only for a pod that did not fit, and its cost is bounded four ways: equal pods share
one diagnosis while the snapshot's placer notes no change (a small cache), a change of a few nodes (a driver
republishing one node's slice, a share bound on one node) diagnoses those nodes again and keeps the others'
reasons (`Placer.changed_since`; a pod whose inter-pod filters read other nodes' pods is diagnosed whole), at
most `rate` diagnoses run per second (a token bucket: beyond it the Event carries the summary alone), and the
text is cut to `MAX_LINES` reasons and `events.MAX_MESSAGE` characters.
"""

from __future__ import annotations

import json
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from allocator.scheduling.explain import NodeDiagnosis, PodContext, diagnose_pod, group_by_reason
from allocator.scheduling.placement import Placer
from allocator.scheduling.topologyfilters import topology_filters
from allocator.structured.cluster import Cluster
from binder.events import MAX_MESSAGE
from resourceapi.api.core_v1 import Pod

MAX_LINES = 6  # reasons after the summary; more are counted, not listed
MAX_LINE = 400  # characters of one reason
CACHE_SIZE = 128
DEFAULT_RATE = 20.0  # diagnoses per second, sustained (the burst is the same number)


def compose(summary: str, reasons: Sequence[str], limit: int = MAX_MESSAGE) -> str:
    """`summary`, then one reason per line, within `limit` characters; what is left out is counted."""
    lines = [summary]
    used = len(summary)
    for i, reason in enumerate(reasons):
        line = reason if len(reason) <= MAX_LINE else reason[: MAX_LINE - 3] + "..."
        rest = len(reasons) - i - 1
        tail = len(f"\n(+{rest} more)") if rest else 0
        if i >= MAX_LINES or used + 1 + len(line) + tail > limit:
            lines.append(f"(+{len(reasons) - i} more)")
            break
        lines.append(line)
        used += 1 + len(line)
    return "\n".join(lines)[:limit]


class TokenBucket:
    """`rate` per second, up to `rate` at once; the clock is passed in (tests)."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.clock = clock
        self.tokens = rate
        self.last = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.rate, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


def diagnosis_key(pod: Pod) -> str:
    """What the diagnosis reads of a pod, as a cache key: its namespace, labels (other pods' anti-affinity
    and spread constraints select by them) and spec, without its volumes and volume mounts, which no stage
    of the diagnosis reads and which differ per pod (the API server's `kube-api-access-<random>` token
    volume): replicas of one workload share one diagnosis."""
    spec = pod.spec.to_api()
    spec.pop("volumes", None)
    for field_name in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(field_name) or []:
            if isinstance(container, dict):
                container.pop("volumeMounts", None)
                container.pop("volumeDevices", None)
    return json.dumps([pod.namespace, pod.metadata.labels, spec], sort_keys=True, default=str)


@dataclass
class _Known:
    """One pod shape's diagnosis on one placer: its reasons by node, grouped, as of the placer's mark."""

    placer: weakref.ref[Placer]
    mark: tuple[int, int]
    by_node: dict[str, tuple[str, ...]]
    grouped: tuple[str, ...]


class Diagnoser:
    """Why a pod fits no node, for its Event (the caller holds the binder's lock: the snapshot is stable)."""

    def __init__(self, rate: float = DEFAULT_RATE, clock: Callable[[], float] = time.monotonic) -> None:
        self.bucket = TokenBucket(rate, clock)
        self._cache: OrderedDict[str, _Known] = OrderedDict()
        self.runs = 0  # diagnoses run (not served from the cache), whole or of the changed nodes
        self.partial = 0  # of those, the ones that diagnosed only the nodes changed since the last one
        self.skipped = 0  # diagnoses refused by the rate limit

    def reasons(self, placer: Placer, cluster: Cluster, pod: Pod) -> tuple[str, ...] | None:
        """The grouped reasons (allocator/scheduling/explain.py), or None when the rate limit refuses. Equal
        pods on an unchanged placer get the cached answer."""
        key = diagnosis_key(pod)
        known = self._cache.get(key)
        changed: set[str] | None = None
        if known is not None and known.placer() is placer:
            changed = placer.changed_since(known.mark)
            if changed and topology_filters(pod, placer.index) is not None:
                changed = None  # the inter-pod filters read other nodes' pods: diagnose it whole
            if changed is not None and not changed:
                self._cache.move_to_end(key)
                return known.grouped
        if not self.bucket.take():
            self.skipped += 1
            return None
        mark = placer.change_mark()
        if known is not None and changed is not None:
            nodes = [n for n in placer.nodes if n.name in changed]
            by_node = {n: r for n, r in known.by_node.items() if n not in changed}
            self.partial += 1
        else:
            nodes = placer.nodes
            by_node = {}
        ctx = PodContext(nodes, placer.node_usage, placer.index, placer.resolver, placer.gates)
        for d in diagnose_pod(cluster, ctx, pod, []):
            by_node[d.node] = d.reasons
        found = tuple(group_by_reason(NodeDiagnosis(n, r) for n, r in sorted(by_node.items())))
        self.runs += 1
        self._cache[key] = _Known(weakref.ref(placer), mark, by_node, found)
        self._cache.move_to_end(key)
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return found

    def message(self, summary: str, placer: Placer, cluster: Cluster, pod: Pod) -> str:
        """The Event's message: the summary, then the reasons when the diagnosis ran."""
        found = self.reasons(placer, cluster, pod)
        return compose(summary, found or ())
