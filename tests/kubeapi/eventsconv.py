"""core/v1 and events.k8s.io/v1 Events share one storage, as upstream (both REST endpoints store
`/registry/events/<namespace>/<name>`); this converts between the stored core form and the events.k8s.io
form, field for field as `pkg/apis/events/v1/conversion.go` does."""

from __future__ import annotations

from typing import Any

from .codec import clone
from .resources import ResourceType

EVENTS_V1 = "events.events.k8s.io"
# events.k8s.io/v1 name -> core/v1 name
_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_BACK = {v: k for k, v in _RENAMES.items()}


def _rename(obj: dict[str, Any], table: dict[str, str], api_version: str) -> dict[str, Any]:
    out = {table.get(k, k): clone(v) for k, v in obj.items()}
    out["apiVersion"] = api_version
    out["kind"] = "Event"
    return out


def to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The stored (core/v1) form of an object written through `rt`."""
    return _rename(obj, _RENAMES, "v1") if rt.key == EVENTS_V1 else obj


def from_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The `rt` form of a stored object."""
    return _rename(obj, _BACK, "events.k8s.io/v1") if rt.key == EVENTS_V1 else obj
