"""The HTTP envelope of an admission call: content type, body size, and the AdmissionReview v1 shape.

Everything here turns bad input into an `EnvelopeError(status, message)` (415, 413 or 400) that the server
sends as a one-line JSON body; nothing a client sends can raise anything else.

Body limit, sized on purpose (aiohttp's default of 1 MiB is too small). An AdmissionReview for an UPDATE
carries `object` and `oldObject`, two DeviceClasses. A maximal DeviceClass holds 32 selectors with a 10 KiB
CEL expression each and 32 configs with 10 KiB of opaque parameters each: 64 x 10,240 = 655,360 bytes of
content. The apiserver encodes the review with Go's encoding/json, which escapes `<`, `>` and `&` (common in
CEL) as `\\u003c` and friends: at worst 6 bytes on the wire per content byte, so 655,360 x 6 = 3,932,160
bytes per object and 7,864,320 bytes for both. One more MiB covers everything else (metadata and annotations,
managedFields, userInfo, the request's own fields, JSON structure): 7,864,320 + 1,048,576 = 8,912,896 bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, NoReturn

import orjson

from resourceapi.api.limits import (
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
    DEVICE_CONFIG_MAX_SIZE,
    DEVICE_SELECTORS_MAX_SIZE,
    OPAQUE_PARAMETERS_MAX_LENGTH,
)
from resourceapi.machinery.jsontypes import json_type
from resourceapi.machinery.objects import metadata_of

WORST_ESCAPE_FACTOR = 6  # "<" -> "\u003c"
OBJECTS_PER_REVIEW = 2  # object + oldObject
ENVELOPE_ALLOWANCE = 1024 * 1024
MAX_BODY_BYTES = (
    OBJECTS_PER_REVIEW
    * (
        DEVICE_SELECTORS_MAX_SIZE * CEL_SELECTOR_EXPRESSION_MAX_LENGTH
        + DEVICE_CONFIG_MAX_SIZE * OPAQUE_PARAMETERS_MAX_LENGTH
    )
    * WORST_ESCAPE_FACTOR
    + ENVELOPE_ALLOWANCE
)

# `/mutate-pods` sees Pod CREATEs only: one object, no `oldObject`. kube-apiserver refuses request bodies
# over 3 MiB (`MaxRequestBodyBytes`, k8s.io/apiserver/pkg/server/config.go), JSON and protobuf alike; the
# webhook receives the object re-encoded by Go's encoding/json. A string byte grows at most 6-fold there
# (`<`, `>`, `&` become `\u003c`); protobuf's framing grows too when field names are spelled out, typically
# 1.5 to 3-fold for a pod, and what fills 3 MiB of a pod is strings (env, args, annotations). So 6 x 3 MiB,
# plus one MiB for the review around it. A pod beyond it is refused (413), which the routing webhook's
# failurePolicy (Ignore) turns into "admitted unchanged": never a blocked pod.
APISERVER_MAX_REQUEST_BYTES = 3 * 1024 * 1024
MAX_POD_BODY_BYTES = APISERVER_MAX_REQUEST_BYTES * WORST_ESCAPE_FACTOR + ENVELOPE_ALLOWANCE

# The only content coding accepted: kube-apiserver never compresses a webhook request, and decompressing
# would let a few KiB on the wire become any amount of memory.
IDENTITY = "identity"

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
CONTENT_TYPE = "application/json"

# AdmissionRequest fields whose JSON type a Go webhook would enforce while decoding (admission/v1 types).
_OBJECT_FIELDS = ("kind", "resource", "requestKind", "requestResource", "userInfo")
_STRING_FIELDS = ("subResource", "requestSubResource", "name", "namespace", "operation")
_NULLABLE_OBJECT_FIELDS = ("object", "oldObject", "options")
_GVK = ("group", "version", "kind")
_GVR = ("group", "version", "resource")
_STRING_MEMBERS = {
    "kind": _GVK,
    "requestKind": _GVK,
    "resource": _GVR,
    "requestResource": _GVR,
    "userInfo": ("username", "uid"),
}


class EnvelopeError(Exception):
    """A request that is not a well-formed AdmissionReview call; `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Review:
    """A well-formed AdmissionReview: its `request` and the identifiers the server logs and counts."""

    request: dict[str, Any]
    uid: str
    operation: str
    name: str
    dry_run: bool


def _bad(message: str) -> NoReturn:
    raise EnvelopeError(400, message)


def check_content_type(media_type: str) -> None:
    """415 unless the media type (parameters stripped) is application/json, as the apiserver sends."""
    if media_type.lower() != CONTENT_TYPE:
        shown = media_type or "none"
        raise EnvelopeError(415, f"unsupported content type {json.dumps(shown)}: expected {CONTENT_TYPE}")


def check_length(content_length: int | None, limit: int = MAX_BODY_BYTES) -> None:
    """413 when the declared length already exceeds the limit (checked before reading the body)."""
    if content_length is not None and content_length > limit:
        raise too_large(limit)


def too_large(limit: int = MAX_BODY_BYTES) -> EnvelopeError:
    return EnvelopeError(413, f"request body is larger than the limit of {limit} bytes")


def check_content_encoding(value: str | None) -> None:
    """415 for any content coding but identity (RFC 9110 §15.5.16), checked before the body is read."""
    if value is None:
        return
    codings = [c.strip().lower() for c in value.split(",") if c.strip()]
    if any(c != IDENTITY for c in codings):
        raise EnvelopeError(
            415,
            f"unsupported content encoding {json.dumps(value[:100])}: the webhook accepts uncompressed "
            "bodies only (kube-apiserver never compresses its requests)",
        )


# A Go duration as `time.Duration.String()` writes it and `time.ParseDuration` reads it: `10s`, `1m30s`.
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_timeout(value: str | None) -> float | None:
    """The caller's deadline in seconds from the `?timeout=` query parameter kube-apiserver appends to the
    webhook URL (client-go `Request.Timeout`), or None when absent; 400 for what the apiserver never sends."""
    if value is None:
        return None
    text, seconds, pos = value.strip(), 0.0, 0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            break
        seconds += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not text or pos != len(text) or not seconds > 0:
        _bad(f"query parameter timeout={json.dumps(value[:100])} is not a positive duration such as 10s")
    return seconds


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_json(body: bytes) -> Any:
    """The JSON document of a body (orjson: several times faster than `json`, so a large review holds the
    interpreter lock for less). orjson also refuses what kube-apiserver, which re-encodes every object with
    Go's encoding/json, can never send: lone UTF-16 surrogates (Go decodes them to U+FFFD), NaN and Infinity,
    and numbers beyond float64. Raises EnvelopeError(400) naming what is wrong."""
    if not body.strip():
        _bad("request body is empty: expected an admission.k8s.io/v1 AdmissionReview")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        _explain(body, exc)


def _explain(body: bytes, exc: orjson.JSONDecodeError) -> NoReturn:
    """The message for a body orjson refused: the standard library's wording where it also refuses, else
    orjson's own (the only cases are strings and numbers the API server never sends)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        _bad(f"request body is not UTF-8 text (byte {err.start})")
    try:
        json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        _bad("request body is not valid JSON: nested too deeply")
    except ValueError as err:
        _bad(f"request body is not valid JSON: {err}")
    if "surrogate" in str(exc):
        _bad(
            f"request body is not valid JSON: {exc} (a lone UTF-16 surrogate escape, which kube-apiserver "
            "never sends)"
        )
    if "recursion" in str(exc):
        _bad("request body is not valid JSON: nested too deeply")
    _bad(f"request body is not valid JSON: {exc}")


def parse_review(body: bytes) -> Review:
    """Decode and check an AdmissionReview v1 body; raises EnvelopeError(400) naming what is wrong."""
    document = decode_json(body)
    if not isinstance(document, dict):
        _bad(f"request body must be a JSON object (AdmissionReview), not {json_type(document)}")
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if api_version != API_VERSION or kind != KIND:
        _bad(
            f"expected apiVersion {json.dumps(API_VERSION)} and kind {json.dumps(KIND)}, "
            f"got apiVersion {_shown(api_version)} and kind {_shown(kind)}"
        )
    if "request" not in document or document["request"] is None:
        _bad("request is required in an AdmissionReview sent to a webhook")
    request = document["request"]
    if not isinstance(request, dict):
        _bad(f"request must be an object, not {json_type(request)}")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        _bad("request.uid is required" if uid in (None, "") else "request.uid must be a string")
    for field in _OBJECT_FIELDS:
        if field in request and not isinstance(request[field], dict):
            _bad(f"request.{field} must be an object, not {json_type(request[field])}")
        for key, value in (request.get(field) or {}).items():
            if key in _STRING_MEMBERS.get(field, ()) and not isinstance(value, str):
                _bad(f"request.{field}.{key} must be a string, not {json_type(value)}")
    groups = (request.get("userInfo") or {}).get("groups")
    if groups is not None and not (isinstance(groups, list) and all(isinstance(g, str) for g in groups)):
        _bad("request.userInfo.groups must be an array of strings")
    for field in _STRING_FIELDS:
        if field in request and not isinstance(request[field], str):
            _bad(f"request.{field} must be a string, not {json_type(request[field])}")
    for field in _NULLABLE_OBJECT_FIELDS:
        if request.get(field) is not None and not isinstance(request[field], dict):
            _bad(f"request.{field} must be an object, not {json_type(request[field])}")
    dry_run = request.get("dryRun")
    if dry_run is not None and not isinstance(dry_run, bool):
        _bad(f"request.dryRun must be a boolean, not {json_type(dry_run)}")
    name = request.get("name") or _object_name(request)
    return Review(
        request=request,
        uid=uid,
        operation=request.get("operation") or "",
        name=name,
        dry_run=bool(dry_run),
    )


def _object_name(request: dict[str, Any]) -> str:
    for key in ("object", "oldObject"):
        name = metadata_of(request.get(key)).get("name")
        if isinstance(name, str):
            return name
    return ""


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return json.dumps(value[:100])
    return json_type(value)


def error_body(message: str) -> bytes:
    """The one-line JSON body of every non-200 answer."""
    return json.dumps({"error": message}, separators=(",", ":")).encode() + b"\n"
