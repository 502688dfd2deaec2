"""The Kubernetes CEL format library (apiserver `pkg/cel/library/format.go`): named string validations.

`format.<name>()` is a `kubernetes.NamedFormat` (a tagged string of the name at evaluation) and
`<format>.validate(s)` gives `optional.none()` for a valid string, else `optional.of([messages...])`; the
evaluation rewrite (device.py) wraps `validate_messages` in `optional.ofNonZeroValue`. The validators are
apimachinery's (`NameIsDNSLabel` ..., `IsQualifiedName`, `IsValidLabelValue`) and kube-openapi strfmt's.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Callable
from typing import Any

from resourceapi.api.limits import DNS1123_LABEL_MAX_LENGTH
from resourceapi.cel import urls
from resourceapi.machinery.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    max_len_error,
    regex_error,
)

PREFIX = "\ue000F"

_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_ERR = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_DNS1035_RE = re.compile(_DNS1035_FMT)
_LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_UUID_RE = re.compile(
    r"^(?:[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12})$", re.IGNORECASE
)
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _mask_trailing_dash(s: str) -> str:
    """apimachinery `maskTrailingDash`: a prefix may end in '-' (a generateName)."""
    return s[:-1] + "a" if len(s) > 1 and s.endswith("-") else s


def _dns1035_label(s: str) -> list[str]:
    errs: list[str] = []
    if len(s.encode()) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1035_RE.fullmatch(s):
        errs.append(regex_error(_DNS1035_ERR, _DNS1035_FMT, "my-name", "abc-123"))
    return errs


def _label_value(s: str) -> list[str]:
    errs: list[str] = []
    if len(s.encode()) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(s):
        errs.append(regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _uri(s: str) -> list[str]:
    try:
        urls.parse(s)
    except urls.URLError as exc:
        return [str(exc).removeprefix("URL parse error during conversion from string: ")]
    return []


def _byte(s: str) -> list[str]:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date(s: str) -> list[str]:
    try:
        datetime.date.fromisoformat(s)
    except ValueError:
        return ["invalid date"]
    return [] if len(s) == 10 else ["invalid date"]


def _datetime(s: str) -> list[str]:
    if not _DATETIME_RE.match(s):
        return ["invalid datetime"]
    try:
        datetime.datetime.fromisoformat(s.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return ["invalid datetime"]
    return []


# Every format upstream's ConstantFormats declares, by the name CEL uses.
FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": is_dns1123_label,
    "dns1123Subdomain": is_dns1123_subdomain,
    "dns1035Label": _dns1035_label,
    "qualifiedName": is_qualified_name,
    "dns1123LabelPrefix": lambda s: is_dns1123_label(_mask_trailing_dash(s)),
    "dns1123SubdomainPrefix": lambda s: is_dns1123_subdomain(_mask_trailing_dash(s)),
    "dns1035LabelPrefix": lambda s: _dns1035_label(_mask_trailing_dash(s)),
    "labelValue": _label_value,
    "uri": _uri,
    "uuid": lambda s: [] if _UUID_RE.match(s) else ["does not match the UUID format"],
    "byte": _byte,
    "date": _date,
    "datetime": _datetime,
}


def is_value(v: Any) -> bool:
    return isinstance(v, str) and v.startswith(PREFIX)


def constant(name: str) -> str:
    """The evaluation-time value of `format.<name>()`."""
    return PREFIX + name


def named(name: str) -> str:
    """`format.named(name)` before `optional.ofNonZeroValue`: "" (none) for an unknown name."""
    return constant(name) if name in FORMATS else ""


def validate_messages(fmt: str, s: str) -> list[str]:
    """`<format>.validate(s)` before `optional.ofNonZeroValue`: the messages, [] when valid."""
    return list(FORMATS[fmt[len(PREFIX) :]](s))
