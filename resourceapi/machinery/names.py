"""Name formats with upstream's exact messages: DNS-1123, label keys, C identifiers, DRA qualified names,
driver names and extended-resource names.

Sources: apimachinery `pkg/util/validation/validation.go` and `pkg/api/validate/content` (the `is_*` message
lists), `pkg/apis/core/validation` (`ValidateCSIDriverName`), `pkg/apis/resource/validation` (qualified
names, newest rules) and `pkg/apis/core/v1/helper` (`IsExtendedResourceName`). Lengths are Go `len`: bytes.
"""

from __future__ import annotations

import functools
import random
import re
import secrets

from resourceapi.api.limits import (
    DEVICE_MAX_ID_LENGTH,
    DNS1123_LABEL_MAX_LENGTH,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    DRIVER_NAME_MAX_LENGTH,
    GENERATED_NAME_BASE_MAX,
    GENERATED_NAME_SUFFIX_LENGTH,
    LABEL_KEY_NAME_MAX_LENGTH,
)
from resourceapi.machinery.field import OMIT, ErrorType, FieldError, Path, invalid, required, too_long

DEFAULT_RESOURCE_REQUESTS_PREFIX = "requests."
NAME_GENERATOR_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
RESOURCE_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"

DNS1123_LABEL_ERR_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_ERR_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
LABEL_KEY_ERR_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
C_IDENTIFIER_ERR_MSG = (
    "a valid C identifier must start with alphabetic character or '_', "
    "followed by a string of alphanumeric characters or '_'"
)
EXTENDED_RESOURCE_NAME_DETAIL = "must be a valid extended resource name"
FULLY_QUALIFIED_NAME_DETAIL = "a fully qualified name must be a domain and a name separated by a slash"

_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)
_LABEL_KEY_RE = re.compile(LABEL_KEY_FMT)
_C_IDENTIFIER_RE = re.compile(C_IDENTIFIER_FMT)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery `RegexError`, including its double space before each ` or `."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    out = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            out += " or "
        out += f"'{example}', "
    return out + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """`pkg/util/validation.MaxLenError` (characters)."""
    return f"must be no more than {length} characters"


def max_len_bytes_error(length: int) -> str:
    """`pkg/api/validate/content.MaxLenError` (bytes), used by the declarative formats since 1.35."""
    return f"must be no more than {length} bytes"


def go_len(value: str) -> int:
    """A string's length as Go counts it (UTF-8 bytes; a lone surrogate counts as Go's replacement rune)."""
    return len(value.encode("utf-8", "surrogatepass"))


def _subdomain_messages(value: str, max_len: str) -> list[str]:
    errs: list[str] = []
    if go_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len)
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """`validation.IsDNS1123Subdomain`: messages, `[]` when valid (length in "characters")."""
    return _subdomain_messages(value, max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))


def is_dns1123_subdomain_content(value: str) -> list[str]:
    """`content.IsDNS1123Subdomain`: as above, with the 1.35+ "must be no more than 253 bytes" wording."""
    return _subdomain_messages(value, max_len_bytes_error(DNS1123_SUBDOMAIN_MAX_LENGTH))


def is_dns1123_label(value: str) -> list[str]:
    """`validation.IsDNS1123Label`: messages, `[]` when valid."""
    errs: list[str] = []
    if go_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_ERR_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """`validation.IsQualifiedName` (= `content.IsLabelKey`): an optional DNS prefix, '/', a name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain_content(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif go_len(name) > LABEL_KEY_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_bytes_error(LABEL_KEY_NAME_MAX_LENGTH))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_c_identifier(value: str) -> list[str]:
    """`content.IsCIdentifier`: format only, not length."""
    if _C_IDENTIFIER_RE.fullmatch(value):
        return []
    return [regex_error(C_IDENTIFIER_ERR_MSG, C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]


def validate_object_name(name: str, path: Path) -> list[FieldError]:
    """A metadata name as `validate.LongName` checks it (1.35+). An empty name is the caller's to report."""
    return [invalid(path, name, msg) for msg in is_dns1123_subdomain_content(name)]


def validate_driver_name(name: str, path: Path) -> list[FieldError]:
    """`ValidateCSIDriverName` as DRA uses it: empty is Required only, then Too long, then the DNS subdomain
    check on the lowercased name (so upper case is accepted)."""
    if not name:
        return [required(path, "")]
    errs: list[FieldError] = []
    if go_len(name) > DRIVER_NAME_MAX_LENGTH:
        errs.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    errs.extend(invalid(path, name, msg) for msg in is_dns1123_subdomain(name.lower()))
    return errs


def validate_c_identifier(identifier: str, path: Path) -> list[FieldError]:
    """`validateCIdentifier` (and 1.37's declarative twin): at most 32 bytes, then the C identifier rule."""
    errs: list[FieldError] = []
    if go_len(identifier) > DEVICE_MAX_ID_LENGTH:
        errs.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    errs.extend(invalid(path, identifier, msg) for msg in is_c_identifier(identifier))
    return errs


