"""A grammar of DRA CEL selector expressions, as Hypothesis strategies, reaching every library upstream's DRA
environment enables: strings, lists, sets, regex, URLs, IP and CIDR, format, quantity, semver, optionals,
bindings, two-variable comprehensions and nested macros, plus costs near the limit and type errors.

Most drawn expressions are well typed booleans; a share are deliberately wrong (type errors, undeclared
names, non-bool results, syntax errors), so both compile verdicts are exercised.
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

DOMAINS = ("dra.example.com", "gpu.nvidia.com", "dra.net", "x", "example.com")
NAMES = ("model", "memory", "shares", "index", "uuid", "driverVersion", "ipv4", "cores")

_str_lit = st.sampled_from(
    ['"gpu"', '"a.b.c"', '""', '"1.2.3"', '"10.0.0.1"', '"https://example.com:8443/a?b=c"', '"a-b_c"', '"ÿé"']
)
_int_lit = st.sampled_from(["0", "1", "-1", "42", "9223372036854775807", "0x10"])
_qty_lit = st.sampled_from(
    ['"1"', '"1Gi"', '"500m"', '"1.5"', '"1e3"', '"1Ei"', '"-2Ki"', '"0"', '"1k"', '"12M"', '"bad"']
)
_semver_lit = st.sampled_from(['"1.2.3"', '"0.0.1"', '"1.2.3-alpha.1"', '"10.20.30+build"', '"1.2"', '"v1"'])
_ip_lit = st.sampled_from(
    ['"10.0.0.1"', '"::1"', '"127.0.0.1"', '"2001:db8::1"', '"300.1.1.1"', '"fe80::1%eth0"']
)
_cidr_lit = st.sampled_from(['"10.0.0.0/8"', '"192.168.0.0/16"', '"2001:db8::/32"', '"10.0.0.1/8"', '"1/2"'])
_regex_lit = st.sampled_from(['"^a.*$"', '"[0-9]+"', '"(a|b)c"', '"\\\\d{2}"', '"[unclosed"', '"."'])
_formats = st.sampled_from(
    ["dns1123Label", "dns1123Subdomain", "qualifiedName", "labelValue", "uuid", "uri", "date", "byte", "nope"]
)


@st.composite
def attribute(draw: st.DrawFn) -> str:
    domain = draw(st.sampled_from(DOMAINS))
    name = draw(st.sampled_from(NAMES))
    if draw(st.booleans()):
        return f'device.attributes["{domain}"].{name}'
    return f'device.attributes["{domain}"]["{name}"]'


@st.composite
def capacity(draw: st.DrawFn) -> str:
    return f'device.capacity["{draw(st.sampled_from(DOMAINS))}"].{draw(st.sampled_from(NAMES))}'


@functools.cache
def string_expr() -> st.SearchStrategy[str]:
    base = st.one_of(_str_lit, st.just("device.driver"), attribute())
    return st.one_of(
        base,
        base.map(lambda s: f"{s}.lowerAscii()"),
        base.map(lambda s: f"{s}.upperAscii()"),
        base.map(lambda s: f'{s}.replace("a", "b")'),
        base.map(lambda s: f"{s}.trim()"),
        base.map(lambda s: f"{s}.substring(0, 1)"),
        base.map(lambda s: f"{s}.charAt(0)"),
        base.map(lambda s: f'"%s-%d".format([{s}, 1])'),
        base.map(lambda s: f"strings.quote({s})"),
        base.map(lambda s: f'{s}.find("[a-z]+")'),
        st.tuples(base, base).map(lambda t: f"{t[0]} + {t[1]}"),
        base.map(lambda s: f'[{s}, "x"].join("-")'),
        base.map(lambda s: f'url("https://" + {s}).getHost()'),
    )


@functools.cache
def list_expr() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["[1, 2, 3]", "[3, 1, 2]", "[]", "[1, 1, 2]", "lists.range(5)", '["a", "b"]']),
        st.sampled_from(
            ["[[1], [2, 3]].flatten()", "[1, 2, 2].distinct()", "[1, 2].reverse()", "[3, 1].sort()"]
        ),
        st.sampled_from(
            ["[1, 2, 3].slice(0, 2)", "[1, 2].sortBy(x, -x)", '"a,b".split(",")', '"ab".findAll(".")']
        ),
        st.sampled_from(
            ["[1, 2].map(x, x * 2)", "[1, 2, 3].filter(x, x > 1)", "[1, 2].transformList(i, v, v + i)"]
        ),
    )


@functools.cache
def int_expr() -> st.SearchStrategy[str]:
    return st.one_of(
        _int_lit,
        list_expr().map(lambda s: f"{s}.size()"),
        st.sampled_from(["[1, 2, 3].sum()", "[1, 2].min()", "[4, 2].max()", "[1, 2].indexOf(2)"]),
        st.sampled_from(["[1, 2, 2].lastIndexOf(2)", '"abc".indexOf("b")', '"abc".size()']),
        _qty_lit.map(lambda q: f"quantity({q}).asInteger()"),
        _semver_lit.map(lambda v: f"semver({v}).major()"),
        _ip_lit.map(lambda ip: f"ip({ip}).family()"),
        _cidr_lit.map(lambda c: f"cidr({c}).prefixLength()"),
        attribute(),
    )


@functools.cache
def bool_atom() -> st.SearchStrategy[str]:
    s = string_expr()
    i = int_expr()
    return st.one_of(
        st.sampled_from(["true", "false", "device.allowMultipleAllocations"]),
        st.tuples(s, _str_lit).map(lambda t: f"{t[0]} == {t[1]}"),
        st.tuples(s, _str_lit).map(lambda t: f"{t[0]}.startsWith({t[1]})"),
        st.tuples(s, _str_lit).map(lambda t: f"{t[0]}.endsWith({t[1]})"),
        st.tuples(s, _str_lit).map(lambda t: f"{t[0]}.contains({t[1]})"),
        st.tuples(s, _regex_lit).map(lambda t: f"{t[0]}.matches({t[1]})"),
        st.tuples(i, i, st.sampled_from(["<", "<=", ">", ">=", "==", "!="])).map(
            lambda t: f"{t[0]} {t[2]} {t[1]}"
        ),
        list_expr().map(lambda s: f"{s}.isSorted()"),
        st.sampled_from(
            ["sets.contains([1, 2, 3], [1])", "sets.intersects([1], [2])", "sets.equivalent([1], [1])"]
        ),
        st.sampled_from(['isURL("https://a.b/c")', 'url("https://a.b:1/c").getPort() == "1"', 'isURL("::")']),
        st.sampled_from(
            ['url("https://a/b?c=d").getQuery()["c"][0] == "d"', 'url("x:/y").getScheme() == "x"']
        ),
        _ip_lit.map(lambda ip: f"isIP({ip})"),
        _ip_lit.map(lambda ip: f"ip({ip}).isLoopback()"),
        _ip_lit.map(lambda ip: f"ip({ip}).isCanonical()"),
        _ip_lit.map(lambda ip: f'cidr("10.0.0.0/8").containsIP({ip})'),
        _cidr_lit.map(lambda c: f"isCIDR({c})"),
        _cidr_lit.map(lambda c: f'cidr({c}).containsCIDR("10.1.0.0/16")'),
        _cidr_lit.map(lambda c: f"cidr({c}).masked() == cidr({c})"),
        st.tuples(_formats, _str_lit).map(lambda t: f"format.{t[0]}().validate({t[1]}).hasValue()"),
        st.tuples(_formats, _str_lit).map(lambda t: f'format.named("{t[0]}").hasValue()'),
        _qty_lit.map(lambda q: f"isQuantity({q})"),
        st.tuples(_qty_lit, _qty_lit).map(lambda t: f"quantity({t[0]}).isGreaterThan(quantity({t[1]}))"),
        st.tuples(_qty_lit, _qty_lit).map(lambda t: f"quantity({t[0]}).compareTo(quantity({t[1]})) >= 0"),
        st.tuples(_qty_lit, _qty_lit).map(lambda t: f"quantity({t[0]}).add(quantity({t[1]})).isInteger()"),
        _qty_lit.map(lambda q: f"quantity({q}).sub(1).sign() < 1"),
        _qty_lit.map(lambda q: f"quantity({q}).asApproximateFloat() > 0.5"),
        st.tuples(capacity(), _qty_lit).map(lambda t: f"{t[0]}.compareTo(quantity({t[1]})) >= 0"),
        st.tuples(capacity(), _qty_lit).map(lambda t: f"{t[0]}.isLessThan(quantity({t[1]}))"),
        _semver_lit.map(lambda v: f"isSemver({v})"),
        st.tuples(_semver_lit, _semver_lit).map(lambda t: f"semver({t[0]}).isGreaterThan(semver({t[1]}))"),
        st.tuples(attribute(), _semver_lit).map(lambda t: f"{t[0]}.isGreaterThan(semver({t[1]}))"),
        st.sampled_from(
            ["optional.of(1).hasValue()", '{"a": 1}.?a.orValue(0) == 1', "[1, 2][?5].hasValue()"]
        ),
        st.sampled_from(['device.attributes["dra.net"].?ipv4.hasValue()', "optional.none().orValue(true)"]),
        st.sampled_from(
            ['device.attributes[?"x"].hasValue()', '{"a": 1}[?"a"].optMap(v, v + 1).orValue(0) > 1']
        ),
        st.sampled_from(['cel.bind(x, device.driver, x == "a" || x == "b")', "cel.bind(n, 3, n * n > 8)"]),
        st.sampled_from(
            ['{"a": 1}.all(k, v, v > 0)', "[5, 6].exists(i, v, i < v)", "[1].existsOne(i, v, v == 1)"]
        ),
        st.sampled_from(
            [
                '{"a": 1}.transformMap(k, v, v + 1)["a"] == 2',
                '{"a": 1}.transformMapEntry(k, v, {v: k}).size() == 1',
            ]
        ),
        st.sampled_from(
            ["[[1], [2]].all(l, l.exists(x, x > 0))", "[1, 2].exists_one(x, [x].all(y, y == 1))"]
        ),
        st.sampled_from(
            ['device.attributes.exists(d, d.endsWith(".com"))', 'device.capacity.all(d, d != "")']
        ),
        st.sampled_from(['"dra.net" in device.attributes', 'has(device.attributes["x"].model)']),
        st.sampled_from(["[1, 2].includes(1)", 'device.attributes["x"].list.includes(1)']),
    )


TYPE_ERRORS = (
    '1 == "a"',
    "device.driver > 1",
    'quantity("1") < quantity("2")',
    '"a" + 1',
    "device.nope",
    "noSuchVar == 1",
    "device.driver",
    "1",
    "device.driver ==",
    "((true)",
    '"unterminated',
    'device.capacity["x"].shares >= 5',
    'device.capacity["shares"].isGreaterThan(quantity("0"))',
    'device.attributes["x"].model.isGreaterThan(1)',
    "semver(1)",
    'ip("1.2.3.4") == "1.2.3.4"',
    "[1, 2].sum() == 1.0",
    '{"a": 1}.all(k, v, w > 0)',
    "device.allowMultipleAllocations == 1",
    "size(device) > 0",
    "true && 1",
    "format.nope().validate('x')",
    'url("x").nope()',
    "lists.range(-1).size() == 0",
)

# Costs around upstream's 1,000,000 limit: nested comprehensions over the device's maps (≤ 32 entries each,
# strings ≤ 64) and string work per step, from cheap to well over.
_NESTS = (
    "device.attributes.all(a, {inner})",
    "device.capacity.exists(c, {inner})",
    'device.attributes["x"].model.split("").all(s, {inner})',
    "lists.range(32).all(i, {inner})",
)
_LEAVES = (
    'a.matches("^[a-z]+$")',
    "device.driver.contains(a)",
    'device.driver.matches("^" + device.driver + "$")',
    "true",
    'device.attributes["x"].model.matches(device.driver)',
)


@st.composite
def costly(draw: st.DrawFn) -> str:
    depth = draw(st.integers(1, 5))
    expr = draw(st.sampled_from(_LEAVES))
    for _ in range(depth):
        expr = draw(st.sampled_from(_NESTS)).format(inner=expr)
    return expr


@functools.cache
def bool_expr() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, inner, st.sampled_from(["&&", "||"])).map(lambda t: f"({t[0]}) {t[2]} ({t[1]})"),
            inner.map(lambda e: f"!({e})"),
            st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
            inner.map(lambda e: f"[1, 2].all(x, {e})"),
            inner.map(lambda e: f'device.attributes.exists(dom, dom == "x" && ({e}))'),
        )

    return st.recursive(bool_atom(), extend, max_leaves=4)


@functools.cache
def selector_expression() -> st.SearchStrategy[str]:
    """A CEL selector: mostly well typed, some type errors, some near the cost limit."""
    return st.one_of(
        bool_expr(),
        bool_expr(),
        bool_expr(),
        st.sampled_from(TYPE_ERRORS),
        costly(),
    )
