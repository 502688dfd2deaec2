"""Declarations of the Kubernetes CEL libraries beyond quantity and semver, and of cel-go's strings v2.

Upstream's DRA environment (`environment.MustBaseEnvSet`, apiserver `pkg/cel/environment/base.go`) holds the
Kubernetes URLs, Regex, Lists, IP, CIDR and Format libraries and cel-go's `ext.Strings` v2; cel-cpp provides
`ext.Sets`, `ext.Lists` and the two-variable comprehensions natively (env.py). Two tables here:

* `checking_declarations`: upstream's signatures and overload ids, for the type-checker. cel-expr-python
  lets one function have one declaration, so the strings extension is declared here (not loaded) to let
  `indexOf`/`lastIndexOf` carry both the string and the list overloads, and the standard `string()` is
  redeclared with the IP and CIDR overloads (the standard one is excluded in env.py).
* `runtime_declarations`: what the evaluation environment runs, our types being tagged strings; calls whose
  name collides with a native function at runtime are renamed by the evaluation rewrite (`RENAMED`,
  device.py).

cel-expr-python cannot declare type parameters or optional results: `indexOf(A)` takes `dyn` and
`validate`/`format.named` return `dyn`
(docs/divergences.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cel_expr_python import cel

from resourceapi.cel import formatlib, listlib, netlib, regexlib, urls
from resourceapi.cel.messages import CIDR_TYPE, FORMAT_TYPE, IP_TYPE, URL_TYPE

# (function, overload id, result, parameters, member)
Decl = tuple[str, str, cel.Type, Sequence[cel.Type], bool]

B, I, U, D, S, BY = (  # noqa: E741
    cel.Type.BOOL,
    cel.Type.INT,
    cel.Type.UINT,
    cel.Type.DOUBLE,
    cel.Type.STRING,
    cel.Type.BYTES,
)
DYN, DUR, TS = cel.Type.DYN, cel.Type.DURATION, cel.Type.TIMESTAMP

_COMPARABLE = {
    "int": I,
    "uint": U,
    "double": D,
    "bool": B,
    "duration": DUR,
    "timestamp": TS,
    "string": S,
    "bytes": BY,
}
_SUMMABLE = {"int": I, "uint": U, "double": D, "duration": DUR}

# checked overload id -> runtime function name, for calls that would collide with a native runtime function.
RENAMED = {
    "list_a_index_of_int": "k8s.listIndexOf",
    "list_a_last_index_of_int": "k8s.listLastIndexOf",
    "ip_to_string": "k8s.ipString",
    "cidr_to_string": "k8s.cidrString",
    "list_double_sum_double": "k8s.sumDouble",
    "list_duration_sum_duration": "k8s.sumDuration",
    "list_int_sum_int": "k8s.sumInt",
    "list_uint_sum_uint": "k8s.sumInt",
    # A Python result declared `dyn` cannot be a duration or timestamp: these get typed runtime functions.
    "list_duration_min_duration": "k8s.minDuration",
    "list_duration_max_duration": "k8s.maxDuration",
    "list_timestamp_min_timestamp": "k8s.minTimestamp",
    "list_timestamp_max_timestamp": "k8s.maxTimestamp",
    # cel-cpp 0.1.3 refuses an end index equal to the length ('abc'.substring(1, 3)); cel-go allows it.
    "string_substring_int_int": "k8s.substring",
}
# `indexOf`/`lastIndexOf` on a `dyn` receiver (an attribute): a string or a list, decided at runtime.
INDEX_OF_DYN = "k8s.indexOfDyn"
LAST_INDEX_OF_DYN = "k8s.lastIndexOfDyn"
LIST_INDEX_OVERLOADS = frozenset({"list_a_index_of_int", "list_a_last_index_of_int"})
MAP_INSERT = "cel.@mapInsert"  # cel-cpp's two-variable comprehensions declare it but bring no runtime for it
RUNTIME_MAP_INSERT = "k8s.mapInsert"
FORMAT_VALIDATE = "format-validate"
FORMAT_NAMED = "format-named"
RUNTIME_FORMAT_VALIDATE = "k8s.formatValidate"
RUNTIME_FORMAT_NAMED = "k8s.formatNamed"

# Every function upstream declares in these libraries (the drift check and the native-function fallback).
UPSTREAM_FUNCTIONS = frozenset(
    {
        "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery",
        "find", "findAll", "isSorted", "sum", "min", "max", "indexOf", "lastIndexOf",
        "ip", "isIP", "ip.isCanonical", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
        "isLinkLocalUnicast", "isGlobalUnicast", "string", "cidr", "isCIDR", "containsIP", "containsCIDR",
        "prefixLength", "masked", "format.named", "validate",
        *(f"format.{name}" for name in formatlib.FORMATS),
        "sets.contains", "sets.equivalent", "sets.intersects",
        "slice", "flatten", "sort", "sortBy", "lists.range", "reverse", "distinct",
        "all", "exists", "existsOne", "exists_one", "transformList", "transformMap", "transformMapEntry",
        "optional.unwrap", "unwrapOpt", "first", "last",
    }
)  # fmt: skip


def _strings_v2() -> list[Decl]:
    """cel-go `ext.Strings` v2 (ext/strings.go), as upstream's base environment loads it."""
    ls = cel.Type("list<string>")
    return [
        ("charAt", "string_char_at_int", S, [S, I], True),
        ("indexOf", "string_index_of_string", I, [S, S], True),
        ("indexOf", "string_index_of_string_int", I, [S, S, I], True),
        ("lastIndexOf", "string_last_index_of_string", I, [S, S], True),
        ("lastIndexOf", "string_last_index_of_string_int", I, [S, S, I], True),
        ("lowerAscii", "string_lower_ascii", S, [S], True),
        ("replace", "string_replace_string_string", S, [S, S, S], True),
        ("replace", "string_replace_string_string_int", S, [S, S, S, I], True),
        ("split", "string_split_string", ls, [S, S], True),
        ("split", "string_split_string_int", ls, [S, S, I], True),
        ("substring", "string_substring_int", S, [S, I], True),
        ("substring", "string_substring_int_int", S, [S, I, I], True),
        ("trim", "string_trim", S, [S], True),
        ("upperAscii", "string_upper_ascii", S, [S], True),
        ("format", "string_format", S, [S, cel.Type("list<dyn>")], True),
        ("strings.quote", "strings_quote", S, [S], False),
        ("join", "list_join", S, [ls], True),
        ("join", "list_join_string", S, [ls, S], True),
    ]


