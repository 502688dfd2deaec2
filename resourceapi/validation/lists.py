"""upstream's list and map helpers (`validateSlice`, `validateSet`, `validateMap`, `truncateIfTooLong` in
pkg/apis/resource/validation/validation.go) over decoded JSON.

A handwritten check marked `MarkCoveredByDeclarative` (a list's size, its uniqueness, its items' or keys'
rules) is dropped by kube-apiserver 1.37 only when an enforced (Beta or standard) declarative error matches
it; that one is reported by the declarative pass, after every handwritten error. `size_covered=True` and the
like skip such a check here: pass them only where the declarative twin is enforced (not for `MarkAlpha`
rules). Go iterates maps in a random order; the keys are visited sorted here, and the differential compares
such causes as a set.

Every port writes a list's "over the limit: one Too many, else each item (and uniqueness)" with these; the
declarative halves pass `unique_first=True` (zz_generated checks uniqueness before the items). A claim status
update's coverage is conditional (its declarative rules ratchet), so claim_status.py tags these helpers'
results itself (`_Errors.hand_list`) instead of passing `*_covered`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from resourceapi.machinery.field import FieldError, Path, duplicate, too_many

ItemCheck = Callable[[Any, Path], list[FieldError]]


def validate_items(
    items: Sequence[Any], check: ItemCheck, path: Path, *, items_covered: bool = False
) -> list[FieldError]:
    """`validateItems`: each item's errors at `path[i]`."""
    if items_covered:
        return []
    errors: list[FieldError] = []
    for i, item in enumerate(items):
        errors.extend(check(item, path.index(i)))
    return errors


def validate_slice(
    items: Sequence[Any] | None,
    max_size: int,
    check: ItemCheck | None,
    path: Path,
    *,
    size_covered: bool = False,
    items_covered: bool = False,
) -> list[FieldError]:
    """`validateSlice`: over `max_size` (negative: no limit) is one Too many and nothing else (DoS guard).
    `check` None: only the size is judged (a declarative `MaxItems` whose items have no rules)."""
    items = items or ()
    if 0 <= max_size < len(items):
        return [] if size_covered else [too_many(path, len(items), max_size)]
    if check is None:
        return []
    return validate_items(items, check, path, items_covered=items_covered)


def validate_set(
    items: Sequence[Any] | None,
    max_size: int,
    check: ItemCheck | None,
    key: Callable[[Any], Hashable] | None,
    path: Path,
    *,
    size_covered: bool = False,
    items_covered: bool = False,
    uniqueness_covered: bool = False,
    shown: Callable[[Any], Any] | None = None,
    unique_first: bool = False,
) -> list[FieldError]:
    """`validateSet`: `validate_slice`, then `Duplicate value` at each repeated item's index. `check` None:
    the items have no rules of their own; `key` None: the item is its own key. `shown` gives the value the
    Duplicate error prints (default: the key). `unique_first`: the Duplicates before the items' errors, the
    order of 1.37's declarative code (zz_generated: `MaxItems`, then `validate.Unique*`, then each item)."""
    items = items or ()
    if 0 <= max_size < len(items):
        return [] if size_covered else [too_many(path, len(items), max_size)]
    errors = [] if check is None else validate_items(items, check, path, items_covered=items_covered)
    if uniqueness_covered:
        return errors
    dups = duplicates(items, path, key, shown if shown is not None else key)
    return dups + errors if unique_first else errors + dups


def duplicates(
    items: Sequence[Any],
    path: Path,
    key: Callable[[Any], Any] | None = None,
    shown: Callable[[Any], Any] | None = None,
) -> list[FieldError]:
    """`validate.ValSliceUnique` (and `validateSet`'s uniqueness check): a `Duplicate value` at each later
    index whose key (default: the item itself; unhashable ones compared by equality) an earlier item has,
    showing `shown(item)` (default: the item)."""
    errors: list[FieldError] = []
    hashed: set[Any] = set()
    unhashable: list[Any] = []
    for i, item in enumerate(items):
        k = key(item) if key is not None else item
        try:
            repeated = k in hashed
            hashed.add(k)
        except TypeError:
            repeated = k in unhashable
            unhashable.append(k)
        if repeated:
            errors.append(duplicate(path.index(i), shown(item) if shown is not None else item))
    return errors


def truncate_if_too_long(text: str, max_len: int) -> str:
    """`truncateIfTooLong`: a long map key shown with its middle cut out (`abc...xyz`), at least 16 bytes."""
    max_len = max(max_len, 16)
    raw = text.encode("utf-8")
    if len(raw) <= max_len:
        return text
    remaining = max_len - 3
    head = raw[: (remaining + 1) // 2]
    tail = raw[len(raw) - remaining // 2 :]
    return (head + b"..." + tail).decode("utf-8", errors="replace")


def validate_map(
    entries: Mapping[str, Any] | None,
    max_size: int,
    truncate_key_len: int,
    check_key: Callable[[str, Path], list[FieldError]],
    check_item: ItemCheck,
    path: Path,
    *,
    keys_covered: bool = False,
) -> list[FieldError]:
    """`validateMap`: over `max_size` is one Too many; else each key's errors at `path` and each item's at
    `path[key]` (the key truncated for display). Keys in sorted order (Go's is random)."""
    entries = entries or {}
    if 0 <= max_size < len(entries):
        return [too_many(path, len(entries), max_size)]
    errors: list[FieldError] = []
    for key in sorted(entries):
        if not keys_covered:
            errors.extend(check_key(key, path))
        errors.extend(check_item(entries[key], path.key(truncate_if_too_long(key, truncate_key_len))))
    return errors
