"""Evaluating compiled selectors against devices, as the allocator does, at native speed where possible.

A device becomes one pre-built activation (`device_input`, once per device); a selector becomes one program
in the evaluation environment (`Selector`, prepared once, reused for every device). Before preparing, the
checked AST is rewritten so that:

* a lookup of an unknown domain (`device.attributes["nope"]`) yields an empty map, as upstream's
  `newStringInterfaceMapWithDefault` (`m[?k].orValue({})`, native optional functions);
* `quantity("<literal>")` and `semver("<literal>"[, b])` become constants (tagged strings, quantitylib.py),
  so constant arguments cost no Python call per evaluation;
* `isGreaterThan`, `isLessThan`, `compareTo` and `sign` on operands known to be Quantities become native
  string comparisons (the runtime strings order like the values).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from resourceapi.cel import formatlib, libraries, netlib, quantitylib, semverlib, urls
from resourceapi.cel.checked import Expr, serialize_checked, type_name
from resourceapi.cel.env import evaluation_env
from resourceapi.cel.messages import QUANTITY_TYPE
from resourceapi.cel.shape import Shape, children, shape_of
from resourceapi.machinery.quantity import Quantity, QuantityError
from resourceapi.machinery.semver import Semver, SemverError

# What an attribute is made of (resource.k8s.io DeviceAttribute; list forms with DRAListTypeAttributes).
_SCALAR_KINDS = ("int", "bool", "string", "version")
_LIST_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}

# Quantity member comparisons that run natively on runtime strings when both operands are Quantities.
_NATIVE_MEMBER = {"isGreaterThan", "isLessThan", "compareTo"}
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_NO_SUCH_KEY = re.compile(r'Key not found in map : "?(.*?)"?$')
_TYPE_NAMES = {
    "BOOL": "bool",
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
    "NULL": "null_type",
    "LIST": "list",
    "MAP": "map",
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "TYPE": "type",
}


class CelRuntimeError(Exception):
    """A selector failed at evaluation; `message` reads as cel-go's (`no such key: memory`, ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """One device as CEL sees it: a pre-built activation (or the error that prevents building it)."""

    activation: Any
    error: str | None = None