def _string_conversions(ip: cel.Type, cidr: cel.Type) -> list[Decl]:
    """The standard `string()` overloads (cel-go checker/decls), plus IP's and CIDR's."""
    return [
        ("string", "string_to_string", S, [S], False),
        ("string", "int64_to_string", S, [I], False),
        ("string", "uint64_to_string", S, [U], False),
        ("string", "double_to_string", S, [D], False),
        ("string", "bytes_to_string", S, [BY], False),
        ("string", "bool_to_string", S, [B], False),
        ("string", "timestamp_to_string", S, [TS], False),
        ("string", "duration_to_string", S, [DUR], False),
        ("string", "ip_to_string", S, [ip], False),
        ("string", "cidr_to_string", S, [cidr], False),
    ]


def _k8s(url: cel.Type, ip: cel.Type, cidr: cel.Type, fmt: cel.Type, runtime: bool) -> list[Decl]:
    qmap = cel.Type("map<string, list<string>>")
    ls = cel.Type("list<string>")
    decls: list[Decl] = [
        ("url", "string_to_url", url, [S], False),
        ("isURL", "is_url_string", B, [S], False),
        ("getScheme", "url_get_scheme", S, [url], True),
        ("getHost", "url_get_host", S, [url], True),
        ("getHostname", "url_get_hostname", S, [url], True),
        ("getPort", "url_get_port", S, [url], True),
        ("getEscapedPath", "url_get_escaped_path", S, [url], True),
        ("getQuery", "url_get_query", qmap, [url], True),
        ("find", "string_find_string", S, [S, S], True),
        ("findAll", "string_find_all_string", ls, [S, S], True),
        ("findAll", "string_find_all_string_int", ls, [S, S, I], True),
        ("ip", "string_to_ip", ip, [S], False),
        ("ip", "cidr_ip", ip, [cidr], True),
        ("family", "ip_family", I, [ip], True),
        ("ip.isCanonical", "ip_is_canonical", B, [S], False),
        ("isUnspecified", "ip_is_unspecified", B, [ip], True),
        ("isLoopback", "ip_is_loopback", B, [ip], True),
        ("isLinkLocalMulticast", "ip_is_link_local_multicast", B, [ip], True),
        ("isLinkLocalUnicast", "ip_is_link_local_unicast", B, [ip], True),
        ("isGlobalUnicast", "ip_is_global_unicast", B, [ip], True),
        ("isIP", "is_ip", B, [S], False),
        ("cidr", "string_to_cidr", cidr, [S], False),
        ("containsIP", "cidr_contains_ip_string", B, [cidr, S], True),
        ("containsCIDR", "cidr_contains_cidr_string", B, [cidr, S], True),
        ("prefixLength", "cidr_prefix_length", I, [cidr], True),
        ("masked", "cidr_masked", cidr, [cidr], True),
        ("isCIDR", "is_cidr", B, [S], False),
    ]
    if not runtime:
        decls += [
            ("containsIP", "cidr_contains_ip_ip", B, [cidr, ip], True),
            ("containsCIDR", "cidr_contains_cidr", B, [cidr, cidr], True),
            ("validate", FORMAT_VALIDATE, DYN, [fmt, S], True),
            ("format.named", FORMAT_NAMED, DYN, [S], False),
        ]
        decls += [(f"format.{name}", f"format.{name}", fmt, [], False) for name in formatlib.FORMATS]
    return decls


