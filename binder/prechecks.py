"""The node pre-checks of the queueing hints: may the node(s) an event concerns host a pod, by the pod's
static predicates (allocator/scheduling/predicates.py `static_reasons`: unschedulable, node name, taints,
node affinity)? Upstream's PreEnqueueCheck (`preCheckForNode`, pkg/scheduler/eventhandlers.go), taken
further: the hints of node-local plugins apply it to slice, claim and pod events too (binder/hints.py).

A pod that does not parse, and a node the informer does not hold, pass: the check only ever skips a pod it
can show the node excludes. Parsed pods are kept by uid and resourceVersion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from allocator.scheduling.predicates import static_reasons
from binder.hints import PreCheck
from binder.models import parse
from resourceapi.api.core_v1 import Node, Pod

MAX_PODS = 50_000  # parsed pods kept; beyond it the cache starts again


class PodModels:
    """Parsed pods by uid, for as long as their resourceVersion holds."""

    def __init__(self) -> None:
        self._by_uid: dict[str, tuple[Any, Pod | None]] = {}

    def get(self, obj: Mapping[str, Any]) -> Pod | None:
        meta = obj.get("metadata") or {}
        uid, rv = str(meta.get("uid") or ""), meta.get("resourceVersion")
        have = self._by_uid.get(uid)
        if have is not None and have[0] == rv and rv is not None:
            return have[1]
        model = parse(Pod, dict(obj))
        if len(self._by_uid) >= MAX_PODS:
            self._by_uid.clear()
        self._by_uid[uid] = (rv, model)
        return model


def on_nodes(
    pods: PodModels,
    names: Iterable[str] | None,
    node_of: Callable[[str], Mapping[str, Any] | None],
    node_objs: Iterable[Mapping[str, Any]] = (),
) -> PreCheck | None:
    """The pre-check of an event on the nodes `names` (read with `node_of`) or the node objects `node_objs`;
    None (any node) when `names` is None and no object is given."""
    objs = list(node_objs)
    if names is not None:
        for name in names:
            obj = node_of(name)
            if obj is None:
                return None  # a node we do not know: no exclusion can be shown
            objs.append(obj)
    elif not objs:
        return None
    nodes = [n for n in (parse(Node, dict(o)) for o in objs) if n is not None]
    if len(nodes) < len(objs):
        return None

    def check(pod: Mapping[str, Any]) -> bool:
        model = pods.get(pod)
        return model is None or any(not static_reasons(model, node) for node in nodes)

    return check
