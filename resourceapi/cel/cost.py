"""A static worst-case cost estimate of a checked DRA selector, after cel-go's `checker.Cost`.

Follows upstream's size assumptions for `device` (domain and identifier maps ≤ 32 entries, strings ≤ 64,
lists ≤ 64, driver ≤ 63, `includes` linear up to 48) and cel-go's cost factors (string traversal 0.1, regex
0.25, list/map/struct creation 10/30/40). Exact parity with cel-go is not possible without cel-go; where this
estimate is unsure it assumes the larger size, so it errs on the side of a higher cost (docs/divergences.md).
"""

from __future__ import annotations

import math
from typing import Any

from resourceapi.api.limits import DEVICE_MAX_ID_LENGTH, DRIVER_NAME_MAX_LENGTH
from resourceapi.cel.checked import type_name
from resourceapi.cel.shape import Shape, children, selected_operand, shape_of

MAX_MAP_ENTRIES = 32
MAX_STRING = 64
MAX_LIST = 64
UNBOUNDED = 2**40  # a size cel-go cannot bound: any cost proportional to it exceeds the limit
MAX_DRIVER = DRIVER_NAME_MAX_LENGTH
MAX_DOMAIN = DRIVER_NAME_MAX_LENGTH  # a qualified name's domain is validated as a driver name
MAX_ID = DEVICE_MAX_ID_LENGTH
INCLUDES_MAX = 48
_STRING_TRAVERSAL = 0.1
_REGEX_LENGTH = 0.25
_LIST_CREATE, _MAP_CREATE, _STRUCT_CREATE = 10, 30, 40

_STRING_SCANS = {
    "contains",
    "startsWith",
    "endsWith",
    "lowerAscii",
    "upperAscii",
    "trim",
    "indexOf",
    "lastIndexOf",
}
# Calls whose string result cel-go cannot size: anything priced per character of it is unbounded
# (calibrated against kube-apiserver v1.37.2 by tests/differential).
_UNSIZED_RESULTS = {"charAt", "format", "getHost", "getScheme", "getEscapedPath", "getPort", "getHostname"}
# The URL accessors, sized by their URL on releases whose cost model propagates it (`Release.cel_url_sizes`;
# apiserver v0.38 library/cost.go: the target's size, getEscapedPath up to 3x for percent-encoding).
_URL_ACCESSORS = {"getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery"}
_STRING_RESULTS = {"lowerAscii", "upperAscii", "trim", "replace", "substring", "reverse", "charAt", "quote"}
_LIST_SCANS = {"isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"}
_NOMINAL = {
    "masked",
    "prefixLength",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "sign",
    "asInteger",
    "isInteger",
    "asApproximateFloat",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
}
_LIST_EXT = {"slice", "flatten", "reverse", "distinct", "sort", "@sortByAssociatedKeys"}
_SETS = {"sets.contains", "sets.equivalent", "sets.intersects"}
# Every function `_library_call` prices (the others take cel-go's default).
_PRICED = (
    _LIST_SCANS
    | _NOMINAL
    | _LIST_EXT
    | _SETS
    | {"url", "find", "findAll", "ip", "isIP", "cidr", "isCIDR", "containsIP", "containsCIDR", "lists.range"}
    | {"isSemver", "isQuantity", "semver", "quantity"}
)
# Global calls priced by the traversal of their string argument (apiserver library/cost.go)
_PARSERS = {"ip", "isIP", "cidr", "isCIDR", "isSemver", "isQuantity", "semver", "quantity"}
_SCALARS = {"bool", "int", "uint", "double", "google.protobuf.Duration", "google.protobuf.Timestamp"}
_ZERO_COST = {"_&&_", "_||_", "_?_:_"}


_ENTRY = "#entry"  # a scope key: the entry size of the list or map a variable holds


def _appended(step: Any) -> Any | None:
    """The element map() or filter() appends in its step (`@result + [x]`, maybe under a conditional)."""
    if step.WhichOneof("expr_kind") != "call_expr":
        return None
    call = step.call_expr
    if call.function == "_?_:_" and len(call.args) == 3:
        return _appended(call.args[1])
    if call.function == "_+_" and len(call.args) == 2:
        tail = call.args[1]
        if tail.WhichOneof("expr_kind") == "list_expr" and len(tail.list_expr.elements) == 1:
            return tail.list_expr.elements[0]
    return None