def _lists(runtime: bool) -> list[Decl]:
    """Kubernetes Lists (1.37): per-type overloads as upstream's `templatedOverloads` for the checker; at
    runtime one `dyn`-valued overload each (a Python function is found by argument kinds, and its result is
    checked against the declared type)."""
    if runtime:
        lst = cel.Type.LIST
        return [
            ("isSorted", "k8s_list_is_sorted", B, [lst], True),
            ("sum", "k8s_list_sum", DYN, [lst], True),
            ("min", "k8s_list_min", DYN, [lst], True),
            ("max", "k8s_list_max", DYN, [lst], True),
        ]
    decls: list[Decl] = []
    for name, t in _COMPARABLE.items():
        lt = cel.Type.List(t)
        decls.append(("isSorted", f"list_{name}_is_sorted_bool", B, [lt], True))
        decls.append(("max", f"list_{name}_max_{name}", t, [lt], True))
        decls.append(("min", f"list_{name}_min_{name}", t, [lt], True))
    for name, t in _SUMMABLE.items():
        decls.append(("sum", f"list_{name}_sum_{name}", t, [cel.Type.List(t)], True))
    ld = cel.Type("list<dyn>")
    decls.append(("indexOf", "list_a_index_of_int", I, [ld, DYN], True))
    decls.append(("lastIndexOf", "list_a_last_index_of_int", I, [ld, DYN], True))
    return decls


ORDERING_OPERATORS = {"_<_": "less", "_<=_": "less_equals", "_>_": "greater", "_>=_": "greater_equals"}
_ORDERED = {
    "bool": B,
    "int64": I,
    "uint64": U,
    "double": D,
    "string": S,
    "bytes": BY,
    "timestamp": TS,
    "duration": DUR,
}
_NUMERIC = {"int64": I, "uint64": U, "double": D}


def _ordering() -> list[Decl]:
    """The standard ordering operators plus `CrossTypeNumericComparisons` (upstream since 1.28: `1 < 2.0`),
    which cel-cpp's checker lacks (its runtime compares across numeric types). Overload ids as cel-go's."""
    decls: list[Decl] = []
    for op, name in ORDERING_OPERATORS.items():
        for tname, t in _ORDERED.items():
            decls.append((op, f"{name}_{tname}", B, [t, t], False))
        for a, at in _NUMERIC.items():
            for b, bt in _NUMERIC.items():
                if a != b:
                    decls.append((op, f"{name}_{a}_{b}", B, [at, bt], False))
    return decls


def _optional_unwrap() -> list[Decl]:
    """cel-go's `optional.unwrap(list(optional(T)))` and `<list>.unwrapOpt()`: cel-cpp runs them but its
    checker does not declare them (and optional types cannot be declared here: `list<dyn>`)."""
    ld = cel.Type("list<dyn>")
    return [
        ("optional.unwrap", "optional_unwrap_list", ld, [ld], False),
        ("unwrapOpt", "optional_unwrapOpt_list", ld, [ld], True),
    ]


