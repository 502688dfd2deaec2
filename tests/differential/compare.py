"""Comparing our verdict with the real API server's, and naming each disagreement by a key that
docs/divergences.md can list.

A key is `Kind|category|field|reason`, the field with indices and map keys as `[*]`:

* `we-deny` / `we-allow`: the verdicts differ (we refuse what the server accepts / the reverse); the field and
  reason are those of the first cause of the side that refuses (`-` for a 400).
* `code`: both refuse, with different HTTP codes.
* `cause-missing` / `cause-extra`: a (field, reason) the server gives and we do not / we give and it does not.
* `message`: a cause matched by field and reason, or a 400, whose messages differ; CEL messages equal once
  their type text is masked are not disagreements but counted as `cel-type-text` (DESIGN, "CEL messages").
* `order`: the same causes in another order (a map's entries in any order: Go's map order is random).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dra_capacity.apiverdict import Cause, Verdict

# The code of a verdict the server never gave: it dropped the connection on that object every time while it
# still answered /readyz (a panic in its handler; docs/divergences.md lists the one known, on 1.36).
DROPPED = 0

_INDEX = re.compile(r"\[[^\]]*\]")
# The type text cel-cpp and cel-go render differently: overload argument lists and type names in quotes.
_CEL_TYPES = re.compile(r"(applied to |type |found |expected )'[^'\n]*'")
# The result type of a selector that is not bool, unquoted (`list(dyn)` here, `list(google.protobuf.Any)`
# upstream: an attribute's value is `any` there).
_RESULT_TYPE = re.compile(r"(must evaluate to bool or the unknown type, not )[\w.()<>, ]+")
DIVERGENCES = Path(__file__).resolve().parents[2] / "docs" / "divergences.md"
STRICT = "strict decoding error"
_CEL_ERROR = re.compile(r"ERROR: <input>:\d+:\d+: ([^\n(]*?)(?: applied to|\(|\n|$)")
# `differential-key: `KEY`` applies to every release; `differential-key (1.38): `KEY`` to those named.
_LISTED = re.compile(r"differential-key(?: \(([0-9., ]+)\))?: `([^`]+)`")


def generic(path: str) -> str:
    """`spec.selectors[3].cel` -> `spec.selectors[*].cel`."""
    return _INDEX.sub("[*]", path)


def cel_masked(message: str) -> str:
    return _RESULT_TYPE.sub(r"\1…", _CEL_TYPES.sub(r"\1'…'", message))


@dataclass(frozen=True)
class Disagreement:
    key: str
    detail: str


@dataclass
class Comparison:
    """The disagreements found on one object, and the CEL type-text differences (allowed, counted)."""

    disagreements: list[Disagreement] = field(default_factory=list)
    cel_type_text: int = 0

    @property
    def verdict(self) -> bool:
        """Whether the verdicts themselves differ."""
        return any(d.key.split("|")[1] in ("we-deny", "we-allow") for d in self.disagreements)


def _key(kind: str, category: str, path: str, reason: str) -> str:
    return f"{kind}|{category}|{generic(path) or '-'}|{reason or '-'}"


def cel_reason(reason: str, message: str) -> str:
    """A cause's reason, with the first CEL compile error's text (types masked) when it has one, so each
    kind of CEL disagreement is a key of its own."""
    cel = _CEL_ERROR.search(message)
    if cel is None:
        return reason
    text = cel_masked(cel.group(1)).strip().replace("[", "(").replace("]", ")")
    return f"{reason}:{text}"


def _first(verdict: Verdict) -> tuple[str, str]:
    if verdict.causes:
        c = verdict.causes[0]
        return c.field, cel_reason(c.reason, c.message)
    return "-", str(verdict.code)


def compare(kind: str, ours: Verdict, theirs: Verdict) -> Comparison:
    out = Comparison()
    add = out.disagreements.append
    if theirs.code == DROPPED:  # no answer to compare: only whether we would have stored it
        category = "server-dropped"
        key = _key(kind, category, "-", "ours-accepted" if ours.allowed else "ours-refused")
        add(Disagreement(key, f"ours {_brief(ours)}; server: {theirs.message}"))
        return out
    if ours.allowed != theirs.allowed:
        category = "we-deny" if theirs.allowed else "we-allow"
        path, reason = _first(ours if theirs.allowed else theirs)
        detail = f"ours {_brief(ours)}; server {_brief(theirs)}"
        add(Disagreement(_key(kind, category, path, reason), detail))
        return out
    if ours.allowed:
        return out
    if ours.code != theirs.code:
        add(
            Disagreement(_key(kind, "code", *_first(theirs)), f"ours {_brief(ours)}; server {_brief(theirs)}")
        )
        return out
    if not theirs.causes and not ours.causes:
        if ours.message != theirs.message:
            # A wrong JSON type: Go's decoder words it with Go type names, which we do not reproduce.
            what = str(theirs.code) if STRICT in ours.message else f"{theirs.code}-type"
            detail = f"{ours.message!r} != {theirs.message!r}"
            add(Disagreement(_key(kind, "message", "-", what), detail))
        return out
    mine = Counter((c.field, c.reason) for c in ours.causes)
    server = Counter((c.field, c.reason) for c in theirs.causes)
    for (path, reason), n in (server - mine).items():
        texts = [c.message for c in theirs.causes if (c.field, c.reason) == (path, reason)]
        key = _key(kind, "cause-missing", path, cel_reason(reason, texts[0]))
        add(Disagreement(key, f"x{n} {path}: {texts[0]}"))
    for (path, reason), n in (mine - server).items():
        texts = [c.message for c in ours.causes if (c.field, c.reason) == (path, reason)]
        add(
            Disagreement(
                _key(kind, "cause-extra", path, cel_reason(reason, texts[0])), f"x{n} {path}: {texts[0]}"
            )
        )
    pairs = _matched(ours.causes, theirs.causes)
    for a, b in pairs:
        if a.message == b.message:
            continue
        if cel_masked(a.message) == cel_masked(b.message):
            out.cel_type_text += 1
            continue
        reason = cel_reason(b.reason, _first_difference(a.message, b.message))  # CEL: the server's error
        detail = f"{b.field}: ours {a.message!r} != {b.message!r}"
        add(Disagreement(_key(kind, "message", b.field, reason), detail))
    if not out.disagreements and _ordered(ours) != _ordered(theirs):
        add(Disagreement(_key(kind, "order", "-", "-"), f"ours {_fields(ours)}; server {_fields(theirs)}"))
    return out


def _first_difference(ours: str, theirs: str) -> str:
    """The first of the server's CEL errors that ours does not match (a message may hold several)."""
    mine = ours.split("\nERROR: ")
    server = theirs.split("\nERROR: ")
    for i, text in enumerate(server):
        if i >= len(mine) or mine[i] != text:
            return text if i == 0 else "ERROR: " + text
    return theirs


