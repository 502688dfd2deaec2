"""What kubectl prints for an admission outcome (`k8s.io/kubectl/pkg/cmd/util/helpers.go`).

Used by `dra-capacity validate` so that offline output reads exactly like `kubectl apply` against a cluster
with the webhook installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from resourceapi.machinery.field import go_quote

RESOURCE = "deviceclass.resource.k8s.io"


def render_warnings(warnings: Sequence[str]) -> list[str]:
    """kubectl's default warning handler: one `Warning: <text>` line per warning header."""
    return [f"Warning: {w}" for w in warnings]


def render_success(name: str, update: bool) -> str:
    """`kubectl apply`'s success line: `deviceclass.resource.k8s.io/NAME created` (`configured` on update)."""
    return f"{RESOURCE}/{name} {'configured' if update else 'created'}"


def render_status(status: Mapping[str, Any]) -> str:
    """kubectl `checkErr` for a rejection, without the trailing newline.

    Reason `Invalid` with details: `The KIND "NAME" is invalid: FIELD: MESSAGE` for one cause, or that header
    followed by one `* FIELD: MESSAGE` line per (de-duplicated) cause. Other statuses: `Error from server
    (Reason): message`.
    """
    details = status.get("details")
    if status.get("reason") == "Invalid":
        if not isinstance(details, Mapping):
            msg = str(status.get("message") or "")
            return "The request is invalid" + (f": {msg}" if msg else "")
        kind = str(details.get("kind") or "")
        name = str(details.get("name") or "")
        header = f"The {kind} {go_quote(name)} is invalid" if kind or name else "The request is invalid"
        causes = _cause_lines(details.get("causes") or [])
        if not causes:
            return header
        if len(causes) == 1:
            return f"{header}: {causes[0]}"
        return "\n".join([f"{header}: ", *(f"* {c}" for c in causes)])
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    return f"Error from server ({reason}): {message}" if reason else f"Error from server: {message}"


def _cause_lines(causes: Sequence[Mapping[str, Any]]) -> list[str]:
    """`statusCausesToAggrError`: `field: message` per cause, exact duplicates skipped."""
    seen: set[str] = set()
    out: list[str] = []
    for cause in causes:
        line = f"{cause.get('field', '')}: {cause.get('message', '')}"
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out
