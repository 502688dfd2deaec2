"""The Kubernetes CEL IP and CIDR libraries (apiserver `pkg/cel/library/ip.go`, `cidr.go`).

The checker sees `net.IP` and `net.CIDR` (messages, messages.py). At evaluation an IP is a tagged string of
its canonical text (`netip.Addr.String()`), a CIDR a tagged `<address>/<bits>` with the address as written
(host bits kept, as `netip.ParsePrefix`), so CEL's native `==` is upstream's equality. Parsing uses Python's
`ipaddress` with Go `netip`'s acceptance rules as upstream applies them: no zones, no IPv4-mapped IPv6, no
leading zeros in IPv4 octets.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Any

IP_PREFIX = "\ue000I"
CIDR_PREFIX = "\ue000C"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class NetError(ValueError):
    """A string that is not an IP address or CIDR, with upstream's message."""


def _parse_addr(raw: str) -> Address:
    """`netip.ParseAddr` plus upstream's `parseIPAddr` refusals (zones, IPv4-mapped IPv6)."""
    try:
        addr = ipaddress.ip_address(raw)
    except ValueError:
        reason = f'ParseAddr("{raw}"): unable to parse IP'
        raise NetError(f'IP Address "{raw}" parse error during conversion from string: {reason}') from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.scope_id is not None:
        raise NetError(f'IP address "{raw}" with zone value is not allowed')
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise NetError(f'IPv4-mapped IPv6 address "{raw}" is not allowed')
    return addr


@functools.lru_cache(maxsize=4096)
def _addr_of(raw: str) -> Address:
    return _parse_addr(raw)


def _prefix_error(raw: str, reason: str) -> NetError:
    inner = f'network address parse error during conversion from string: netip.ParsePrefix("{raw}"): {reason}'
    return NetError(f"network address parse error during conversion from string: {inner}")


@functools.lru_cache(maxsize=4096)
def parse_cidr(raw: str) -> tuple[Address, int]:
    """`netip.ParsePrefix` (address as written, bits 0..BitLen, decimal without leading zeros) plus the
    IPv4-mapped refusal of upstream's `parseCIDR`."""
    text, sep, bits_text = raw.rpartition("/")
    if not sep:
        raise _prefix_error(raw, "no '/'")
    if "%" in text:
        raise _prefix_error(raw, "IPv6 zones cannot be present in a prefix")
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise _prefix_error(raw, f'ParseAddr("{text}"): unable to parse IP') from None
    if not bits_text.isdigit() or not bits_text.isascii() or (len(bits_text) > 1 and bits_text[0] == "0"):
        raise _prefix_error(raw, f'bad bits after slash: "{bits_text}"')
    bits = int(bits_text)
    if bits > addr.max_prefixlen:
        raise _prefix_error(raw, "prefix length out of range")
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise NetError(
            "network address parse error during conversion from string: "
            f'IPv4-mapped IPv6 address "{raw}" is not allowed'
        )
    return addr, bits


def is_ip_value(v: Any) -> bool:
    return isinstance(v, str) and v.startswith(IP_PREFIX)


def is_cidr_value(v: Any) -> bool:
    return isinstance(v, str) and v.startswith(CIDR_PREFIX)


def _ip(v: str) -> Address:
    return _addr_of(v[len(IP_PREFIX) :])


def _cidr(v: str) -> tuple[Address, int]:
    return parse_cidr(v[len(CIDR_PREFIX) :])


def ip(s: str) -> str:
    """`ip(string)`: a runtime error with upstream's message for anything `parseIPAddr` refuses."""
    return IP_PREFIX + str(_addr_of(s))


def is_ip(s: str) -> bool:
    try:
        _addr_of(s)
    except NetError:
        return False
    return True


def is_canonical(s: str) -> bool:
    """`ip.isCanonical(string)`: the text is `netip.Addr.String()` of itself."""
    return str(_addr_of(s)) == s


def ip_string(v: str) -> str:
    return v[len(IP_PREFIX) :]


def family(v: str) -> int:
    return _ip(v).version


def is_unspecified(v: str) -> bool:
    return _ip(v).is_unspecified


def is_loopback(v: str) -> bool:
    return _ip(v).is_loopback


def is_link_local_multicast(v: str) -> bool:
    """netip: IPv4 224.0.0.0/24, IPv6 ff02::/16."""
    a = _ip(v)
    if a.version == 4:
        return int(a) >> 8 == 0xE00000
    return int(a) >> 112 == 0xFF02


def is_link_local_unicast(v: str) -> bool:
    """netip: IPv4 169.254.0.0/16, IPv6 fe80::/10."""
    a = _ip(v)
    if a.version == 4:
        return int(a) >> 16 == 0xA9FE
    return int(a) >> 118 == 0xFE80 >> 6


def is_global_unicast(v: str) -> bool:
    """netip `IsGlobalUnicast`: not unspecified, broadcast, loopback, multicast or link-local unicast
    (private ranges count as global, as in Go)."""
    a = _ip(v)
    if a.version == 4 and int(a) == 0xFFFFFFFF:
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or is_link_local_unicast(v))


def cidr(s: str) -> str:
    addr, bits = parse_cidr(s)
    return f"{CIDR_PREFIX}{addr}/{bits}"


def is_cidr(s: str) -> bool:
    try:
        parse_cidr(s)
    except NetError:
        return False
    return True


def cidr_string(v: str) -> str:
    return v[len(CIDR_PREFIX) :]


def _network(v: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    addr, bits = _cidr(v)
    return ipaddress.ip_network(f"{addr}/{bits}", strict=False)


def contains_ip(v: str, other: str) -> bool:
    """`containsIP(IP|string)`: false across families (netip `Prefix.Contains`)."""
    addr = _ip(other) if is_ip_value(other) else _addr_of(other)
    net = _network(v)
    return addr.version == net.version and addr in net


def contains_cidr(v: str, other: str) -> bool:
    """`containsCIDR(CIDR|string)`: the other network lies inside this one (as upstream documents)."""
    inner = _network(other if is_cidr_value(other) else cidr(other))
    net = _network(v)
    return inner.version == net.version and inner.subnet_of(net)  # type: ignore[arg-type]


def cidr_ip(v: str) -> str:
    return IP_PREFIX + str(_cidr(v)[0])


def masked(v: str) -> str:
    net = _network(v)
    return f"{CIDR_PREFIX}{net.network_address}/{net.prefixlen}"


def prefix_length(v: str) -> int:
    return _cidr(v)[1]
