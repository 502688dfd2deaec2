"""A static worst-case cost estimate of a checked DRA selector, after cel-go's `checker.Cost`.

Follows upstream's size assumptions for `device` (domain and identifier maps ≤ 32 entries, strings ≤ 64,
lists ≤ 64, driver ≤ 63, `includes` linear up to 48) and cel-go's cost factors (string traversal 0.1, regex
0.25, list/map/struct creation 10/30/40). Exact parity with cel-go is not possible without cel-go; where this
estimate is unsure it assumes the larger size, so it errs on the side of a higher cost (docs/divergences.md).
"""

from __future__ import annotations

import math
from typing import Any

from resourceapi.cel.checked import type_name
from resourceapi.cel.shape import Shape, children, shape_of
from resourceapi.names import DEVICE_MAX_ID_LENGTH, DRIVER_NAME_MAX_LENGTH

COST_LIMIT = 1_000_000  # resource.k8s.io CELSelectorExpressionMaxCost
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
    | {"isSemver", "isQuantity"}
)
_ZERO_COST = {"_&&_", "_||_", "_?_:_"}


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

    def __init__(self, checked: Any) -> None:
        self.checked = checked

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
        if kind == "ident_expr":
            return scope.get(e.ident_expr.name, MAX_LIST)
        if kind == "list_expr":
            return len(e.list_expr.elements)
        if kind == "struct_expr":
            return len(e.struct_expr.entries)
        shape = shape_of(e)
        if shape in (Shape.ATTRIBUTES, Shape.CAPACITY, Shape.ATTRIBUTE_DOMAIN, Shape.CAPACITY_DOMAIN):
            return MAX_MAP_ENTRIES
        if shape is Shape.DRIVER:
            return MAX_DRIVER
        if shape is Shape.ATTRIBUTE_VALUE:
            return max(MAX_STRING, MAX_LIST)
        if kind == "comprehension_expr":
            c = e.comprehension_expr
            if c.accu_init.WhichOneof("expr_kind") == "list_expr":  # map() and filter() build lists
                return self.size(c.iter_range, scope)
            return 1
        if kind == "call_expr":
            call = e.call_expr
            fn = call.function
            if fn == "_+_":
                return sum(self.size(a, scope) for a in call.args)
            if fn in _UNSIZED_RESULTS:
                return UNBOUNDED  # cel-go gives these results no size estimate (calibrated)
            if fn == "strings.quote" and call.args:
                return 2 * self.size(call.args[0], scope) + 2  # every character escaped, and the quotes
            if fn in _STRING_RESULTS and call.HasField("target"):
                return self.size(call.target, scope)
            if fn == "split" and call.HasField("target"):
                return self.size(call.target, scope)
            if fn == "lists.range" and call.args and call.args[0].WhichOneof("expr_kind") == "const_expr":
                return max(0, int(call.args[0].const_expr.int64_value))
            if fn == "_?_:_" and len(call.args) == 3:
                return max(self.size(call.args[1], scope), self.size(call.args[2], scope))
        return max(MAX_STRING, MAX_LIST)

    def element_size(self, rng: Any, scope: dict[str, int]) -> int:
        """Size bound of one element (or key) when iterating over `rng`."""
        shape = shape_of(rng)
        if shape in (Shape.ATTRIBUTES, Shape.CAPACITY):
            return MAX_DOMAIN
        if shape in (Shape.ATTRIBUTE_DOMAIN, Shape.CAPACITY_DOMAIN):
            return MAX_ID
        if rng.WhichOneof("expr_kind") == "list_expr" and rng.list_expr.elements:
            return max(self.size(x, scope) for x in rng.list_expr.elements)
        return MAX_STRING

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
        inner = dict(scope)
        elem = self.element_size(c.iter_range, scope)
        inner[c.iter_var] = elem
        if c.iter_var2:
            inner[c.iter_var2] = MAX_LIST
        init_cost = self.cost(c.accu_init, scope)
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
            text = _factor(self.size(args[0], scope), _STRING_TRAVERSAL)
            regex = _factor(self.size(args[1], scope), _REGEX_LENGTH)
            return arg_cost + max(1, text) * max(1, regex)
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
            return arg_cost + 1 + self.size(args[1], scope)
        if fn == "includes":
            return arg_cost + 1 + INCLUDES_MAX
        if fn == "format":
            return arg_cost + 1  # calibrated against kube-apiserver v1.37.2 (tests/differential)
        if fn == "join":
            return UNBOUNDED  # a list's string elements are unbounded to cel-go (see _library_call)
        if fn in ("split", "replace"):
            # calibrated: the input's traversal and the result's (0.1 each)
            return arg_cost + _factor(sum(self.size(a, scope) for a in args), 2 * _STRING_TRAVERSAL)
        if fn == "join":
            return arg_cost + 1 + _factor(sum(self.size(a, scope) for a in args), _STRING_TRAVERSAL)
        return arg_cost + 1

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
        if fn in ("ip", "isIP", "cidr", "isCIDR", "isSemver", "isQuantity") and not member and call.args:
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
            size = self.size(call.target, scope)
            if fn in ("sort", "@sortByAssociatedKeys", "distinct"):
                return 2 * size * size + _LIST_CREATE + 1  # pairwise (calibrated: 2n² + 11)
            if fn == "slice" and len(call.args) == 2 and all(_int_const(a) is not None for a in call.args):
                start, end = (_int_const(a) or 0 for a in call.args)
                return max(0, end - start) + _LIST_CREATE + 1
            return size + _LIST_CREATE + 1
        if fn == "lists.range" and call.args:
            arg = call.args[0]
            if arg.WhichOneof("expr_kind") == "const_expr":
                return max(0, int(arg.const_expr.int64_value)) + _LIST_CREATE + 1
            return MAX_LIST + _LIST_CREATE + 1
        return None


def estimate_cost(checked: Any) -> int:
    """Worst-case cost of a checked selector, to compare with COST_LIMIT."""
    return _Estimator(checked).cost(checked.expr, {})
