"""The Kubernetes CEL URL library (apiserver `pkg/cel/library/urls.go`, `pkg/cel/url.go`) for cel-expr-python.

The checker sees `kubernetes.URL` (a message, messages.py). At evaluation a URL is a tagged string of its
text. `url(s)` and `isURL(s)` accept what Go's `url.ParseRequestURI` accepts (an absolute URI or an absolute
path); the getters split the text as Go's `url.Parse` does (scheme, `//` authority, path, `?` query, `#`).
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

PREFIX = "\ue000U"

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*$")
_PORT = re.compile(r"^[0-9]*$")


class URLError(ValueError):
    """Not a URL for `url()`, with upstream's message."""


@dataclass(frozen=True)
class _Parts:
    scheme: str
    host: str
    path: str
    query: str


def _error(raw: str, reason: str) -> URLError:
    return URLError(f'URL parse error during conversion from string: parse "{raw}": {reason}')


@functools.lru_cache(maxsize=4096)
def parse(raw: str) -> _Parts:
    """Go `url.ParseRequestURI` acceptance, then `url.Parse`'s split (the fragment is not in the path)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise _error(raw, "net/url: invalid control character in URL")
    rest, _, _ = raw.partition("#")
    scheme = ""
    colon = rest.find(":")
    slash = rest.find("/")
    if colon > 0 and (slash == -1 or colon < slash) and _SCHEME.match(rest[:colon]):
        scheme, rest = rest[:colon].lower(), rest[colon + 1 :]
    elif colon == 0:
        raise _error(raw, "missing protocol scheme")
    if not scheme and not rest.startswith("/"):
        raise _error(raw, "invalid URI for request")
    rest, _, query = rest.partition("?")
    host = ""
    if rest.startswith("//") and (scheme or not rest.startswith("///")):
        authority, slash_at, path = rest[2:].partition("/")
        path = slash_at + path
        host = authority.rpartition("@")[2]
        _check_host(raw, host)
    else:
        path = rest
    return _Parts(scheme, host, path, query)


def _check_host(raw: str, host: str) -> None:
    if host.startswith("["):
        end = host.find("]")
        if end == -1:
            raise _error(raw, "missing ']' in host")
        port = host[end + 1 :]
        if port and (not port.startswith(":") or not _PORT.match(port[1:])):
            raise _error(raw, f'invalid port "{port}" after host')
        return
    colon = host.rfind(":")
    if colon != -1 and not _PORT.match(host[colon + 1 :]):
        raise _error(raw, f'invalid port "{host[colon:]}" after host')


def is_value(v: Any) -> bool:
    return isinstance(v, str) and v.startswith(PREFIX)


def url(s: str) -> str:
    parse(s)
    return PREFIX + s


def is_url(s: str) -> bool:
    try:
        parse(s)
    except URLError:
        return False
    return True


def _parts(v: str) -> _Parts:
    return parse(v[len(PREFIX) :])


def get_scheme(v: str) -> str:
    return _parts(v).scheme


def get_host(v: str) -> str:
    return _parts(v).host


def _split_host(host: str) -> tuple[str, str]:
    if host.startswith("["):
        end = host.find("]")
        return host[1:end], host[end + 2 :] if host[end + 1 : end + 2] == ":" else ""
    name, _, port = host.partition(":")
    return name, port


def get_hostname(v: str) -> str:
    return _split_host(_parts(v).host)[0]


def get_port(v: str) -> str:
    return _split_host(_parts(v).host)[1]


def get_escaped_path(v: str) -> str:
    """Go `EscapedPath`: the path with characters outside the path set percent-encoded."""
    path = urllib.parse.unquote(_parts(v).path)
    return urllib.parse.quote(path, safe="/;,:@&=+$!*'()~-._")


def get_query(v: str) -> dict[str, list[str]]:
    """Go `Query()`: `&`-separated pairs, unescaped, values in order; malformed pairs are dropped."""
    out: dict[str, list[str]] = {}
    for part in _parts(v).query.split("&"):
        if not part or ";" in part:
            continue
        key, _, value = part.partition("=")
        try:
            k = urllib.parse.unquote_plus(key, errors="strict")
            val = urllib.parse.unquote_plus(value, errors="strict")
        except UnicodeDecodeError:
            continue
        out.setdefault(k, []).append(val)
    return out