def _split_name(name: str, driver: str) -> tuple[str, str]:
    """Upstream `parseQualifiedName`: a name without a domain belongs to the driver's domain."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


@functools.lru_cache(maxsize=4096)
def _version(text: str) -> str:
    """A version attribute's runtime value; a cluster's devices repeat a few versions thousands of times."""
    try:
        return semverlib.to_runtime(Semver.parse(text))
    except SemverError as exc:
        raise ValueError(f"parse semantic version: {exc}") from None


def _scalar(kind: str, value: Any) -> Any:
    if kind == "version":
        return _version(str(value))
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("unsupported attribute value")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError("unsupported attribute value")
        return value
    if not isinstance(value, str):
        raise ValueError("unsupported attribute value")
    return value


def attribute_value(raw: Any) -> Any:
    """The CEL value of one API attribute (`{"int": 1}`, `{"version": "1.2.3"}`, `{"strings": [...]}`): a
    dict as a slice model keeps them (resourceapi.api.resource_v1.AttributeMap), another mapping, or a
    `DeviceAttribute` model (its dump; list types are extra fields)."""
    if raw.__class__ is not dict:
        if hasattr(raw, "model_dump"):
            raw = raw.model_dump(by_alias=True, exclude_none=True)
        if not isinstance(raw, Mapping):
            raise ValueError("unsupported attribute value")
    return _map_value(raw)


def _map_value(raw: Mapping[str, Any]) -> Any:
    for kind in _SCALAR_KINDS:
        value = raw.get(kind)
        if value is not None:
            return _scalar(kind, value)
    for kind, elem in _LIST_KINDS.items():
        values = raw.get(kind)
        if values is not None and isinstance(values, list):
            return [_scalar(elem, v) for v in values]
    raise ValueError("unsupported attribute value")


def device_input(
    driver: str,
    attributes: Mapping[str, Any],
    capacity: Mapping[str, Any],
    allow_multiple_allocations: bool = False,
    qualified_wins: bool = False,
) -> DeviceInput:
    """Build the CEL view of a device once; reuse it for every selector (`Selector.matches`).

    Attributes are raw API dicts or `DeviceAttribute` models; capacities are `Quantity`s (or `DeviceCapacity`
    models, or quantity strings). A value that cannot be converted makes every evaluation fail with upstream's
    message (`attribute <name>: ...`), as in the scheduler. Of two spellings of one name (`model` and
    `<driver>/model`) the later one wins, or with `qualified_wins` (1.38, v0.38.0-beta.0 `api/conversion.go`)
    the qualified one, the other left unread.
    """
    attrs: dict[str, dict[str, Any]] = {}
    error: str | None = None
    for name, raw in attributes.items():
        if qualified_wins and "/" not in name and f"{driver}/{name}" in attributes:
            continue
        domain, ident = _split_name(name, driver)
        try:
            attrs.setdefault(domain, {})[ident] = attribute_value(raw)
        except ValueError as exc:
            error = error or f"attribute {name}: {exc}"
    caps: dict[str, dict[str, Any]] = {}
    for name, value in capacity.items():
        if qualified_wins and "/" not in name and f"{driver}/{name}" in capacity:
            continue
        domain, ident = _split_name(name, driver)
        if not isinstance(value, Quantity) and isinstance(getattr(value, "value", None), Quantity):
            value = value.value  # a DeviceCapacity
        try:
            q = value if isinstance(value, Quantity) else Quantity.parse(str(value))
        except QuantityError as exc:
            error = error or f"capacity {name}: {exc}"
            continue
        caps.setdefault(domain, {})[ident] = quantitylib.to_runtime(q)
    data = {
        "driver": driver,
        "attributes": attrs,
        "capacity": caps,
        "allowMultipleAllocations": bool(allow_multiple_allocations),
    }
    return DeviceInput(evaluation_env().Activation({"device": data}), error)


def runtime_message(raw: str) -> str:
    """cel-cpp's runtime error text in cel-go's words where they differ."""
    text = _STATUS_PREFIX.sub("", str(raw)).strip()
    m = _NO_SUCH_KEY.match(text)
    if m:
        return f"no such key: {m.group(1)}"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    if text == "divide by zero":
        return "division by zero"
    return text


class _Rewriter:
    """Rewrites a checked AST in place for evaluation (module docstring); fresh ids above the largest."""

    def __init__(self, checked: Any) -> None:
        self.checked = checked
        known: list[int] = [0, *checked.type_map.keys(), *checked.reference_map.keys(), *_ids(checked.expr)]
        self.next_id = max(known) + 1

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def run(self) -> None:
        """Plan on the checked shapes and types first (rewriting changes shapes), then rewrite bottom-up."""
        self.native = self._plan_native(self.checked.expr)
        self._rewrite(self.checked.expr)

    def _known_quantity(self, e: Any) -> bool:
        if shape_of(e) is Shape.CAPACITY_VALUE:
            return True
        t = self.checked.type_map.get(e.id)
        return t is not None and type_name(t) == QUANTITY_TYPE

    def _plan_native(self, root: Any) -> set[int]:
        """Ids of quantity comparisons whose operands are certainly Quantities at runtime."""
        planned: set[int] = set()
        stack = [root]
        while stack:
            e = stack.pop()
            stack.extend(children(e))
            if e.WhichOneof("expr_kind") != "call_expr":
                continue
            call = e.call_expr
            operands = ([call.target] if call.HasField("target") else []) + list(call.args)
            member = call.HasField("target") and len(operands) == 2
            comparison = (call.function in _NATIVE_MEMBER and member) or (
                call.function == "sign" and len(operands) == 1
            )
            if comparison and all(self._known_quantity(o) for o in operands):
                planned.add(e.id)
        return planned

    def _rewrite(self, e: Any) -> None:
        for child in children(e):
            self._rewrite(child)
        shape = shape_of(e)
        if shape in (Shape.ATTRIBUTE_DOMAIN, Shape.CAPACITY_DOMAIN):
            self._default_empty(e)
            return
        if e.WhichOneof("expr_kind") == "call_expr":
            if self._library_call(e):
                return
            if e.id in self.native:
                self._native_comparison(e)
            else:
                self._fold_literal(e)

    def _overloads(self, e: Any) -> list[str]:
        ref = self.checked.reference_map.get(e.id)
        return list(ref.overload_id) if ref is not None else []

    def _library_call(self, e: Any) -> bool:
        """Library calls the evaluation environment runs under other names (libraries.py): renamed calls,
        `validate`/`format.named` wrapped into optionals, `format.<name>()` folded to its value."""
        call = e.call_expr
        ids = self._overloads(e)
        if call.function == libraries.MAP_INSERT:
            call.function = libraries.RUNTIME_MAP_INSERT
            return True
        if ids and all(i.startswith("format.") for i in ids) and not call.args:
            new = Expr(id=self._id())
            new.const_expr.string_value = formatlib.constant(call.function.removeprefix("format."))
            e.CopyFrom(new)
            return True
        if ids == [libraries.FORMAT_VALIDATE] or ids == [libraries.FORMAT_NAMED]:
            runtime = (
                libraries.RUNTIME_FORMAT_VALIDATE
                if ids[0] == libraries.FORMAT_VALIDATE
                else libraries.RUNTIME_FORMAT_NAMED
            )
            args = ([call.target] if call.HasField("target") else []) + list(call.args)
            e.CopyFrom(self._call("optional.ofNonZeroValue", self._call(runtime, *args)))
            return True
        if (
            call.function in ("indexOf", "lastIndexOf")
            and len(ids) > 1
            and set(ids) & libraries.LIST_INDEX_OVERLOADS
        ):
            # A `dyn` receiver: the checker kept the string and the list overloads; decide at runtime.
            dyn = libraries.INDEX_OF_DYN if call.function == "indexOf" else libraries.LAST_INDEX_OF_DYN
            self.checked.reference_map.pop(e.id, None)
            e.CopyFrom(self._call(dyn, call.target, *call.args))
            return True
        names = {libraries.RENAMED.get(i) for i in ids}
        if ids and len(names) == 1 and None not in names:
            self.checked.reference_map.pop(e.id, None)
            args = ([call.target] if call.HasField("target") else []) + list(call.args)
            e.CopyFrom(self._call(names.pop() or "", *args))
            return True
        return False

    def _copy(self, e: Any) -> Any:
        """A deep copy with fresh ids; references and types follow the ids (identifiers need them)."""
        out = Expr()
        out.CopyFrom(e)
        stack = [out]
        while stack:
            node = stack.pop()
            old, node.id = node.id, self._id()
            if old in self.checked.reference_map:
                self.checked.reference_map[node.id].CopyFrom(self.checked.reference_map[old])
            if old in self.checked.type_map:
                self.checked.type_map[node.id].CopyFrom(self.checked.type_map[old])
            stack.extend(children(node))
        return out

    def _call(self, function: str, *args: Any) -> Any:
        new = Expr(id=self._id())
        new.call_expr.function = function
        for a in args:
            new.call_expr.args.add().CopyFrom(a)
        return new

    def _int(self, n: int) -> Any:
        new = Expr(id=self._id())
        new.const_expr.int64_value = n
        return new

    def _native_comparison(self, e: Any) -> None:
        """Quantity runtime strings order like their values: `a.isGreaterThan(b)` → `a > b`, `compareTo` and
        `sign` → `a > b ? 1 : (a < b ? -1 : 0)`; no Python call per evaluation."""
        call = e.call_expr
        if call.function == "sign":
            a = self._copy(call.args[0])
            b = Expr(id=self._id())
            b.const_expr.string_value = quantitylib.ZERO
        else:
            a, b = self._copy(call.target), self._copy(call.args[0])
        if call.function == "isGreaterThan":
            new = self._call("_>_", a, b)
        elif call.function == "isLessThan":
            new = self._call("_<_", a, b)
        else:
            less = self._call(
                "_?_:_", self._call("_<_", self._copy(a), self._copy(b)), self._int(-1), self._int(0)
            )
            new = self._call("_?_:_", self._call("_>_", a, b), self._int(1), less)
        e.CopyFrom(new)

    def _default_empty(self, e: Any) -> None:
        """`m[k]` / `m.k` on the outer maps → `m[?k].orValue({})`."""
        operand = Expr()
        key = Expr()
        if e.WhichOneof("expr_kind") == "select_expr":
            operand.CopyFrom(e.select_expr.operand)
            key.id = self._id()
            key.const_expr.string_value = e.select_expr.field
        else:
            operand.CopyFrom(e.call_expr.args[0])
            key.CopyFrom(e.call_expr.args[1])
        new = Expr(id=self._id())
        lookup = new.call_expr.target
        lookup.id = self._id()
        lookup.call_expr.function = "_[?_]"
        lookup.call_expr.args.add().CopyFrom(operand)
        lookup.call_expr.args.add().CopyFrom(key)
        new.call_expr.function = "orValue"
        empty = new.call_expr.args.add()
        empty.id = self._id()
        empty.struct_expr.SetInParent()
        e.CopyFrom(new)

    def _fold_literal(self, e: Any) -> None:
        call = e.call_expr
        if call.HasField("target") or not call.args:
            return
        consts = [a.const_expr for a in call.args if a.WhichOneof("expr_kind") == "const_expr"]
        if len(consts) != len(call.args) or consts[0].WhichOneof("constant_kind") != "string_value":
            return
        text = consts[0].string_value
        try:
            if call.function == "quantity" and len(consts) == 1:
                value = quantitylib.quantity(text)
            elif call.function == "semver" and len(consts) == 1:
                value = semverlib.semver(text)
            elif call.function == "semver" and consts[1].WhichOneof("constant_kind") == "bool_value":
                value = semverlib.semver(text, consts[1].bool_value)
            else:
                return
        except (QuantityError, SemverError):
            return  # left as a call: the error surfaces at evaluation, as upstream
        new = Expr(id=self._id())
        new.const_expr.string_value = value
        e.CopyFrom(new)


def _ids(e: Any) -> list[int]:
    out = [e.id]
    for child in children(e):
        out.extend(_ids(child))
    return out


class Selector:
    """A compiled selector, ready to run against any number of devices."""

    __slots__ = ("_checked", "_program", "expression")

    def __init__(self, expression: str, checked: Any) -> None:
        self.expression = expression
        self._checked = checked
        self._program: Any = None

    def ast_size(self) -> int:
        """Serialized size of the checked AST, in bytes (what the compile caches weigh entries by)."""
        return int(self._checked.ByteSize())

    def _prepare(self) -> Any:
        rewritten = type(self._checked)()
        rewritten.CopyFrom(self._checked)
        _Rewriter(rewritten).run()
        self._program = evaluation_env().deserialize(serialize_checked(rewritten))
        return self._program

    def matches(self, device: DeviceInput) -> bool:
        """True/false, or CelRuntimeError for a runtime error or a non-bool result (upstream's messages)."""
        if device.error is not None:
            raise CelRuntimeError(device.error)
        program = self._program or self._prepare()
        try:
            result = program.eval(device.activation)
        except RuntimeError as exc:
            raise CelRuntimeError(_budget_message(str(exc))) from None
        value = result.value()
        if value is True or value is False:
            return bool(value)
        kind = result.type()
        if kind == cel.Type.ERROR:
            raise CelRuntimeError(runtime_message(str(value)))
        raise CelRuntimeError(
            f"CEL result of type {_result_type_name(kind, value)} could not be converted to bool"
        )


_TAGGED_TYPES = (
    (urls.is_value, "kubernetes.URL"),
    (netlib.is_ip_value, "net.IP"),
    (netlib.is_cidr_value, "net.CIDR"),
    (formatlib.is_value, "kubernetes.NamedFormat"),
)


def _budget_message(text: str) -> str:
    if "budget" in text.lower() or "iteration" in text.lower():
        return "operation cancelled: actual cost limit exceeded"
    return runtime_message(text)


def _result_type_name(kind: Any, value: Any) -> str:
    if quantitylib.is_runtime(value):
        return "kubernetes.Quantity"
    if semverlib.is_runtime(value):
        return "kubernetes.Semver"
    for is_value, name in _TAGGED_TYPES:
        if is_value(value):
            return name
    name = str(kind.name())
    base = name.split("<", 1)[0]
    return _TYPE_NAMES.get(base, name)


__all__ = [
    "CelRuntimeError",
    "DeviceInput",
    "Selector",
    "attribute_value",
    "device_input",
    "runtime_message",
]
