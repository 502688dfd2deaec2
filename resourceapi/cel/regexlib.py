"""The Kubernetes CEL regex library (apiserver `pkg/cel/library/regex.go`): `find` and `findAll`.

Patterns run on Python's `re`, which accepts RE2's syntax for the patterns selectors use (classes,
repetition, anchors, groups); like Go's `FindAllString`, an empty match right after a previous match is not
reported. A pattern Python cannot compile is a runtime error `Illegal regex: ...`, as upstream's.
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern.replace(r"\z", r"\Z"))
    except re.error as exc:
        raise ValueError(f"Illegal regex: error parsing regexp: {exc}") from None


def find(s: str, pattern: str) -> str:
    """`<string>.find(<string>)`: the leftmost match, or "" when none."""
    m = _compile(pattern).search(s)
    return m.group(0) if m else ""


def find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    """`<string>.findAll(<string>[, <int>])`: non-overlapping matches, at most `limit` when >= 0."""
    out: list[str] = []
    previous_end = -1
    for m in _compile(pattern).finditer(s):
        if limit >= 0 and len(out) >= limit:
            break
        if m.start() == m.end() == previous_end:
            continue
        out.append(m.group(0))
        previous_end = m.end()
    return out
