"""CelCache: an LRU of compiled selectors keyed by (expression, environment); environments built once."""

from __future__ import annotations

import pytest

from resourceapi.cel import CelCache, EnvKey, compile_selector
from resourceapi.cel.cache import DEFAULT_MAX_BYTES, entry_bytes
from resourceapi.cel.env import checking_env
from resourceapi.gates import DRA_CONSUMABLE_CAPACITY, DRA_LIST_TYPE_ATTRIBUTES, FeatureGates

GATES = FeatureGates.defaults()
EXPR = 'device.attributes["d"].x == 1'


def test_second_compile_of_an_expression_is_a_hit() -> None:
    cache = CelCache()
    first = cache.compile(EXPR, GATES)
    assert cache.compile(EXPR, GATES) is first
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.size) == (1, 1, 1)


def test_environments_are_part_of_the_key() -> None:
    cache = CelCache()
    off = GATES.with_overrides(**{DRA_CONSUMABLE_CAPACITY: False})
    assert cache.compile("device.allowMultipleAllocations", off).issues
    assert not cache.compile("device.allowMultipleAllocations", GATES).issues
    assert cache.stats().misses == 2


def test_gates_that_give_the_same_environment_share_entries() -> None:
    cache = CelCache()
    cache.compile(EXPR, GATES)
    cache.compile(EXPR, GATES.with_overrides(DRAExtendedResource=False))
    assert cache.stats().hits == 1


def test_stored_and_new_expressions_are_cached_apart() -> None:
    cache = CelCache()
    cache.compile(EXPR, GATES)
    cache.compile(EXPR, GATES, stored=True)
    assert cache.stats().misses == 2


def _weight(expression: str) -> int:
    return entry_bytes(compile_selector(expression, GATES))


def test_least_recently_used_entry_is_evicted() -> None:
    a, b, c = (f'device.driver == "{x}"' for x in "abc")
    cache = CelCache(max_bytes=_weight(a) + _weight(b))
    cache.compile(a, GATES)
    cache.compile(b, GATES)
    cache.compile(a, GATES)  # refresh
    cache.compile(c, GATES)  # evicts b
    cache.compile(a, GATES)
    assert cache.stats().hits == 2
    cache.compile(b, GATES)
    assert cache.stats().misses == 4
    assert len(cache) == 2


def test_failed_compilations_are_cached_too() -> None:
    cache = CelCache()
    assert cache.compile("noSuchVar", GATES) is cache.compile("noSuchVar", GATES)


def test_cache_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        CelCache(max_bytes=0)


def test_the_cache_is_bounded_by_bytes_not_entries() -> None:
    """Long expressions weigh more: a budget holding many short entries holds few long ones."""
    short = 'device.driver == "a"'
    long = " && ".join(f'device.attributes["dra.net"].x{i} == "{i}"' for i in range(60))
    cache = CelCache(max_bytes=10 * _weight(long.replace('"0"', '"v000"')))
    for i in range(100):
        cache.compile(long.replace('"0"', f'"v{i:03d}"'), GATES)
    assert len(cache) == 10
    assert cache.stats().bytes <= cache.max_bytes
    for i in range(100):
        cache.compile(short.replace('"a"', f'"a{i}"'), GATES)
    assert len(cache) > 10


def test_the_weight_of_an_entry_grows_with_its_ast_and_text() -> None:
    small, big = _weight("true"), _weight(" && ".join(["device.driver == 'x'"] * 50))
    assert big > 10 * small
    assert _weight("noSuchVar") < _weight("device.driver == 'noSuchVar'")


def test_an_entry_larger_than_the_budget_is_returned_but_not_kept() -> None:
    cache = CelCache(max_bytes=16)
    assert cache.compile(EXPR, GATES).ok
    assert len(cache) == 0 and cache.stats().bytes == 0


def test_the_default_budget_fits_a_small_container() -> None:
    assert CelCache().max_bytes == DEFAULT_MAX_BYTES <= 128 * 1024 * 1024


def test_checking_environment_is_built_once_per_gate_set() -> None:
    key = EnvKey.for_gates(GATES)
    assert checking_env(key) is checking_env(EnvKey.for_gates(GATES))


@pytest.mark.parametrize(
    ("consumable", "lists", "stored", "want"),
    [
        (False, False, False, EnvKey(False, False)),
        (True, False, False, EnvKey(True, False)),
        (False, True, False, EnvKey(False, True)),
        (True, True, False, EnvKey(True, True)),
        (False, False, True, EnvKey(True, True)),
    ],
)
def test_environment_key_follows_the_gates(consumable: bool, lists: bool, stored: bool, want: EnvKey) -> None:
    gates = GATES.with_overrides(**{DRA_CONSUMABLE_CAPACITY: consumable, DRA_LIST_TYPE_ATTRIBUTES: lists})
    assert EnvKey.for_gates(gates, stored) == want