def _under_domain_field(e: Any) -> bool:
    """`device.attributes.x` or `device.capacity.x` (a domain selected as a field, not by index), or a part
    of it: cel-go's size estimator finds no such field in its map types and gives them no size."""
    while True:
        shape = shape_of(e)
        if shape in (Shape.ATTRIBUTE_DOMAIN, Shape.CAPACITY_DOMAIN):
            return bool(e.WhichOneof("expr_kind") == "select_expr")
        if shape not in (Shape.ATTRIBUTE_VALUE, Shape.CAPACITY_VALUE):
            return False
        operand = selected_operand(e)
        if operand is None:
            return False
        e = operand


def _is_bind(c: Any) -> bool:
    """cel-go's `isBind`: an empty range, a constant false condition, an accumulator of its own name."""
    rng, cond = c.iter_range, c.loop_condition
    return (
        rng.WhichOneof("expr_kind") == "list_expr"
        and not rng.list_expr.elements
        and cond.WhichOneof("expr_kind") == "const_expr"
        and cond.const_expr.WhichOneof("constant_kind") == "bool_value"
        and not cond.const_expr.bool_value
        and c.accu_var != "@result"
    )


def _string_const(e: Any) -> str | None:
    if (
        e.WhichOneof("expr_kind") == "const_expr"
        and e.const_expr.WhichOneof("constant_kind") == "string_value"
    ):
        return str(e.const_expr.string_value)
    return None


def _int_const(e: Any) -> int | None:
    if (
        e.WhichOneof("expr_kind") == "const_expr"
        and e.const_expr.WhichOneof("constant_kind") == "int64_value"
    ):
        return int(e.const_expr.int64_value)
    return None


def _factor(size: int, factor: float) -> int:
    return math.ceil(size * factor)


