"""Claim constraints: matchAttribute and distinctAttribute (true pairwise distinctness, as newer
`staging/src/k8s.io/dynamic-resource-allocation/structured/internal/experimental/constraint.go`).

Each constraint keeps a stack of the attribute values of the devices added so far; `remove` pops exactly what
the matching `add` pushed, so backtracking restores the previous state. With DRAListTypeAttributes
(`list_mode`) values are compared as sets, as upstream's experimental allocator does: a scalar is a
one-element set; matchAttribute needs a non-empty common intersection, distinctAttribute pairwise disjoint
sets. With `semver_equality` (1.38, resourceapi/releases.py) versions compare by semver precedence: build
metadata is ignored (`Version.Equals`, `versionWithoutBuild` in v0.38.0-beta.0's constraint code).
"""

from __future__ import annotations

from allocator.structured.pools import AttributeValue, DeviceRecord

_SCALAR_TYPES = ("string", "int", "bool", "version")
ValueSet = frozenset[tuple[str, object]]


def lookup_attribute(device: DeviceRecord, name: str) -> AttributeValue | None:
    """Fully-qualified key first; else the unqualified id when the domain is the device's driver."""
    attrs = device.attributes
    value = attrs.get(name)
    if value is not None:
        return value
    domain, sep, ident = name.partition("/")
    if not sep or domain != device.id.driver:
        return None
    return attrs.get(ident)


def without_build(value: AttributeValue) -> AttributeValue:
    """A version (or a list's versions) without its build metadata: `1.0.0+a` equals `1.0.0+b` in semver."""
    kind, raw = value
    if kind == "version" and isinstance(raw, str):
        return (kind, raw.partition("+")[0])
    if kind == "list" and any(k == "version" for k, _ in raw):
        return (kind, frozenset((k, v.partition("+")[0] if k == "version" else v) for k, v in raw))
    return value


def as_set(value: AttributeValue) -> ValueSet | None:
    """upstream attributeAsSet: scalars and non-empty lists as sets of (type, value); None if unknown."""
    kind, raw = value
    if kind == "list":
        result: ValueSet = raw
        return result
    if kind in _SCALAR_TYPES:
        return frozenset(((kind, raw),))
    return None


class Constraint:
    """Common part: which requests the constraint applies to (empty = all requests of the claim)."""

    __slots__ = ("attribute", "list_mode", "requests", "semver_equality", "values")

    def __init__(
        self,
        requests: list[str] | None,
        attribute: str,
        list_mode: bool = False,
        semver_equality: bool = False,
    ) -> None:
        self.requests = frozenset(requests or ())
        self.attribute = attribute
        self.list_mode = list_mode
        self.semver_equality = semver_equality
        self.values: list[AttributeValue] = []

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if request in self.requests:
            return True
        return bool(sub_request) and f"{request}/{sub_request}" in self.requests

    def add(self, request: str, sub_request: str, device: DeviceRecord) -> bool:
        """Admit the device (recording its value) or refuse it (recording nothing)."""
        if not self.applies(request, sub_request):
            return True
        value = lookup_attribute(device, self.attribute)
        if value is None:
            return False
        if self.semver_equality:
            value = without_build(value)
        if self.list_mode:
            ok = self._admits_set(value)
        else:
            ok = not self.values or (value[0] in _SCALAR_TYPES and self._admits_scalar(value))
        if ok:
            self.values.append(value)
        return ok

    def remove(self, request: str, sub_request: str) -> None:
        """Undo the matching successful `add`."""
        if self.applies(request, sub_request):
            self.values.pop()

    def _admits_scalar(self, value: AttributeValue) -> bool:
        raise NotImplementedError

    def _admits_set(self, value: AttributeValue) -> bool:
        raise NotImplementedError


class MatchAttribute(Constraint):
    """All constrained devices have the attribute with the same type and value (lists: a common element)."""

    __slots__ = ()

    def _admits_scalar(self, value: AttributeValue) -> bool:
        return value == self.values[0]

    def _admits_set(self, value: AttributeValue) -> bool:
        new = as_set(value)
        if new is None:
            return False
        common = new
        for existing in self.values:
            common = common & (as_set(existing) or frozenset())
            if not common:
                return False
        return True


class DistinctAttribute(Constraint):
    """Every constrained device has the attribute, with a value different from all others (pairwise)."""

    __slots__ = ()

    def _admits_scalar(self, value: AttributeValue) -> bool:
        return value not in self.values

    def _admits_set(self, value: AttributeValue) -> bool:
        if not self.values:
            return True  # upstream: the first device is taken whatever its value's type
        new = as_set(value)
        if new is None:
            return False
        return all(not (new & existing) for existing in map(as_set, self.values) if existing is not None)
