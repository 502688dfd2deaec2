"""Findings on fields the API server validates natively: warnings in the webhook, errors offline.

kube-apiserver runs its own validation of every DeviceClass field it knows (metadata, `spec.selectors`,
`spec.config`, `spec.extendedResourceName`) before it calls any validating webhook (`pkg/registry/resource/
deviceclass/strategy.go`, then the admission chain). An object that reaches `/validate` has therefore passed
those rules upstream; a denial from our copy of them can only be a false positive (a divergence in our copy)
or version skew, never a catch the API server missed. With `--native-rules warn` (the default) such findings
are warnings, a metric and a log line; with `deny` they reject as the API server would. The rules the API
server lacks (the KEP-6406 field and its annotation carrier) always deny.

Warnings must survive the API server's handling of webhook warnings: one line each, at most 120 characters
(CEL's source and caret lines are dropped), at most `MAX_NATIVE_WARNINGS` per response.
"""

from __future__ import annotations

import enum
import re

from resourceapi.machinery.field import FieldError
from webhook.deviceclass.warning_texts import MAX_WARNING_LENGTH, shorten

MAX_NATIVE_WARNINGS = 10
WARNING_PREFIX = "native rule: "
_SPACES = re.compile(r"\s+")
_CEL_HEADER = re.compile(r"ERROR: <input>:(\d+):(\d+): ")
_CONTAINER = " (in container '')"
_COMPILE_FAILED = "compilation failed: "
_ELLIPSIS = "..."
_MAX_VALUE = 16  # a selector is long and the user's own: its field path locates it
_QUOTED_VALUE = re.compile(r'^(Invalid value: )("(?:[^"\\]|\\.)*")')

# Metric label values: the top-level field a native rule guards (a bounded set).
RULE_FIELDS = ("metadata", "spec.selectors", "spec.config", "spec.extendedResourceName")
OTHER_FIELD = "other"


class NativeRules(enum.Enum):
    """`serve --native-rules`: what a finding on a natively validated field does."""

    WARN = "warn"
    DENY = "deny"


def rule_field(error: FieldError) -> str:
    """The guarded top-level field of an error (`spec.selectors` for `spec.selectors[2].cel.expression`)."""
    for name in RULE_FIELDS:
        if error.field == name or error.field.startswith((name + ".", name + "[")):
            return name
    return OTHER_FIELD


def condensed(error: FieldError) -> str:
    """`FIELD: MESSAGE` on one line: for a CEL compile error its first issue's header line only (no value, no
    source or caret lines; cel-go's `ERROR: <input>:` reduced to `L:C:`), for others a shortened value."""
    body = error.detail if error.detail.startswith(_COMPILE_FAILED) else error.body()
    first, _, rest = body.partition("\n")
    if rest and " | " in rest:
        body = first
    body = _CEL_HEADER.sub(r"\1:\2: ", _SPACES.sub(" ", body).strip()).replace(_CONTAINER, "")
    m = _QUOTED_VALUE.match(body)
    if m and len(m.group(2)) > _MAX_VALUE:
        body = m.group(1) + shorten(m.group(2), _MAX_VALUE) + body[m.end() :]
    return f"{error.field}: {body}"


def native_warning(error: FieldError) -> str:
    """The warning text for one native finding: prefix, field and message, at most 120 characters; a longer
    message loses its end (the field and the start of the message say what is wrong)."""
    text = WARNING_PREFIX + condensed(error)
    if len(text) <= MAX_WARNING_LENGTH:
        return text
    return text[: MAX_WARNING_LENGTH - len(_ELLIPSIS)] + _ELLIPSIS


def native_warnings(errors: list[FieldError]) -> list[str]:
    """At most `MAX_NATIVE_WARNINGS` texts; when there are more, the last one says how many were left out."""
    if len(errors) <= MAX_NATIVE_WARNINGS:
        return [native_warning(e) for e in errors]
    shown = [native_warning(e) for e in errors[: MAX_NATIVE_WARNINGS - 1]]
    left = len(errors) - len(shown)
    return [*shown, f"... and {left:,} more native-rule findings"]