class _Estimator:
    """Walks one checked AST; `scope` maps local variables to the size bound of their values."""

    def __init__(self, checked: Any, url_sizes: bool = False) -> None:
        self.checked = checked
        self.url_sizes = url_sizes

    def _type(self, e: Any) -> str:
        t = self.checked.type_map.get(e.id)
        return type_name(t) if t is not None else "dyn"

    def size(self, e: Any, scope: dict[str, int]) -> int:
        """Upper bound of the size of a string, bytes, list or map value."""
        kind = e.WhichOneof("expr_kind")
        if kind == "const_expr":
            c = e.const_expr
            if c.WhichOneof("constant_kind") == "string_value":
                return len(c.string_value)
            if c.WhichOneof("constant_kind") == "bytes_value":
                return len(c.bytes_value)
            return 1
        if self._type(e) in _SCALARS:  # cel-go `computeTypeSize`: a scalar's size is 1
            return 1
        if kind == "ident_expr":
            return scope.get(e.ident_expr.name, MAX_LIST)
        if kind == "list_expr":
            return len(e.list_expr.elements)
        if kind == "struct_expr":
            return len(e.struct_expr.entries)
        shape = shape_of(e)
        if _under_domain_field(e):
            return UNBOUNDED  # cel-go's size estimator knows no field of the outer maps (calibrated)
        if shape in (Shape.ATTRIBUTES, Shape.CAPACITY, Shape.ATTRIBUTE_DOMAIN, Shape.CAPACITY_DOMAIN):
            return MAX_MAP_ENTRIES
        if shape is Shape.DRIVER:
            return MAX_DRIVER
        if shape is Shape.ATTRIBUTE_VALUE:
            return max(MAX_STRING, MAX_LIST)
        if shape is Shape.OTHER:
            operand = selected_operand(e)
            if operand is not None:
                if kind == "call_expr":  # an index: cel-go sizes a built list's or map's entries only
                    entry = self._indexed_size(operand, scope)
                    return UNBOUNDED if entry is None else entry
                if self.size(operand, scope) >= UNBOUNDED:  # a field of an unsized value
                    return UNBOUNDED
        if kind == "comprehension_expr":
            c = e.comprehension_expr
            if _is_bind(c):  # cel.bind and sortBy's input: the result's size (cel-go `costBind`)
                return self.size(c.result, self._bound(c, scope))
            if c.accu_init.WhichOneof("expr_kind") == "list_expr":  # map() and filter() build lists
                return self.size(c.iter_range, scope)
            return 1
        if kind == "call_expr":
            call = e.call_expr
            fn = call.function
            if fn == "_+_":
                return sum(self.size(a, scope) for a in call.args)
            if self.url_sizes and fn in _URL_ACCESSORS and call.HasField("target"):
                return self.size(call.target, scope) * (3 if fn == "getEscapedPath" else 1)
            if self.url_sizes and fn == "url" and len(call.args) == 1:
                return self.size(call.args[0], scope)  # library/cost.go: url()'s result is its input's size
            if fn in _UNSIZED_RESULTS:
                return UNBOUNDED  # cel-go gives these results no size estimate (calibrated)
            if fn == "strings.quote" and call.args:
                return 2 * self.size(call.args[0], scope) + 2  # every character escaped, and the quotes
            if fn == "replace" and call.HasField("target") and len(call.args) >= 2:
                return self._replaced_size(call, scope)
            if fn in _STRING_RESULTS and call.HasField("target"):
                return self.size(call.target, scope)
            if fn in ("split", "find", "findAll") and call.HasField("target"):
                return self.size(call.target, scope)
            if fn == "lists.range" and call.args and call.args[0].WhichOneof("expr_kind") == "const_expr":
                return max(0, int(call.args[0].const_expr.int64_value))
            if fn in _LIST_EXT and call.HasField("target"):
                return self._list_ext_size(call, scope)
            if fn == "_?_:_" and len(call.args) == 3:
                return max(self.size(call.args[1], scope), self.size(call.args[2], scope))
        return max(MAX_STRING, MAX_LIST)

    def element_size(self, rng: Any, scope: dict[str, int]) -> int:
        """Size bound of one element (or key) when iterating over `rng`, as cel-go sizes an iteration
        variable: by the device's declared limits, 1 for a scalar, the entries of a list or map it built (a
        literal, map(), filter(), a binding), and otherwise unknown (a `split()` result's strings)."""
        if _under_domain_field(rng):
            return UNBOUNDED
        shape = shape_of(rng)
        if shape in (Shape.ATTRIBUTES, Shape.CAPACITY):
            return MAX_DOMAIN
        if shape in (Shape.ATTRIBUTE_DOMAIN, Shape.CAPACITY_DOMAIN):
            return MAX_ID
        t = self.checked.type_map.get(rng.id)
        if t is not None:
            kind = t.WhichOneof("type_kind")
            elem = (
                t.list_type.elem_type
                if kind == "list_type"
                else t.map_type.key_type
                if kind == "map_type"
                else None
            )
            if elem is not None and type_name(elem) in _SCALARS:
                return 1
        entry = self.entry_size(rng, scope)
        return UNBOUNDED if entry is None else entry

    def entry_size(self, e: Any, scope: dict[str, int]) -> int | None:
        """cel-go's entry size of a list (its elements) or map (its keys) built in the expression; None when
        it keeps none."""
        kind = e.WhichOneof("expr_kind")
        if kind == "list_expr":
            return max((self.size(x, scope) for x in e.list_expr.elements), default=0)
        if kind == "struct_expr" and not e.struct_expr.message_name:
            keys = [x.map_key for x in e.struct_expr.entries if x.WhichOneof("key_kind") == "map_key"]
            return max((self.size(k, scope) for k in keys), default=0)
        if kind == "ident_expr":
            return scope.get(e.ident_expr.name + _ENTRY)
        if kind == "comprehension_expr":
            c = e.comprehension_expr
            if _is_bind(c):
                return self.entry_size(c.result, self._bound(c, scope))
            if c.accu_init.WhichOneof("expr_kind") != "list_expr":
                return None
            appended = _appended(c.loop_step)
            if appended is None:
                return None
            return self.size(appended, self._loop_scope(c, scope))
        if kind == "call_expr":
            call = e.call_expr
            if call.function in ("_?_:_", "_+_") and len(call.args) >= 2:
                sizes = [self.entry_size(a, scope) for a in call.args[-2:]]
                return None if None in sizes else max(s for s in sizes if s is not None)
        return None

    def _indexed_size(self, container: Any, scope: dict[str, int]) -> int | None:
        """Size bound of `container[i]` where cel-go knows the entries (a list or map literal, a list that
        map() or filter() built, a variable bound to one), None where it does not."""
        kind = container.WhichOneof("expr_kind")
        if kind == "struct_expr" and not container.struct_expr.message_name:
            return max((self.size(x.value, scope) for x in container.struct_expr.entries), default=0)
        if kind in ("list_expr", "comprehension_expr") or (
            kind == "ident_expr" and self._type(container).startswith("list(")
        ):
            return self.entry_size(container, scope)
        return None

    def _bound(self, c: Any, scope: dict[str, int]) -> dict[str, int]:
        """The scope of a binding's result: its variable's size and entry size."""
        inner = {**scope, c.accu_var: self.size(c.accu_init, scope)}
        entry = self.entry_size(c.accu_init, scope)
        if entry is not None:
            inner[c.accu_var + _ENTRY] = entry
        else:
            inner.pop(c.accu_var + _ENTRY, None)
        return inner

    def _loop_scope(self, c: Any, scope: dict[str, int]) -> dict[str, int]:
        """The scope of a comprehension's condition and step: its iteration variables' sizes."""
        inner = dict(scope)
        for name in (c.iter_var, c.iter_var2, c.accu_var):
            inner.pop(name + _ENTRY, None)
        inner[c.iter_var] = self.element_size(c.iter_range, scope)
        if c.iter_var2:
            inner[c.iter_var2] = self.value_size(c.iter_range, scope)
            if shape_of(c.iter_range) in (Shape.ATTRIBUTE_DOMAIN, Shape.CAPACITY_DOMAIN):
                # cel-go appends the key's and the value's path element to one Go slice with room for one
                # more (`device.attributes[d]` has 3 of 4): the key's path ends in `@values` too
                inner[c.iter_var] = inner[c.iter_var2]
        return inner

    def value_size(self, rng: Any, scope: dict[str, int]) -> int:
        """Size bound of a map's value (a two-variable comprehension's second variable) in `rng`."""
        shape = shape_of(rng)
        if shape in (Shape.ATTRIBUTES, Shape.CAPACITY):
            return MAX_MAP_ENTRIES
        if shape is Shape.ATTRIBUTE_DOMAIN:
            return max(MAX_STRING, MAX_LIST)
        if shape is Shape.CAPACITY_DOMAIN:
            return 0  # a quantity's declared type has no size (cel-go estimates 0)
        if rng.WhichOneof("expr_kind") == "list_expr" and rng.list_expr.elements:
            return max(self.size(x, scope) for x in rng.list_expr.elements)
        return MAX_LIST

    def cost(self, e: Any, scope: dict[str, int]) -> int:
        kind = e.WhichOneof("expr_kind")
        if kind == "const_expr":
            return 0
        if kind == "ident_expr":
            return 1
        if kind == "select_expr":
            return self.cost(e.select_expr.operand, scope) + (0 if e.select_expr.test_only else 1)
        if kind == "list_expr":
            return _LIST_CREATE + sum(self.cost(x, scope) for x in e.list_expr.elements)
        if kind == "struct_expr":
            base = _STRUCT_CREATE if e.struct_expr.message_name else _MAP_CREATE
            return base + sum(self.cost(x, scope) for x in children(e))
        if kind == "comprehension_expr":
            return self._comprehension(e.comprehension_expr, scope)
        if kind == "call_expr":
            return self._call(e, scope)
        return 1

    def _comprehension(self, c: Any, scope: dict[str, int]) -> int:
        range_cost = self.cost(c.iter_range, scope)
        iterations = self.size(c.iter_range, scope)
        inner = self._loop_scope(c, scope)
        init_cost = self.cost(c.accu_init, scope)
        if _is_bind(c):
            inner = self._bound(c, inner)
        else:
            inner[c.accu_var] = self.size(c.accu_init, scope) if iterations == 0 else MAX_LIST
        body = self.cost(c.loop_condition, inner) + self.cost(c.loop_step, inner)
        return range_cost + init_cost + iterations * body + self.cost(c.result, inner)

    def _call(self, e: Any, scope: dict[str, int]) -> int:
        call = e.call_expr
        fn = call.function
        target = [call.target] if call.HasField("target") else []
        args = target + list(call.args)
        if fn == "_?_:_" and len(args) == 3:
            return self.cost(args[0], scope) + max(self.cost(args[1], scope), self.cost(args[2], scope))
        arg_cost = sum(self.cost(a, scope) for a in args)
        if fn in _ZERO_COST:
            return arg_cost
        library = self._library_call(e, scope)
        if library is not None:
            return arg_cost + library
        if fn == "matches" and len(args) == 2:
            # cel-go: (length + 1) x 0.1 times the pattern's length x 0.25 (an empty pattern costs nothing)
            text = _factor(self.size(args[0], scope) + 1, _STRING_TRAVERSAL)
            regex = _factor(self.size(args[1], scope), _REGEX_LENGTH)
            return arg_cost + text * regex
        if fn == "validate" and call.HasField("target") and call.args:
            # a named format's check: 32 per started 10 characters (calibrated against kube-apiserver v1.37.2)
            return arg_cost + 32 * _factor(self.size(call.args[0], scope), _STRING_TRAVERSAL)
        if fn in ("substring", "strings.quote") and args:
            return arg_cost + _factor(self.size(args[0], scope), _STRING_TRAVERSAL)  # calibrated
        if fn == "contains" and len(args) == 2:
            # cel-go: the string's traversal times the substring's
            text = _factor(self.size(args[0], scope), _STRING_TRAVERSAL)
            return arg_cost + text * _factor(self.size(args[1], scope), _STRING_TRAVERSAL)
        if fn in _STRING_SCANS and args:
            # cel-go: a traversal of the prefix or suffix (startsWith, endsWith), else of the string; no base
            # cost (calibrated against kube-apiserver v1.37.2: tests/differential)
            scanned = args[1] if fn in ("startsWith", "endsWith") and len(args) == 2 else args[0]
            return arg_cost + _factor(self.size(scanned, scope), _STRING_TRAVERSAL)
        if fn in ("_==_", "_!=_") and len(args) == 2 and any(self._parsed_unsized(a) for a in args):
            return UNBOUNDED  # an IP or CIDR parsed from a value of unknown size (calibrated)
        if fn in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_") and len(args) == 2:
            types = {self._type(a) for a in args}
            attribute = any(shape_of(a) is Shape.ATTRIBUTE_VALUE for a in args)
            if types & {"string", "bytes"} or attribute:
                smaller = min(self.size(args[0], scope), self.size(args[1], scope))
                return arg_cost + _factor(smaller, _STRING_TRAVERSAL)
            return arg_cost + 1
        if fn == "_+_" and len(args) == 2:
            if {self._type(a) for a in args} & {"string", "bytes"}:
                return arg_cost + _factor(self.size(e, scope), _STRING_TRAVERSAL)
            return arg_cost + 1
        if fn == "@in" and len(args) == 2:
            if self._overloads(e) and "in_list" not in self._overloads(e):
                return arg_cost + 1  # a map's lookup is O(1) to cel-go: only `in_list` is priced by size
            return arg_cost + self.size(args[1], scope)  # cel-go: one per element, no base
        if fn == "includes":
            return arg_cost + 1 + INCLUDES_MAX
        if fn == "format":
            return arg_cost + 1  # calibrated against kube-apiserver v1.37.2 (tests/differential)
        if fn == "join":
            return UNBOUNDED  # a list's string elements are unbounded to cel-go (see _library_call)
        if fn in ("split", "replace") and call.HasField("target"):
            # apiserver library/cost.go: the input's traversal and the result's construction (0.1 each)
            return arg_cost + _factor(self.size(call.target, scope), 2 * _STRING_TRAVERSAL)
        return arg_cost + 1

    def _replaced_size(self, call: Any, scope: dict[str, int]) -> int:
        """apiserver library/cost.go's longest result of `s.replace(old, new)`; only a constant `old` has a
        known shortest length."""
        size = self.size(call.target, scope)
        old, new = call.args[0], call.args[1]
        shortest_old = self.size(old, scope) if _string_const(old) is not None else 0
        longest_new = self.size(new, scope)
        if shortest_old == 0:  # the replacement surrounds every character
            return (size + 1) * longest_new + size
        if longest_new <= shortest_old:
            return size
        return math.ceil(size / shortest_old) * longest_new

    def _list_ext_size(self, call: Any, scope: dict[str, int]) -> int:
        """The size cel-go's list extensions give their result (ext/lists.go): sort, sortBy and distinct
        the square of the input's (cel-go's own), slice its constant bounds' span, the others the input's."""
        fn = call.function
        if fn == "@sortByAssociatedKeys" and call.args:
            size = self.size(call.args[0], scope)
            return size * size
        size = self.size(call.target, scope)
        if fn in ("sort", "distinct"):
            return size * size
        if fn == "slice" and len(call.args) == 2:
            start, end = _int_const(call.args[0]), _int_const(call.args[1])
            return max(0, (size if end is None else end) - (start or 0))
        return size

    def _parsed_unsized(self, e: Any) -> bool:
        """`ip(x)` or `cidr(x)` with `x` a device attribute (upstream's `any`): a value cel-go cannot size."""
        if e.WhichOneof("expr_kind") != "call_expr":
            return False
        call = e.call_expr
        return (
            call.function in ("ip", "cidr")
            and not call.HasField("target")
            and len(call.args) == 1
            and shape_of(call.args[0]) is Shape.ATTRIBUTE_VALUE
        )

    def _overloads(self, e: Any) -> list[str]:
        ref = self.checked.reference_map.get(e.id)
        return list(ref.overload_id) if ref is not None else []

    def _list_element_string(self, e: Any, scope: dict[str, int]) -> int | None:
        """Size bound of the elements of a list of strings or bytes, None for other lists."""
        t = self._type(e)
        if t in ("list(string)", "list(bytes)"):
            if e.WhichOneof("expr_kind") == "list_expr" and e.list_expr.elements:
                return max(self.size(x, scope) for x in e.list_expr.elements)
            return MAX_STRING
        return None

    def _library_call(self, e: Any, scope: dict[str, int]) -> int | None:
        """The Kubernetes libraries' `EstimateCallCost` (apiserver `pkg/cel/library/cost.go`), including its
        quirks (`cidr`, `isIP`, `isCIDR`, global `ip` and `ip.isCanonical` check for a receiver they never
        have and so take cel-go's default cost of 1); None for functions it does not price."""
        call = e.call_expr
        fn = call.function
        if fn not in _PRICED:
            return None
        member = call.HasField("target")
        ids = self._overloads(e)
        if fn in _LIST_SCANS and member:
            size = self.size(call.target, scope)
            if self._type(call.target) == "string" or (ids and all(i.startswith("string_") for i in ids)):
                return _factor(size, _STRING_TRAVERSAL)
            if self._list_element_string(call.target, scope) is not None:
                # cel-go keeps no size for a list's elements: a string element is unbounded, so is the
                # cost (`["a", "b"].isSorted()` is too complex for kube-apiserver v1.37.2)
                return UNBOUNDED
            return size
        if fn == "url" and not member and len(call.args) == 1:
            return _factor(self.size(call.args[0], scope), _STRING_TRAVERSAL)
        if fn in ("find", "findAll") and member and call.args:
            text = _factor(self.size(call.target, scope) + 1, _STRING_TRAVERSAL)
            return text * _factor(self.size(call.args[0], scope), _REGEX_LENGTH)
        if fn in _NOMINAL or (fn == "ip" and member):
            return 1
        if fn in _PARSERS and not member and call.args:
            # parsing its argument: calibrated against kube-apiserver v1.37.2 (tests/differential)
            return _factor(self.size(call.args[0], scope), _STRING_TRAVERSAL)
        if fn in ("containsIP", "containsCIDR") and member and call.args:
            cost = _factor(16 + 16, _STRING_TRAVERSAL)
            if fn == "containsCIDR":
                cost += _factor(16, _STRING_TRAVERSAL) + 1
            if any(i.endswith("_string") for i in ids):
                cost += _factor(self.size(call.args[0], scope), _STRING_TRAVERSAL)
            return cost
        if fn in _SETS and len(call.args) == 2:
            # cel-go ext/sets.go `estimateSetsCost(1)`: one comparison per pair of elements.
            pairs = self.size(call.args[0], scope) * self.size(call.args[1], scope)
            return (2 * pairs if fn == "sets.equivalent" else pairs) + 1  # calibrated
        if fn in _LIST_EXT and member:
            # plus the new list's creation and the call (calibrated against kube-apiserver v1.37.2)
            # cel-go ext/lists.go: sort and distinct compare pairs (2n², 2.1n² for strings or bytes); sortBy
            # sizes its keys
            keyed = call.args[0] if fn == "@sortByAssociatedKeys" and call.args else call.target
            size = self.size(keyed, scope)
            if fn in ("sort", "@sortByAssociatedKeys", "distinct"):
                strings = fn != "distinct" and self._list_element_string(keyed, scope) is not None
                return _factor(size * size, 2.1 if strings else 2.0) + _LIST_CREATE + 1
            return self._list_ext_size(call, scope) + _LIST_CREATE + 1
        if fn == "lists.range" and call.args:
            arg = call.args[0]
            if arg.WhichOneof("expr_kind") == "const_expr":
                return max(0, int(arg.const_expr.int64_value)) + _LIST_CREATE + 1
            return MAX_LIST + _LIST_CREATE + 1
        return None


def estimate_cost(checked: Any, url_sizes: bool = False) -> int:
    """Worst-case cost of a checked selector, to compare with COST_LIMIT; `url_sizes` is the release's cost
    model for the URL accessors (`Release.cel_url_sizes`)."""
    return _Estimator(checked, url_sizes).cost(checked.expr, {})
