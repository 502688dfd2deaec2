"""The Kubernetes CEL libraries and cel-go extensions of upstream's DRA environment: results and errors of the
examples in their documentation (apiserver `pkg/cel/library/{urls,regex,lists,ip,cidr,format}.go`, cel-go
`ext/{sets,lists,comprehensions}.go`), evaluated against a device as the allocator does."""

from __future__ import annotations

import pytest
from support.cel import compiled

from resourceapi.cel import CelIssue, CelRuntimeError, compile_selector, device_input
from resourceapi.gates import FeatureGates

GATES = FeatureGates.parse("")
NIC = device_input(
    "dra.net",
    {
        "ipv4": {"string": "10.0.3.4"},
        "ifName": {"string": "gpu0rdma0"},
        "virtual": {"bool": False},
        "gpu.nvidia.com/productName": {"string": "h100"},
    },
    {},
)


def evaluate(expression: str, stored: bool = False) -> bool:
    """`stored`: the scheduler's environment, which has no cost limit (scans of string lists exceed it)."""
    return compiled(expression, GATES, stored=stored).matches(NIC)


def runtime_error(expression: str) -> str:
    program = compiled(expression, GATES)
    with pytest.raises(CelRuntimeError) as info:
        program.matches(NIC)
    return info.value.message


# The selectors of issue 8's table, on a device that carries such attributes.
ISSUE_SELECTORS = [
    'cidr("10.0.0.0/16").containsIP(device.attributes["dra.net"].ipv4)',
    'isIP(device.attributes["dra.net"].ipv4) && ip(device.attributes["dra.net"].ipv4).family() == 4',
    '!format.dns1123Label().validate(device.attributes["dra.net"].ifName).hasValue()',
    'url("https://" + device.driver).getHost() == "dra.net"',
    # (a scan of a string list, `["a100", "h100"].indexOf(...)`, is too complex for kube-apiserver v1.37.2:
    # test_cel_cost.py; the scheduler evaluates it: TRUE_EXAMPLES)
    "[1, 2].sum() == 3",
    'device.attributes["dra.net"].ifName.find("gpu[0-9]+rdma0") != ""',
    'sets.contains(["dra.net", "gpu.intel.com"], [device.driver])',
    'device.attributes["dra.net"].all(k, v, k != "virtual" || v == false)',
]


@pytest.mark.parametrize("expression", ISSUE_SELECTORS)
def test_selectors_of_nic_drivers_compile_and_match(expression: str) -> None:
    assert evaluate(expression) is True


