"""The FailedScheduling Event's text: upstream's summary line first, then what exactly is unsatisfied.

KEP-6406's risk section says a pod that does not fit gets an Event naming the unsatisfied requirement (a
capacity name no device advertises, too few shares free). The summary (`0/2 nodes are available: 2 cannot
allocate all claims.`) is kube-scheduler's FitError text, which tools parse: it stays the first line, alone;
the reasons from the diagnosis pass of `simulate --explain` (allocator/scheduling/explain.py) follow, one per
line. The pod condition keeps the summary alone (docs/divergences.md).

The diagnosis runs only for a pod that did not fit, and its cost is bounded three ways: equal pods in an
unchanged snapshot share one diagnosis (a small cache), at most `rate` diagnoses run per second (a token
bucket: beyond it the Event carries the summary alone), and the text is cut to `MAX_LINES` reasons and
`events.MAX_MESSAGE` characters.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from allocator.scheduling.explain import PodContext, explain_pod
from allocator.scheduling.placement import Placer
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


class Diagnoser:
    """Why a pod fits no node, for its Event (the caller holds the binder's lock: the snapshot is stable)."""

    def __init__(self, rate: float = DEFAULT_RATE, clock: Callable[[], float] = time.monotonic) -> None:
        self.bucket = TokenBucket(rate, clock)
        self._cache: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self.runs = 0  # diagnoses run (not served from the cache)
        self.skipped = 0  # diagnoses refused by the rate limit

    def reasons(self, placer: Placer, cluster: Cluster, pod: Pod, state: object) -> tuple[str, ...] | None:
        """The grouped reasons (allocator/scheduling/explain.py), or None when the rate limit refuses.
        `state` names the snapshot's version: equal pods in the same state get the cached answer."""
        key = json.dumps([pod.namespace, pod.spec.to_api(), repr(state)], sort_keys=True, default=str)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        if not self.bucket.take():
            self.skipped += 1
            return None
        ctx = PodContext(placer.nodes, placer.node_usage, placer.index, placer.resolver, placer.gates)
        found = tuple(explain_pod(cluster, ctx, pod, []))
        self.runs += 1
        self._cache[key] = found
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return found

    def message(self, summary: str, placer: Placer, cluster: Cluster, pod: Pod, state: object) -> str:
        """The Event's message: the summary, then the reasons when the diagnosis ran."""
        found = self.reasons(placer, cluster, pod, state)
        return compose(summary, found or ())
