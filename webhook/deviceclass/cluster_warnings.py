"""Cluster-aware admission warnings for a DeviceClass: the silent misconfigurations the KEP names as a risk.

Upstream validation sees no cluster state, so a class whose capacity request names a capacity no device
publishes is accepted and every pod using it stays pending, silently. These checks read what the cluster
publishes (a `ClusterView`) and only ever warn: a warning never rejects, so a stale or partial view cannot
lock anyone out. Each text is at most 120 characters and names the class and the capacity or device.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from resourceapi.api.meta import ObjectMeta
from resourceapi.api.resource_v1 import DeviceClass, DeviceClassSpec
from resourceapi.capacity import CapacityEntry, consumed_amount, normalize_name
from resourceapi.capacity_requests import ANNOTATION, CAPACITY_FIELD, NAME_FIELD, parse_carrier
from resourceapi.cel import CompileResult
from resourceapi.extended import winning_class
from resourceapi.gates import FeatureGates
from resourceapi.machinery.objects import annotations_of, display_name, metadata_of, spec_of
from resourceapi.machinery.quantity import Quantity, QuantityError, coerce_quantity
from webhook.clusterview.cluster_view import ClusterView, DeviceGroup, SelectorOutcome
from webhook.deviceclass.warning_texts import fit

Compiler = Callable[[str, FeatureGates], CompileResult]


class Kind(enum.Enum):
    """What a finding is about; the first four leave every pod of the class unschedulable."""

    SELECTOR_FAILS = "SelectorFails"
    NO_DEVICE_MATCHES = "NoDeviceMatches"
    NO_SUCH_CAPACITY = "NoSuchCapacity"
    AMOUNT_TOO_LARGE = "AmountTooLarge"
    AMOUNT_ROUNDED = "AmountRounded"
    NOT_SHAREABLE = "NotShareable"
    NAME_CLAIMED_TWICE = "NameClaimedTwice"


STRANDING = frozenset(
    {Kind.SELECTOR_FAILS, Kind.NO_DEVICE_MATCHES, Kind.NO_SUCH_CAPACITY, Kind.AMOUNT_TOO_LARGE}
)
"""Findings that make every pod using the class permanently unschedulable."""


@dataclass(frozen=True)
class Finding:
    kind: Kind
    text: str  # at most 120 characters, names the class and the capacity or device

    @property
    def stranding(self) -> bool:
        return self.kind in STRANDING


def cluster_warnings(
    obj: Mapping[str, Any], view: ClusterView, gates: FeatureGates, compile_selector: Compiler
) -> list[str]:
    """Every cluster-aware warning text for the DeviceClass `obj` (as it will be stored)."""
    return [f.text for f in cluster_findings(obj, view, gates, compile_selector)]


def cluster_findings(
    obj: Mapping[str, Any], view: ClusterView, gates: FeatureGates, compile_selector: Compiler
) -> list[Finding]:
    """Every cluster-aware finding for the DeviceClass `obj` (as it will be stored), in a stable order;
    computed once per content of the class within a view."""
    key = _content_key(obj, gates)
    if key is None:
        return _findings(obj, view, gates, compile_selector)
    return list(view.memo(key, lambda: tuple(_findings(obj, view, gates, compile_selector))))


def _content_key(obj: Mapping[str, Any], gates: FeatureGates) -> tuple[object, ...] | None:
    """Everything the findings read of the class, as a hashable key (None when a part is not plain data)."""
    spec = spec_of(obj)
    meta = metadata_of(obj)
    try:
        return (
            id(gates),
            display_name(obj),
            repr(meta.get("creationTimestamp")),
            repr(spec.get("selectors")),
            repr(spec.get(CAPACITY_FIELD)),
            repr(spec.get(NAME_FIELD)),
            repr(annotations_of(obj).get(ANNOTATION)),
        )
    except RecursionError:
        return None


def _findings(
    obj: Mapping[str, Any], view: ClusterView, gates: FeatureGates, compile_selector: Compiler
) -> list[Finding]:
    name = display_name(obj) or "<unnamed>"
    out: list[Finding] = []
    outcomes = _selector_outcomes(obj, view, gates, compile_selector)
    matched: list[DeviceGroup] = []
    if outcomes is not None:  # None: a selector that does not compile; validation reports it
        out.extend(_runtime_errors(name, view, outcomes))
        mask = view.all_devices
        for outcome in outcomes:
            mask &= outcome.matches
        matched = [
            DeviceGroup(
                g.driver, g.capacity, g.allow_multiple_allocations, g.mask & mask, (g.mask & mask).bit_count()
            )
            for g in view.groups
            if g.mask & mask
        ]
        if view.devices and not mask:
            out.append(_no_match(name, view, outcomes))
    requests = _requests(obj)
    if requests and matched:
        out.extend(_capacity_warnings(name, requests, matched))
    out.extend(_name_conflicts(name, obj, view))
    return out


def _selector_outcomes(
    obj: Mapping[str, Any], view: ClusterView, gates: FeatureGates, compile_selector: Compiler
) -> list[SelectorOutcome] | None:
    selectors = spec_of(obj).get("selectors")
    if not isinstance(selectors, list):
        return []
    outcomes: list[SelectorOutcome] = []
    for item in selectors:
        cel = item.get("cel") if isinstance(item, dict) else None
        expression = cel.get("expression") if isinstance(cel, dict) else None
        if not isinstance(expression, str):
            return None
        compiled = compile_selector(expression, gates)
        if compiled.program is None:
            return None
        outcomes.append(view.evaluate(expression, compiled.program))
    return outcomes


def _runtime_errors(name: str, view: ClusterView, outcomes: Sequence[SelectorOutcome]) -> list[Finding]:
    """A selector that fails on a published device aborts scheduling for every pod of the class."""
    out: list[Finding] = []
    for i, outcome in enumerate(outcomes):
        if outcome.errors:
            index = min(outcome.errors)
            out.append(
                Finding(
                    Kind.SELECTOR_FAILS,
                    fit(
                        "DeviceClass {name}: selector {n} fails on {count} devices ({error} on {device}); "
                        "guard with has() or orValue()",
                        name=name,
                        n=str(i + 1),
                        count=str(len(outcome.errors)),
                        device=view.devices[index].name,
                        error=outcome.errors[index],
                    ),
                )
            )
    return out


def _no_match(name: str, view: ClusterView, outcomes: Sequence[SelectorOutcome]) -> Finding:
    return Finding(Kind.NO_DEVICE_MATCHES, _no_match_text(name, view, outcomes))


def _no_match_text(name: str, view: ClusterView, outcomes: Sequence[SelectorOutcome]) -> str:
    """No published device matches every selector: name the selector that excludes them."""
    for i, outcome in enumerate(outcomes):
        if not outcome.matches:
            return fit(
                "DeviceClass {name}: selector {n} matches no published device", name=name, n=str(i + 1)
            )
    for i in range(len(outcomes)):
        rest = view.all_devices if len(outcomes) > 1 else 0
        for j, o in enumerate(outcomes):
            if j != i:
                rest &= o.matches
        if rest:
            return fit(
                "DeviceClass {name}: selector {n} excludes all {count} devices the other selectors match",
                name=name,
                n=str(i + 1),
                count=str(rest.bit_count()),
            )
    return fit("DeviceClass {name}: its selectors together match no published device", name=name)


def _requests(obj: Mapping[str, Any]) -> dict[str, Quantity]:
    """The KEP-6406 requests as stored (field first, else the annotation); {} when unusable."""
    raw = spec_of(obj).get(CAPACITY_FIELD)
    if raw is None:
        text = annotations_of(obj).get(ANNOTATION)
        if text is None:
            return {}
        requirements, errors = parse_carrier(text)
        if errors or requirements is None:
            return {}
        return dict(requirements.requests or {})
    requests = raw.get("requests") if isinstance(raw, dict) else None
    if not isinstance(requests, dict):
        return {}
    out: dict[str, Quantity] = {}
    for key, value in requests.items():
        try:
            out[str(key)] = coerce_quantity(value)
        except QuantityError:
            return {}  # validation rejects it
    return out


def _capacity_warnings(
    name: str, requests: Mapping[str, Quantity], groups: Sequence[DeviceGroup]
) -> list[Finding]:
    out: list[Finding] = []
    if not any(g.allow_multiple_allocations for g in groups):
        out.append(
            Finding(
                Kind.NOT_SHAREABLE,
                fit(
                    "DeviceClass {name}: none of its {count} devices allows multiple allocations, "
                    "so each pod takes a whole device",
                    name=name,
                    count=str(sum(g.count for g in groups)),
                ),
            )
        )
    for key, amount in requests.items():
        entries = [g.capacity[normalize_name(key, g.driver)] for g in groups if _has(g, key)]
        if not entries:
            out.append(_unpublished(name, key, groups))
            continue
        out.extend(_amount_warnings(name, key, amount, entries))
    return out


def _has(group: DeviceGroup, key: str) -> bool:
    return normalize_name(key, group.driver) in group.capacity


def _unpublished(name: str, key: str, groups: Sequence[DeviceGroup]) -> Finding:
    """No matched device publishes the capacity: offer the names they do publish, and close matches."""
    advertised = sorted({e.spelling.rsplit("/", 1)[-1] for g in groups for e in g.capacity.values()})
    ident = key.rsplit("/", 1)[-1]
    close = difflib.get_close_matches(ident, advertised, n=1)
    hint = f'; did you mean "{close[0]}"?' if close else ""
    return Finding(
        Kind.NO_SUCH_CAPACITY,
        fit(
            'DeviceClass {name}: no device has capacity "{key}" (they have: {names}){hint}',
            name=name,
            key=key,
            names=", ".join(advertised) or "none",
            hint=hint,
        ),
    )


def _amount_warnings(
    name: str, key: str, amount: Quantity, entries: Sequence[CapacityEntry]
) -> list[Finding]:
    consumed = [(e, consumed_amount(amount, e)) for e in entries]
    if all(c.value > e.value for e, c in consumed):
        largest = max(e.quantity for e in entries)
        return [
            Finding(
                Kind.AMOUNT_TOO_LARGE,
                fit(
                    "DeviceClass {name}: requests {key}={amount}, more than any matching device has "
                    "(largest {max})",
                    name=name,
                    key=key,
                    amount=str(amount),
                    max=str(largest),
                ),
            )
        ]
    rounded = sorted({str(c) for _, c in consumed if c.value != amount.value})
    if not rounded:
        return []
    why = _policy_reason(next(e for e, c in consumed if c.value != amount.value), amount)
    return [
        Finding(
            Kind.AMOUNT_ROUNDED,
            fit(
                "DeviceClass {name}: requests {key}={amount}, devices round to {to}{why}",
                name=name,
                key=key,
                amount=str(amount),
                to=" or ".join(rounded),
                why=why,
            ),
        )
    ]


def _policy_reason(entry: CapacityEntry, amount: Quantity) -> str:
    policy = entry.policy
    if policy is None:
        return ""
    if policy.range_min is not None:
        if amount.value < policy.range_min.value:
            return f" (validRange min {policy.range_min})"
        if policy.range_step is not None:
            return f" (validRange step {policy.range_step})"
        return " (validRange)"
    if policy.valid_values is not None:
        return " (validValues " + ", ".join(str(v) for v in policy.valid_values) + ")"
    return ""


def _name_conflicts(name: str, obj: Mapping[str, Any], view: ClusterView) -> list[Finding]:
    """Another class claims the same extendedResourceName: say which one the scheduler maps it to."""
    resource = spec_of(obj).get(NAME_FIELD)
    if not isinstance(resource, str) or not resource:
        return []
    others = [
        c for n, c in sorted(view.classes.items()) if n != name and c.spec.extended_resource_name == resource
    ]
    if not others:
        return []
    meta = metadata_of(obj)
    created = meta.get("creationTimestamp")
    this = DeviceClass(
        metadata=ObjectMeta(name=name, creation_timestamp=created if isinstance(created, str) else None),
        spec=DeviceClassSpec(extended_resource_name=resource),
    )
    if not isinstance(created, str):
        return [  # a create: the API server stamps it now, so it is the newest and wins
            Finding(
                Kind.NAME_CLAIMED_TWICE,
                fit(
                    "DeviceClass {name} takes {resource} over from DeviceClass {other} "
                    "(the newer class wins)",
                    name=name,
                    resource=resource,
                    other=", ".join(c.metadata.name for c in others),
                ),
            )
        ]
    winner = winning_class([this, *others])
    losers = [c.metadata.name for c in (this, *others) if c is not winner]
    return [
        Finding(
            Kind.NAME_CLAIMED_TWICE,
            fit(
                "{resource} is claimed by DeviceClasses {names}: {winner} wins (newest, then smallest name)",
                resource=resource,
                names=", ".join(sorted([winner.metadata.name, *losers])),
                winner=winner.metadata.name,
            ),
        )
    ]
