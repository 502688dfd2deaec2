"""`validation.IsValidInterfaceAddress` (k8s.io/apimachinery/pkg/util/validation/ip.go): an IP address with
its prefix length, as `k8s.io/utils/net.ParseCIDRSloppy` parses it (Go's older `net.ParseCIDR`, which takes
IPv4 octets with leading zeros as decimal), and in the canonical form Go's `net.IP.String()` prints.

A network device's `status.devices[].networkData.ips` of a ResourceClaim holds such values.
"""

from __future__ import annotations

import ipaddress

from resourceapi.machinery.field import FieldError, Path, go_quote, invalid

_BIG = 0xFFFFFF
_HEX = "0123456789abcdefABCDEF"
_NOT_CIDR = "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"


def _dtoi(s: str) -> tuple[int, int, bool]:
    """Go's `dtoi`: the decimal at the start of `s`, the characters read, and whether it is one."""
    n = i = 0
    while i < len(s) and "0" <= s[i] <= "9":
        n = n * 10 + ord(s[i]) - 48
        if n >= _BIG:
            return _BIG, i, False
        i += 1
    if i == 0:
        return 0, 0, False
    return n, i, True


def _xtoi(s: str) -> tuple[int, int, bool]:
    n = i = 0
    while i < len(s) and s[i] in _HEX:
        n = n * 16 + int(s[i], 16)
        if n >= _BIG:
            return 0, i, False
        i += 1
    if i == 0:
        return 0, i, False
    return n, i, True


def _parse_ipv4(s: str) -> bytes | None:
    """`parseIPv4` without the leading-zero check (sloppy): four decimal octets."""
    out = bytearray()
    for i in range(4):
        if not s:
            return None
        if i > 0:
            if s[0] != ".":
                return None
            s = s[1:]
        n, c, ok = _dtoi(s)
        if not ok or n > 0xFF:
            return None
        s = s[c:]
        out.append(n)
    if s:
        return None
    return bytes(out)


def _parse_ipv6(s: str) -> bytes | None:
    """`parseIPv6` (sloppy: an embedded IPv4 tail may have leading zeros); no zones."""
    ip = bytearray(16)
    ellipsis = -1
    if len(s) >= 2 and s[0] == ":" and s[1] == ":":
        ellipsis = 0
        s = s[2:]
        if not s:
            return bytes(ip)
    i = 0
    while i < 16:
        n, c, ok = _xtoi(s)
        if not ok or n > 0xFFFF:
            return None
        if c < len(s) and s[c] == ".":
            if ellipsis < 0 and i != 12:
                return None
            if i + 4 > 16:
                return None
            ip4 = _parse_ipv4(s)
            if ip4 is None:
                return None
            ip[i : i + 4] = ip4
            s = ""
            i += 4
            break
        ip[i] = n >> 8
        ip[i + 1] = n & 0xFF
        i += 2
        s = s[c:]
        if not s:
            break
        if s[0] != ":" or len(s) == 1:
            return None
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                return None
            ellipsis = i
            s = s[1:]
            if not s:
                break
    if s:
        return None
    if i < 16:
        if ellipsis < 0:
            return None
        n = 16 - i
        for j in range(i - 1, ellipsis - 1, -1):
            ip[j + n] = ip[j]
        for j in range(ellipsis + n - 1, ellipsis - 1, -1):
            ip[j] = 0
    elif ellipsis >= 0:
        return None
    return bytes(ip)


_V4_IN_V6 = bytes(10) + b"\xff\xff"


def _ip_string(ip: bytes) -> str:
    """Go's `net.IP.String()`: dotted for IPv4 and IPv4-mapped addresses, RFC 5952 for IPv6."""
    if len(ip) == 4:
        return ".".join(str(b) for b in ip)
    if ip[:12] == _V4_IN_V6:
        return ".".join(str(b) for b in ip[12:])
    return ipaddress.IPv6Address(ip).compressed


def parse_cidr_sloppy(value: str) -> tuple[bytes, int] | None:
    """`ParseCIDRSloppy`: the address (4 or 16 bytes) and prefix length, or None when it is no CIDR."""
    slash = value.find("/")
    if slash < 0:
        return None
    addr, mask = value[:slash], value[slash + 1 :]
    bits = 32
    ip = _parse_ipv4(addr)
    if ip is None:
        bits = 128
        ip = _parse_ipv6(addr)
    n, i, ok = _dtoi(mask)
    if ip is None or not ok or i != len(mask) or n < 0 or n > bits:
        return None
    return ip, n


def interface_address_errors(value: str, path: Path) -> list[FieldError]:
    """`IsValidInterfaceAddress`: a CIDR (`10.9.8.7/24`), in canonical form."""
    parsed = parse_cidr_sloppy(value)
    if parsed is None:
        return [invalid(path, value, _NOT_CIDR)]
    ip, size = parsed
    if len(ip) == 16 and ip[:12] == _V4_IN_V6 and size > 32:
        size -= 96  # "::ffff:192.168.0.1/120" -> "192.168.0.1/24"
    canonical = f"{_ip_string(ip)}/{size}"
    if value != canonical:
        return [invalid(path, value, f"must be in canonical form ({go_quote(canonical)})")]
    return []