TRUE_EXAMPLES = [
    # URLs
    "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
    "isURL('/absolute-path')",
    "!isURL('https://a:b:c/')",
    "!isURL('../relative-path')",
    "url('/path').getScheme() == ''",
    "url('https://example.com/').getScheme() == 'https'",
    "url('https://example.com:80/').getHost() == 'example.com:80'",
    "url('https://[::1]:80/').getHost() == '[::1]:80'",
    "url('https://[::1]:80/').getHostname() == '::1'",
    "url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'",
    "url('https://example.com:80/').getPort() == '80'",
    "url('https://example.com/').getPort() == ''",
    "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
    "url('https://example.com').getEscapedPath() == ''",
    "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
    "url('https://example.com/path?key with spaces=value with spaces').getQuery() == "
    "{'key with spaces': ['value with spaces']}",
    "url('https://example.com/path?').getQuery() == {}",
    # Regex
    "'abc 123'.find('[0-9]+') == '123'",
    "'abc 123'.find('xyz') == ''",
    "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
    "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
    "'123 abc 456'.findAll('xyz') == []",
    # Lists (1.37)
    "[1, 2, 3].isSorted()",
    "['a', 'b', 'b', 'c'].isSorted()",
    "![2.0, 1.0].isSorted()",
    "[1].isSorted() && [].isSorted()",
    "[1, 3].sum() == 4",
    "[1.0, 3.0].sum() == 4.0",
    "[duration('1m'), duration('1s')].sum() == duration('1m1s')",
    "[].sum() == 0",
    "[1, 3].min() == 1 && [1, 3].max() == 3",
    "[1].min() == 1",
    "['a', 'c', 'b'].max() == 'c' && [1.5, 0.5].min() == 0.5 && [2u, 1u].max() == 2u",
    "[duration('1s'), duration('2s')].max() == duration('2s')",
    "[timestamp('2021-01-01T00:00:00Z'), timestamp('2020-01-01T00:00:00Z')].min().getFullYear() == 2020",
    "[1, 2, 2, 3].indexOf(2) == 1",
    "['a', 'b', 'b', 'c'].lastIndexOf('b') == 2",
    "[1.0].indexOf(1.1) == -1",
    "[].indexOf('string') == -1",
    "'abcb'.indexOf('b') == 1 && 'abcb'.lastIndexOf('b') == 3",
    # IP
    "isIP('127.0.0.1') && isIP('::1')",
    "!isIP('127.0.0.256') && !isIP(':::1')",
    "!isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0') && !isIP('01.2.3.4')",
    "ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd')",
    "!ip.isCanonical('2001:DB8::ABCD') && !ip.isCanonical('2001:db8::0:0:0:abcd')",
    "ip('127.0.0.1').family() == 4 && ip('::1').family() == 6",
    "ip('0.0.0.0').isUnspecified() && !ip('127.0.0.1').isUnspecified() && ip('::').isUnspecified()",
    "ip('127.0.0.1').isLoopback() && !ip('192.168.0.1').isLoopback() && ip('::1').isLoopback()",
    "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()",
    "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
    "ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast()",
    "ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
    "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()",
    "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
    "string(ip('::1')) == '::1' && ip('127.0.0.1') == ip('127.0.0.1')",
    # CIDR
    "isCIDR('192.168.0.0/16') && isCIDR('::1/128')",
    "!isCIDR('192.168.0.0/33') && !isCIDR('::1/129') && !isCIDR('::ffff:1.2.3.4/24')",
    "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
    "!cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
    "cidr('192.168.0.0/24').containsIP('192.168.0.1') && !cidr('192.168.0.0/24').containsIP('192.168.1.1')",
    "cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))",
    "!cidr('192.168.1.0/24').containsCIDR(cidr('192.168.2.0/24'))",
    "cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')",
    "cidr('192.168.0.1/24').ip() == ip('192.168.0.1') && cidr('::1/128').ip().family() == 6",
    "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
    "cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()",
    "cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()",
    "cidr('192.168.0.0/16').prefixLength() == 16 && cidr('::1/128').prefixLength() == 128",
    "string(cidr('192.168.0.1/24')) == '192.168.0.1/24'",
    # Format
    "!format.dns1123Label().validate('my-label-name').hasValue()",
    "!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()",
    "!format.dns1035Label().validate('my-label-name').hasValue()",
    "!format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()",
    "!format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()",
    "!format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()",
    "!format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()",
    "!format.labelValue().validate('my_value').hasValue()",
    "!format.uri().validate('http://example.com').hasValue()",
    "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
    "!format.byte().validate('aGVsbG8=').hasValue()",
    "!format.date().validate('2021-01-01').hasValue()",
    "!format.datetime().validate('2021-01-01T00:00:00Z').hasValue()",
    "format.dns1123Label().validate('My_Label').value().size() == 1",
    "format.uuid().validate('nope').value() == ['does not match the UUID format']",
    "format.named('dns1123Label').hasValue() && !format.named('nope').hasValue()",
    # cel-go ext.Strings v2, where cel-cpp differs: the end index may equal the length
    "'abc'.substring(1, 3) == 'bc' && 'tacocat'.substring(4, 7) == 'cat'",
    # cel-go ext.Sets
    "sets.contains([1, 2, 3, 4], [2, 3]) && !sets.contains([1, 2], [3])",
    "sets.equivalent([1, 2, 3], [3, 2, 1]) && sets.equivalent([1], [1, 1])",
    "sets.intersects([1, 2], [2, 3]) && !sets.intersects([1], [])",
    # cel-go ext.Lists v3
    "[1, 2, 2, 3, 3, 3].distinct() == [1, 2, 3]",
    "[1, [2, 3], [4]].flatten() == [1, 2, 3, 4]",
    "[1, [2, [3, [4]]]].flatten(2) == [1, 2, 3, [4]]",
    "lists.range(5) == [0, 1, 2, 3, 4]",
    "[5, 3, 1, 2].reverse() == [2, 1, 3, 5]",
    "[1, 2, 3, 4].slice(1, 3) == [2, 3]",
    "[3, 2, 1].sort() == [1, 2, 3] && ['b', 'c', 'a'].sort() == ['a', 'b', 'c']",
    "[{'n': 'foo', 's': 0}, {'n': 'bar', 's': -10}].sortBy(e, e.s).map(e, e.n) == ['bar', 'foo']",
    # cel-go ext.TwoVarComprehensions
    "{'a': 1, 'b': 2}.all(k, v, v > 0)",
    "[1, 2].exists(i, v, i == 1 && v == 2)",
    "[1, 2, 3].existsOne(i, v, v == 2)",
    "[1, 2].transformList(i, v, v * 2) == [2, 4]",
    "[1, 2, 3].transformList(i, v, i > 0, v) == [2, 3]",
    "{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}",
    "{'a': 1}.transformMapEntry(k, v, {v: k}) == {1: 'a'}",
]


