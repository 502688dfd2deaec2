"""The DRA CEL environments on cel-expr-python: a checking environment per gate set, one for evaluation.

Checking environments declare `device` as the `kubernetes.DRADevice` message (with `allowMultipleAllocations`
only when DRAConsumableCapacity is on or for stored expressions) and `includes` only with
DRAListTypeAttributes, on a release whose new expressions have the Lists v1 library (1.38:
resourceapi/releases.py), or for stored expressions
(`staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go`). Evaluation uses one environment
that declares `device` as `dyn` and reads plain dicts; checked expressions move into it with
`Env.deserialize`. There Quantity and Semver values are tagged strings (quantitylib.py), so its declarations
use `string` where the checking environments use the message types.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from resourceapi.cel import libraries, quantitylib, semverlib
from resourceapi.cel.messages import DEVICE_TYPE, POOL_V134, QUANTITY_TYPE, SEMVER_TYPE, pool_for
from resourceapi.gates import DRA_CONSUMABLE_CAPACITY, DRA_LIST_TYPE_ATTRIBUTES, FeatureGates
from resourceapi.releases import release

INCLUDES_MAX_LIST = 48


class NoSuchOverload(TypeError):
    """Runtime dispatch found no implementation for the argument types (cel-go `no such overload`)."""

    def __init__(self, function: str) -> None:
        super().__init__(f"no such overload: {function}")


@dataclass(frozen=True)
class EnvKey:
    """What distinguishes one checking environment from another."""

    allow_multiple_allocations: bool
    includes: bool

    @staticmethod
    def for_gates(gates: FeatureGates, stored: bool = False) -> EnvKey:
        """NewExpressions honour the gates and the release; StoredExpressions get everything.

        As `staging/src/k8s.io/apiserver/pkg/cel/environment/base.go` builds the two environment types: a
        release whose new expressions compile with Lists v1 (`Release.cel_lists_always`) declares `includes`
        whatever DRAListTypeAttributes says. The key holds the outcome, so compile caches are keyed by it.
        """
        if stored:
            return EnvKey(True, True)
        includes = gates.enabled(DRA_LIST_TYPE_ATTRIBUTES) or release(gates.release).cel_lists_always
        return EnvKey(gates.enabled(DRA_CONSUMABLE_CAPACITY), includes)


_is_q = quantitylib.is_runtime
_is_s = semverlib.is_runtime


def _comparison(
    name: str, qfn: Callable[[Any, Any], Any], sfn: Callable[[Any, Any], Any]
) -> Callable[..., Any]:
    """One implementation per function name (cel-expr-python's rule), dispatching on the message types."""

    def impl(a: Any, b: Any) -> Any:
        if _is_q(a) and _is_q(b):
            return qfn(a, b)
        if _is_s(a) and _is_s(b):
            return sfn(a, b)
        raise NoSuchOverload(name)

    return impl


def _unary(name: str, check: Callable[[Any], bool], fn: Callable[[Any], Any]) -> Callable[..., Any]:
    def impl(a: Any) -> Any:
        if not check(a):
            raise NoSuchOverload(name)
        return fn(a)

    return impl


def _arith(name: str, fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def impl(a: Any, b: Any) -> Any:
        if not _is_q(a) or not (_is_q(b) or (isinstance(b, int) and not isinstance(b, bool))):
            raise NoSuchOverload(name)
        return fn(a, b)

    return impl


def _includes(receiver: Any, value: Any) -> bool:
    """DRA `includes(dyn, dyn)`: list membership (lists up to 48 values); a scalar includes only itself."""
    if isinstance(receiver, list):
        if len(receiver) > INCLUDES_MAX_LIST:
            raise ValueError(
                f"'includes' function cannot be applied to lists longer than {INCLUDES_MAX_LIST} values"
            )
        return any(_same(item, value) for item in receiver)
    return _same(receiver, value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _semver_ctor(s: str, normalize: bool = False) -> str:
    return semverlib.semver(s, normalize)


def _is_semver(s: str, normalize: bool = False) -> bool:
    return semverlib.is_semver(s, normalize)


# (function, overload id, result, parameters, member); ids as upstream.
_Decl = tuple[str, str, cel.Type, Sequence[cel.Type], bool]


def _declarations(includes: bool, runtime: bool) -> list[_Decl]:
    q, s = (cel.Type.STRING, cel.Type.STRING) if runtime else (cel.Type(QUANTITY_TYPE), cel.Type(SEMVER_TYPE))
    b, i, d, st, dyn = cel.Type.BOOL, cel.Type.INT, cel.Type.DOUBLE, cel.Type.STRING, cel.Type.DYN
    decls: list[_Decl] = [
        ("quantity", "string_to_quantity", q, [st], False),
        ("isQuantity", "is_quantity_string", b, [st], False),
        ("sign", "quantity_sign", i, [q], False),
        ("isGreaterThan", "quantity_is_greater_than", b, [q, q], True),
        ("isGreaterThan", "semver_is_greater_than", b, [s, s], True),
        ("isLessThan", "quantity_is_less_than", b, [q, q], True),
        ("isLessThan", "semver_is_less_than", b, [s, s], True),
        ("compareTo", "quantity_compare_to", i, [q, q], True),
        ("compareTo", "semver_compare_to", i, [s, s], True),
        ("asApproximateFloat", "quantity_get_float", d, [q], True),
        ("asInteger", "quantity_get_int", i, [q], True),
        ("isInteger", "quantity_is_integer", b, [q], True),
        ("add", "quantity_add", q, [q, q], True),
        ("add", "quantity_add_int", q, [q, i], True),
        ("sub", "quantity_sub", q, [q, q], True),
        ("sub", "quantity_sub_int", q, [q, i], True),
        ("semver", "string_to_semver", s, [st], False),
        ("semver", "string_bool_to_semver", s, [st, b], False),
        ("isSemver", "is_semver_string", b, [st], False),
        ("isSemver", "is_semver_string_bool", b, [st, b], False),
        ("major", "semver_major", i, [s], True),
        ("minor", "semver_minor", i, [s], True),
        ("patch", "semver_patch", i, [s], True),
    ]
    if includes and not runtime:
        decls.append(("includes", "dyn_includes_dyn", b, [dyn, dyn], True))
    elif includes:
        # A Python implementation is found by the runtime kinds of its arguments: `dyn` matches none.
        kinds = {"list": cel.Type.LIST, "string": st, "int": i, "bool": b}
        for rname, rtype in kinds.items():
            for aname, atype in kinds.items():
                if aname != "list":
                    decls.append(("includes", f"{rname}_includes_{aname}", b, [rtype, atype], True))
    return decls


_IMPLS: dict[str, Callable[..., Any]] = {
    "quantity": quantitylib.quantity,
    "isQuantity": quantitylib.is_quantity,
    "sign": _unary("sign", _is_q, quantitylib.sign),
    "isGreaterThan": _comparison("isGreaterThan", quantitylib.is_greater_than, semverlib.is_greater_than),
    "isLessThan": _comparison("isLessThan", quantitylib.is_less_than, semverlib.is_less_than),
    "compareTo": _comparison("compareTo", quantitylib.compare_to, semverlib.compare_to),
    "asApproximateFloat": _unary("asApproximateFloat", _is_q, quantitylib.as_approximate_float),
    "asInteger": _unary("asInteger", _is_q, quantitylib.as_integer),
    "isInteger": _unary("isInteger", _is_q, quantitylib.is_integer),
    "add": _arith("add", quantitylib.add),
    "sub": _arith("sub", quantitylib.sub),
    "semver": _semver_ctor,
    "isSemver": _is_semver,
    "major": _unary("major", _is_s, semverlib.major),
    "minor": _unary("minor", _is_s, semverlib.minor),
    "patch": _unary("patch", _is_s, semverlib.patch),
    "includes": _includes,
}


def _kind(t: cel.Type) -> str:
    """The runtime kind cel-expr-python finds a Python implementation by (all messages are one kind)."""
    if t.is_message():
        return "message"
    return str(t.name()).split("<", 1)[0].lower()


def _functions(includes: bool, runtime: bool = False) -> list[cel.FunctionDecl]:
    decls = _declarations(includes, runtime) + (
        libraries.runtime_declarations() if runtime else libraries.checking_declarations()
    )
    impls = {**_IMPLS, **libraries.RUNTIME_IMPLS} if runtime else _IMPLS
    by_name: dict[str, list[cel.Overload]] = {}
    registered: set[tuple[str, bool, tuple[str, ...]]] = set()
    for name, overload_id, result, params, member in decls:
        # cel-expr-python registers a Python implementation per (name, argument kinds): the first overload of
        # each such group carries the (dispatching) implementation. Checking-only declarations carry none.
        kinds = (name, member, tuple(_kind(p) for p in params))
        impl = impls.get(name)
        if kinds in registered or impl is None:
            overload = cel.Overload(overload_id, result, list(params), is_member=member)
        else:
            registered.add(kinds)
            overload = cel.Overload(overload_id, result, list(params), is_member=member, impl=impl)
        by_name.setdefault(name, []).append(overload)
    return [cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()]


# cel-cpp's own sets, lists (cel-go ext.Lists v3's functions) and two-variable comprehensions. The checking
# environments exclude the standard `string()` and ordering operators, redeclared with IP's and CIDR's
# `string()` overloads and cross-type numeric comparisons (libraries.py).
_NATIVE_EXTENSIONS = """
extensions:
  - name: "lists"
  - name: "sets"
  - name: "two-var-comprehensions"
"""
_CHECKING_CONFIG = (
    """
stdlib:
  exclude_functions:
    - name: "string"
"""
    + "".join(f'    - name: "{op}"\n' for op in libraries.ORDERING_OPERATORS)
    + _NATIVE_EXTENSIONS
)


def _extensions(runtime: bool) -> list[cel.CelExtensionBase]:
    """Bindings and optionals; strings natively at runtime only (the checker's copy is in libraries.py)."""
    exts: list[cel.CelExtensionBase] = [ext_bindings.ExtBindings(), ext_optional.ExtOptional()]
    return [*exts, ext_strings.ExtStrings()] if runtime else exts


@functools.cache
def checking_env(key: EnvKey) -> cel.Env:
    """The type-checking environment for one gate set; built once per key (environments are immutable)."""
    return cel.NewEnv(
        pool_for(key.allow_multiple_allocations),
        config=cel.NewEnvConfigFromYaml(_CHECKING_CONFIG),
        variables={"device": cel.Type(DEVICE_TYPE)},
        extensions=_extensions(runtime=False),
        functions=_functions(key.includes),
    )


@functools.cache
def evaluation_env() -> cel.Env:
    """The environment that runs checked expressions against plain-dict devices (every function declared)."""
    return cel.NewEnv(
        POOL_V134,
        config=cel.NewEnvConfigFromYaml(_NATIVE_EXTENSIONS),
        variables={"device": cel.Type.DYN},
        extensions=_extensions(runtime=True),
        functions=_functions(includes=True, runtime=True),
    )