def _matched(ours: Iterable[Cause], theirs: Iterable[Cause]) -> list[tuple[Cause, Cause]]:
    """Causes paired by (field, reason): equal messages first (the server reports a map's keys, labels for
    one, in no fixed order), then the rest in order within each group."""
    pending: dict[tuple[str, str], list[Cause]] = {}
    for c in theirs:
        pending.setdefault((c.field, c.reason), []).append(c)
    out = []
    rest = []
    for c in ours:
        group = pending.get((c.field, c.reason), [])
        if c in group:
            group.remove(c)
            out.append((c, c))
        else:
            rest.append(c)
    for c in rest:
        group = pending.get((c.field, c.reason))
        if group:
            out.append((c, group.pop(0)))
    return out


def _ordered(v: Verdict) -> list[object]:
    """The causes' order, each map's entries taken as a set: a run of causes with the same field and reason
    (a map's keys, labels for one), or under the same map (`attributes` and `attributes[key]...`: Go visits
    a map's keys in a random order, each key's errors then its item's)."""
    out: list[object] = []
    run: list[tuple[str, str]] = []
    run_map = ""
    for c in v.causes:
        cause = (c.field, c.reason)
        group = _map_of(c.field)
        if run and group == run_map:
            run.append(cause)
            continue
        if run:
            out.append(tuple(sorted(set(run))))
        run, run_map = [cause], group
    if run:
        out.append(tuple(sorted(set(run))))
    return out


_MAP_KEY = re.compile(r"\[(?![0-9]+\])")


def _map_of(path: str) -> str:
    """The path of the map a field is in or under (`spec.devices[0].attributes[a].int` ->
    `spec.devices[0].attributes`: a bracket that is not a list index is a map key), else the field itself."""
    m = _MAP_KEY.search(path)
    return path[: m.start()] if m else path


def _fields(v: Verdict) -> str:
    return ", ".join(f"{c.field}:{c.reason}" for c in v.causes)


def _brief(v: Verdict) -> str:
    if v.allowed:
        return "allowed"
    if not v.causes:
        return f"{v.code} {v.message[:300]!r}"
    first = v.causes[0]
    return f"{v.code} [{len(v.causes)}] {first.field}: {first.message[:300]!r}"


def listed_keys(path: Path = DIVERGENCES, release: str | None = None) -> list[str]:
    """The disagreement keys (globs) docs/divergences.md lists for `release` (None: those of every
    release), each beside its reason and test."""
    out = []
    for releases, key in _LISTED.findall(path.read_text()):
        named = {r.strip() for r in releases.split(",") if r.strip()}
        if not named or (release is not None and release in named):
            out.append(key)
    return out


def is_listed(key: str, listed: Iterable[str]) -> bool:
    """Whether a listed pattern matches `key`; `*` matches anything, every other character itself (so `[*]`
    in a field path is literal)."""
    return any(_pattern(p).fullmatch(key) for p in listed)


@functools.cache
def _pattern(glob: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in glob.split("*")))