def validate_qualified_name(name: str, path: Path) -> list[FieldError]:
    """DRA `QualifiedName` (attribute and capacity keys), newest upstream rules: `<C identifier>` or
    `<domain>/<C identifier>`, identifier at most 32 bytes, domain a driver name, at most one slash.
    Errors are reported at `path`, which the caller chooses."""
    parts = name.split("/")
    if len(parts) == 1:
        return validate_c_identifier(parts[0], path)
    if len(parts) == 2:
        domain, identifier = parts
        errs: list[FieldError] = []
        if not domain:
            errs.append(invalid(path, "", "the domain must not be empty"))
        else:
            errs.extend(validate_driver_name(domain, path))
        if not identifier:
            errs.append(invalid(path, "", "the name must not be empty"))
        else:
            errs.extend(validate_c_identifier(identifier, path))
        return errs
    return [invalid(path, name, "must not contain more than one slash")]


def validate_fully_qualified_name(name: str, path: Path) -> list[FieldError]:
    """DRA `FullyQualifiedName` (matchAttribute, distinctAttribute): a qualified name with a domain."""
    errs = validate_qualified_name(name, path)
    if "/" not in name:
        errs.append(invalid(path, name, FULLY_QUALIFIED_NAME_DETAIL))
    return errs


@functools.lru_cache(maxsize=4096)
def is_extended_resource_name(name: str) -> bool:
    """`v1helper.IsExtendedResourceName`: domain-prefixed, no `kubernetes.io/` anywhere (a substring test),
    no `requests.` prefix, and `requests.<name>` a valid qualified name."""
    if "/" not in name or RESOURCE_DEFAULT_NAMESPACE_PREFIX in name:
        return False  # native (un-prefixed or *kubernetes.io/) resource
    if name.startswith(DEFAULT_RESOURCE_REQUESTS_PREFIX):
        return False
    return not is_qualified_name(DEFAULT_RESOURCE_REQUESTS_PREFIX + name)


def validate_extended_resource_name(name: str, path: Path) -> list[FieldError]:
    """`spec.extendedResourceName`'s handwritten rule: `Invalid value: "<name>": must be a valid extended
    resource name`."""
    if is_extended_resource_name(name):
        return []
    return [invalid(path, name, EXTENDED_RESOURCE_NAME_DETAIL)]


EXTENDED_RESOURCE_NAME_NO_DOMAIN = "a name must be a domain-prefixed path, such as 'example.com/my-prop'"
EXTENDED_RESOURCE_NAME_NATIVE = 'must not have "kubernetes.io/" domain'
EXTENDED_RESOURCE_NAME_REQUESTS = 'must not have "requests." prefix'


def extended_resource_name_messages(name: str) -> list[str]:
    """The declarative format `k8s-extended-resource-name` (DeviceClass `spec.extendedResourceName`, 1.37):
    every reason `is_extended_resource_name` would say no, as measured against kube-apiserver v1.37.2
    (tests/differential): no domain, or a `kubernetes.io/` domain; a `requests.` prefix; then the qualified
    name checks of `requests.<name>`."""
    errs: list[str] = []
    if "/" not in name:
        errs.append(EXTENDED_RESOURCE_NAME_NO_DOMAIN)
    elif RESOURCE_DEFAULT_NAMESPACE_PREFIX in name:
        errs.append(EXTENDED_RESOURCE_NAME_NATIVE)
    if name.startswith(DEFAULT_RESOURCE_REQUESTS_PREFIX):
        errs.append(EXTENDED_RESOURCE_NAME_REQUESTS)
    errs.extend(is_qualified_name(DEFAULT_RESOURCE_REQUESTS_PREFIX + name))
    return errs


DNS1123_SUBDOMAIN_CASELESS_ERR_MSG = (
    "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def validate_opaque_driver_name(name: str, path: Path) -> list[FieldError]:
    """An opaque configuration's `driver` under 1.37's declarative validation (format
    `k8s-long-name-caseless`, max length 63), as kube-apiserver v1.37.2 reports it: Required when empty, else
    the case-insensitive subdomain check, then Too long in characters."""
    if not name:
        return [required(path, "")]
    errs: list[FieldError] = []
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(name.lower()):
        message = regex_error(DNS1123_SUBDOMAIN_CASELESS_ERR_MSG, DNS1123_SUBDOMAIN_FMT, "Example.com")
        errs.append(invalid(path, name, message))
    if go_len(name) > DRIVER_NAME_MAX_LENGTH:
        detail = f"may not be more than {DRIVER_NAME_MAX_LENGTH} characters"
        errs.append(FieldError(ErrorType.TOO_LONG, str(path), OMIT, detail))
    return errs


def generated_name_base(prefix: str) -> str:
    """The part of a generateName prefix the API server keeps: at most 58 bytes (Go slices bytes)."""
    return prefix.encode("utf-8")[:GENERATED_NAME_BASE_MAX].decode("utf-8", errors="replace")


def generate_name(prefix: str, rng: random.Random | None = None) -> str:
    """A name as the API server makes it from `generateName` (SimpleNameGenerator.GenerateName); `rng` makes
    the suffix reproducible (simulate --seed), else it is drawn as the API server draws it."""
    choice = rng.choice if rng is not None else secrets.choice
    suffix = "".join(choice(NAME_GENERATOR_ALPHABET) for _ in range(GENERATED_NAME_SUFFIX_LENGTH))
    return generated_name_base(prefix) + suffix