@pytest.mark.parametrize("expression", TRUE_EXAMPLES)
def test_documented_examples_evaluate_as_upstream(expression: str) -> None:
    issues = compile_selector(expression, GATES, stored=True).issues
    if issues and all("expected type '" in i.detail for i in issues):
        # upstream refuses aggregate literals mixing types (kube-apiserver v1.37.2 does), as we do
        return
    assert evaluate(expression, stored=True) is True


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "url('../relative-path') == url('/x')",
            "URL parse error during conversion from string: "
            'parse "../relative-path": invalid URI for request',
        ),
        (
            "url('https://a:b:c/') == url('/x')",
            "URL parse error during conversion from string: "
            'parse "https://a:b:c/": invalid port ":c" after host',
        ),
        ("[].min() == 1", "min called on empty list"),
        ("[].max() == 1", "max called on empty list"),
        (
            "ip('::ffff:1.2.3.4') == ip('::1')",
            'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed',
        ),
        ("ip('fe80::1%eth0') == ip('::1')", 'IP address "fe80::1%eth0" with zone value is not allowed'),
        (
            "ip('127.0.0.256') == ip('::1')",
            'IP Address "127.0.0.256" parse error during conversion from string: ParseAddr("127.0.0.256"): '
            "unable to parse IP",
        ),
        (
            "cidr('192.168.0.0/33') == cidr('::1/128')",
            "network address parse error during conversion from string: network address parse error during "
            'conversion from string: netip.ParsePrefix("192.168.0.0/33"): prefix length out of range',
        ),
        # a pattern known only when evaluating (a constant one fails when the program is built)
        ("'a'.find('(' + '') == ''", "Illegal regex: error parsing regexp: "),
        ("'abc'.substring(1, 4) == ''", "index out of range: 4"),
        ("'abc'.substring(2, 1) == ''", "invalid substring range. start: 2, end: 1"),
    ],
)
def test_runtime_errors_carry_upstream_messages(expression: str, message: str) -> None:
    assert runtime_error(expression).startswith(message)


@pytest.mark.parametrize(
    ("expression", "type_name"),
    [
        ("url('/x')", "kubernetes.URL"),
        ("ip('::1')", "net.IP"),
        ("cidr('::1/128')", "net.CIDR"),
        ("format.uuid()", "kubernetes.NamedFormat"),
    ],
)
def test_non_bool_results_name_upstream_types(expression: str, type_name: str) -> None:
    """Upstream refuses these at validation (result type); stored, they fail at runtime with the type name."""
    result = compile_selector(expression, GATES, stored=True)
    assert result.issues and type_name in result.issues[0].detail


@pytest.mark.parametrize(
    "expression",
    [
        "ip('::1').isGreaterThan(ip('::2'))",
        "cidr('::1/128').containsIP(1)",
        "url('/x').getHost() == 1",
        "[1, 2].sum() == 'a'",
        "'abc'.find(1) == ''",
    ],
)
def test_type_errors_are_still_refused(expression: str) -> None:
    detail = compile_selector(expression, GATES).issues[0].detail
    assert detail.startswith("compilation failed: ERROR: <input>:1:")
    assert "found no matching overload for" in detail


LISTS = device_input(
    "dra.net",
    {
        "ips": {"strings": ["10.0.0.1", "fd00::1"]},
        "name": {"string": "eth0eth0"},
        "mtus": {"ints": [1500, 9000]},
    },
    {},
)


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["dra.net"].ips.indexOf("fd00::1") == 1',
        'device.attributes["dra.net"].ips.lastIndexOf("10.0.0.1") == 0',
        'device.attributes["dra.net"].name.indexOf("eth") == 0',
        'device.attributes["dra.net"].name.lastIndexOf("eth") == 4',
        'device.attributes["dra.net"].name.indexOf("eth", 1) == 4',
        'device.attributes["dra.net"].ips.max() == "fd00::1"',
        'device.attributes["dra.net"].ips.min() == "10.0.0.1"',
        'device.attributes["dra.net"].mtus.sum() == 10500 && device.attributes["dra.net"].mtus.isSorted()',
    ],
)
def test_list_functions_on_attribute_values_decide_at_runtime(expression: str) -> None:
    """An attribute is `dyn` to the checker: a string or a list receiver is resolved when it runs."""
    gates = FeatureGates.parse("DRAListTypeAttributes=true")
    assert compiled(expression, gates).matches(LISTS) is True


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["dra.net"].ips.all(ip, isIP(ip))',
        'device.attributes["dra.net"].ips.exists(a, cidr("fd00::/8").containsIP(a))',
        'device.attributes["dra.net"].ips.map(a, ip(a).family()).sum() == 10',
    ],
)
def test_loops_parsing_attribute_list_elements_are_too_complex_and_run_when_stored(expression: str) -> None:
    """cel-go gives an attribute list's elements no size (upstream's compiler with DRAListTypeAttributes on
    estimates these past any limit): a new selector is too complex, a stored one runs."""
    gates = FeatureGates.parse("DRAListTypeAttributes=true")
    assert compile_selector(expression, gates).issues == [
        CelIssue("forbidden", "too complex, exceeds cost limit")
    ]
    stored = compile_selector(expression, gates, stored=True)
    assert stored.issues == [] and stored.program is not None
    assert stored.program.matches(LISTS) is True
