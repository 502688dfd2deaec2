"""Admission warnings: short texts (at most 120 characters, as Kubernetes advises), kubectl's `Warning:`.

Names inside a warning can be up to 253 characters, so each text is built with `fit()`, which elides the
middle of the longest parts until the whole line fits.
"""

from __future__ import annotations

from resourceapi.extended import IMPLICIT_PREFIX

MAX_WARNING_LENGTH = 120
_ELLIPSIS = "..."


def shorten(text: str, limit: int) -> str:
    """`text` itself if it fits in `limit` characters, else its head and tail around `...`."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(_ELLIPSIS), 2)
    head = (keep + 1) // 2
    return text[:head] + _ELLIPSIS + text[len(text) - (keep - head) :]


def fit(template: str, **parts: str) -> str:
    """Format `template` with `parts`, shortening the longest part until the text fits 120 characters."""
    values = dict(parts)
    text = template.format(**values)
    while len(text) > MAX_WARNING_LENGTH:
        longest = max(values, key=lambda k: len(values[k]))
        excess = len(text) - MAX_WARNING_LENGTH
        current = values[longest]
        if len(current) <= 8:
            break
        values[longest] = shorten(current, max(len(current) - excess, 8))
        text = template.format(**values)
    return text[:MAX_WARNING_LENGTH]


def implicit_name_only(class_name: str) -> str:
    """KEP-6406 request without `extendedResourceName`: only the implicit name gets the capacity."""
    return fit(
        "capacity requests apply only to " + IMPLICIT_PREFIX + "{name}: extendedResourceName is unset",
        name=class_name,
    )


def annotation_ignored(annotation: str) -> str:
    """Field and annotation both present: the field wins."""
    return fit("annotation {key} is ignored: spec.extendedResourceCapacityRequests is set", key=annotation)


def not_dropped(what: str, gate: str) -> str:
    """A field the gate drop should have removed reached /validate (mutating webhook not registered?)."""
    return fit("{what} ignored: {gate} is off (no /mutate webhook?)", what=what, gate=gate)


def escaped_drop(what: str, gate: str) -> str:
    """A KEP-6406 request the gate drop should have removed reached /validate: the drop did not run, the value
    will be stored, so it is judged (invalid values denied)."""
    return fit("{what}: the drop did not run ({gate} off, no /mutate?); value judged", what=what, gate=gate)


def double_spelling(short: str, qualified: str) -> str:
    """Both `shares` and `<domain>/shares` requested: the allocator rejects it if the domain is the driver."""
    return fit(
        'capacity requested as both "{short}" and "{qualified}": '
        "the same capacity if the driver is the domain",
        short=short,
        qualified=qualified,
    )