def checking_declarations() -> list[Decl]:
    url, ip, cidr, fmt = cel.Type(URL_TYPE), cel.Type(IP_TYPE), cel.Type(CIDR_TYPE), cel.Type(FORMAT_TYPE)
    return (
        _strings_v2()
        + _string_conversions(ip, cidr)
        + _k8s(url, ip, cidr, fmt, False)
        + _lists(False)
        + _optional_unwrap()
        + _ordering()
    )


# Runtime kinds a `dyn` argument can take (cel-expr-python finds a Python function by argument kinds).
_RUNTIME_KINDS = {
    "int": I,
    "uint": U,
    "double": D,
    "bool": B,
    "string": S,
    "bytes": BY,
    "list": cel.Type.LIST,
    "map": cel.Type.MAP,
    "null": cel.Type.NULL,
    "duration": DUR,
    "timestamp": TS,
}


def runtime_declarations() -> list[Decl]:
    """The evaluation declarations beyond quantity and semver (implementations: RUNTIME_IMPLS)."""
    decls = _k8s(S, S, S, S, True) + _lists(True)
    lst, mp = cel.Type.LIST, cel.Type.MAP
    for kind, t in _RUNTIME_KINDS.items():
        decls.append(("k8s.listIndexOf", f"k8s_list_index_of_{kind}", I, [lst, t], False))
        decls.append(("k8s.listLastIndexOf", f"k8s_list_last_index_of_{kind}", I, [lst, t], False))
        for receiver in (lst, S):
            rname = "list" if receiver is lst else "string"
            decls.append((INDEX_OF_DYN, f"k8s_dyn_index_of_{rname}_{kind}", I, [receiver, t], False))
            decls.append(
                (LAST_INDEX_OF_DYN, f"k8s_dyn_last_index_of_{rname}_{kind}", I, [receiver, t], False)
            )
        for key_kind in ("int", "uint", "bool", "string"):
            decls.append(
                (
                    RUNTIME_MAP_INSERT,
                    f"k8s_map_insert_{key_kind}_{kind}",
                    mp,
                    [mp, _RUNTIME_KINDS[key_kind], t],
                    False,
                )
            )
    decls += [
        (RUNTIME_MAP_INSERT, "k8s_map_insert_map", mp, [mp, mp], False),
        (INDEX_OF_DYN, "k8s_dyn_index_of_string_string_int", I, [S, S, I], False),
        (LAST_INDEX_OF_DYN, "k8s_dyn_last_index_of_string_string_int", I, [S, S, I], False),
        ("k8s.ipString", "k8s_ip_string", S, [S], False),
        ("k8s.cidrString", "k8s_cidr_string", S, [S], False),
        ("k8s.sumDouble", "k8s_sum_double", D, [lst], False),
        ("k8s.sumDuration", "k8s_sum_duration", DUR, [lst], False),
        ("k8s.sumInt", "k8s_sum_int", I, [lst], False),
        ("k8s.substring", "k8s_substring", S, [S, I, I], False),
        ("k8s.minDuration", "k8s_min_duration", DUR, [lst], False),
        ("k8s.maxDuration", "k8s_max_duration", DUR, [lst], False),
        ("k8s.minTimestamp", "k8s_min_timestamp", TS, [lst], False),
        ("k8s.maxTimestamp", "k8s_max_timestamp", TS, [lst], False),
        (RUNTIME_FORMAT_VALIDATE, "k8s_format_validate", cel.Type("list<string>"), [S, S], False),
        (RUNTIME_FORMAT_NAMED, "k8s_format_named", S, [S], False),
    ]
    return decls


def _by_receiver(ip_fn: Callable[[str], Any], name: str) -> Callable[[Any], Any]:
    def impl(v: Any) -> Any:
        if not netlib.is_ip_value(v):
            raise TypeError(f"no such overload: {name}")
        return ip_fn(v)

    return impl


def _ip(v: str) -> str:
    """`ip(string)` and `<CIDR>.ip()` share one runtime function (both take a string at runtime)."""
    return netlib.cidr_ip(v) if netlib.is_cidr_value(v) else netlib.ip(v)


