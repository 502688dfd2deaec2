"""Gate drop-on-disable for DeviceClass, upstream's `dropDisabledFields` pattern, as a JSONPatch.

Per feature: if the gate is on, or the OLD object already uses the feature (`!= nil`, anywhere), nothing is
dropped; otherwise every field of that feature is removed from the new object, silently. On create there is no
old object, so a disabled feature's fields are always dropped.

| feature gate                 | fields                                                                    |
|------------------------------|---------------------------------------------------------------------------|
| DRAExtendedResource          | `spec.extendedResourceName`                                               |
| DRAExtendedResourceCapacity  | `spec.extendedResourceCapacityRequests` and the annotation carrier        |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resourceapi.capacity_requests import ANNOTATION, CAPACITY_FIELD, NAME_FIELD
from resourceapi.gates import DRA_EXTENDED_RESOURCE, DRA_EXTENDED_RESOURCE_CAPACITY, FeatureGates
from resourceapi.machinery.objects import annotations_of, spec_of


@dataclass(frozen=True)
class DroppedField:
    """One field removed by the drop: its display path, its gate and its JSONPatch `remove` operation."""

    path: str
    gate: str
    op: dict[str, str]


@dataclass
class DropResult:
    """The object as it will be stored (shallow copies where something was removed) and what was removed."""

    obj: dict[str, Any]
    dropped: list[DroppedField] = field(default_factory=list)

    @property
    def patch(self) -> list[dict[str, str]]:
        return [d.op for d in self.dropped]


def json_pointer(*tokens: str) -> str:
    """RFC 6901 pointer: `~` becomes `~0` and `/` becomes `~1` in each token."""
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def uses_extended_resource(obj: Mapping[str, Any] | None) -> bool:
    """Upstream's `inUse(old)`: `spec.extendedResourceName != nil`."""
    return spec_of(obj).get(NAME_FIELD) is not None


def uses_capacity_requests(obj: Mapping[str, Any] | None) -> bool:
    """KEP-6406 in use: the field is non-nil, or the annotation carrier is present."""
    return spec_of(obj).get(CAPACITY_FIELD) is not None or ANNOTATION in annotations_of(obj)


def drop_disabled_fields(
    obj: dict[str, Any], old: Mapping[str, Any] | None, gates: FeatureGates
) -> DropResult:
    """Apply the drop to `obj` without mutating it; `old` is None on create."""
    dropped: list[DroppedField] = []
    spec = spec_of(obj)
    drop_spec: list[str] = []
    if (
        not gates.enabled(DRA_EXTENDED_RESOURCE)
        and spec.get(NAME_FIELD) is not None
        and not uses_extended_resource(old)
    ):
        drop_spec.append(NAME_FIELD)
        dropped.append(
            DroppedField(
                f"spec.{NAME_FIELD}", DRA_EXTENDED_RESOURCE, _remove(json_pointer("spec", NAME_FIELD))
            )
        )
    drop_annotation = False
    if not gates.enabled(DRA_EXTENDED_RESOURCE_CAPACITY) and not uses_capacity_requests(old):
        if spec.get(CAPACITY_FIELD) is not None:
            drop_spec.append(CAPACITY_FIELD)
            dropped.append(
                DroppedField(
                    f"spec.{CAPACITY_FIELD}",
                    DRA_EXTENDED_RESOURCE_CAPACITY,
                    _remove(json_pointer("spec", CAPACITY_FIELD)),
                )
            )
        if ANNOTATION in annotations_of(obj):
            drop_annotation = True
            dropped.append(
                DroppedField(
                    ANNOTATION,
                    DRA_EXTENDED_RESOURCE_CAPACITY,
                    _remove(json_pointer("metadata", "annotations", ANNOTATION)),
                )
            )
    if not dropped:
        return DropResult(obj)
    stored = dict(obj)
    if drop_spec:
        stored["spec"] = {k: v for k, v in spec.items() if k not in drop_spec}
    if drop_annotation:
        meta = dict(obj["metadata"])
        meta["annotations"] = {k: v for k, v in annotations_of(obj).items() if k != ANNOTATION}
        stored["metadata"] = meta
    return DropResult(stored, dropped)


def apply_removals(obj: dict[str, Any], patch: list[dict[str, str]]) -> dict[str, Any]:
    """Apply `remove` operations (the only kind the drop emits) to a copy of `obj`, copying what changes."""
    result = dict(obj)
    for op in patch:
        if op.get("op") != "remove":
            raise ValueError(f"unsupported JSONPatch operation {op.get('op')!r}")
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
        parent: dict[str, Any] = result
        for token in tokens[:-1]:
            child = dict(parent[token])
            parent[token] = child
            parent = child
        del parent[tokens[-1]]
    return result


def _remove(path: str) -> dict[str, str]:
    return {"op": "remove", "path": path}