def _map_insert(m: dict[Any, Any], k: Any, v: Any = None) -> dict[Any, Any]:
    if isinstance(k, dict):
        out = dict(m)
        for key, value in k.items():
            if key in out:
                raise ValueError(f"insert failed: key {key} already exists")
            out[key] = value
        return out
    if k in m:
        raise ValueError(f"insert failed: key {k} already exists")
    return {**m, k: v}


def _substring(s: str, start: int, end: int) -> str:
    """cel-go ext/strings.go `substrEnd`: code points, end exclusive, its error texts."""
    if start > end:
        raise ValueError(f"invalid substring range. start: {start}, end: {end}")
    for index in (start, end):
        if index < 0 or index > len(s):
            raise ValueError(f"index out of range: {index}")
    return s[start:end]


def _index_of(receiver: Any, value: Any, offset: int | None = None) -> int:
    """`indexOf` on a string (cel-go ext/strings.go, code points) or a list (Kubernetes lists library)."""
    if isinstance(receiver, list) and offset is None:
        return listlib.index_of(receiver, value)
    if not isinstance(receiver, str) or not isinstance(value, str):
        raise TypeError("no such overload")
    start = 0 if offset is None else offset
    if start < 0 or start > len(receiver):
        raise ValueError(f"index out of range: {start}")
    return receiver.find(value, start)


def _last_index_of(receiver: Any, value: Any, offset: int | None = None) -> int:
    if isinstance(receiver, list) and offset is None:
        return listlib.last_index_of(receiver, value)
    if not isinstance(receiver, str) or not isinstance(value, str):
        raise TypeError("no such overload")
    end = len(receiver) if offset is None else offset
    if end < 0 or end > len(receiver):
        raise ValueError(f"index out of range: {end}")
    return receiver.rfind(value, 0, end + len(value))


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    return regexlib.find_all(s, pattern, limit)


RUNTIME_IMPLS: dict[str, Callable[..., Any]] = {
    "url": urls.url,
    "isURL": urls.is_url,
    "getScheme": urls.get_scheme,
    "getHost": urls.get_host,
    "getHostname": urls.get_hostname,
    "getPort": urls.get_port,
    "getEscapedPath": urls.get_escaped_path,
    "getQuery": urls.get_query,
    "find": regexlib.find,
    "findAll": _find_all,
    "ip": _ip,
    "family": _by_receiver(netlib.family, "family"),
    "ip.isCanonical": netlib.is_canonical,
    "isUnspecified": _by_receiver(netlib.is_unspecified, "isUnspecified"),
    "isLoopback": _by_receiver(netlib.is_loopback, "isLoopback"),
    "isLinkLocalMulticast": _by_receiver(netlib.is_link_local_multicast, "isLinkLocalMulticast"),
    "isLinkLocalUnicast": _by_receiver(netlib.is_link_local_unicast, "isLinkLocalUnicast"),
    "isGlobalUnicast": _by_receiver(netlib.is_global_unicast, "isGlobalUnicast"),
    "isIP": netlib.is_ip,
    "cidr": netlib.cidr,
    "containsIP": netlib.contains_ip,
    "containsCIDR": netlib.contains_cidr,
    "prefixLength": netlib.prefix_length,
    "masked": netlib.masked,
    "isCIDR": netlib.is_cidr,
    "isSorted": listlib.is_sorted,
    "sum": listlib.sum_any,
    "min": listlib.list_min,
    "max": listlib.list_max,
    "k8s.listIndexOf": listlib.index_of,
    "k8s.listLastIndexOf": listlib.last_index_of,
    RUNTIME_MAP_INSERT: _map_insert,
    "k8s.ipString": netlib.ip_string,
    "k8s.cidrString": netlib.cidr_string,
    "k8s.sumDouble": listlib.sum_double,
    "k8s.sumDuration": listlib.sum_duration,
    "k8s.sumInt": listlib.sum_int,
    "k8s.substring": _substring,
    "k8s.minDuration": listlib.list_min,
    "k8s.maxDuration": listlib.list_max,
    "k8s.minTimestamp": listlib.list_min,
    "k8s.maxTimestamp": listlib.list_max,
    INDEX_OF_DYN: _index_of,
    LAST_INDEX_OF_DYN: _last_index_of,
    RUNTIME_FORMAT_VALIDATE: formatlib.validate_messages,
    RUNTIME_FORMAT_NAMED: formatlib.named,
}
