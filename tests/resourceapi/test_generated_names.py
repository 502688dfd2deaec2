"""Names the API server generates from `generateName` (apiserver `names.SimpleNameGenerator`), as
resourceapi.machinery.names makes them: the prefix cut to 58 bytes, then 5 characters of the generator's
alphabet."""

from __future__ import annotations

import random

from resourceapi.machinery.field import Path, required
from resourceapi.machinery.names import (
    NAME_GENERATOR_ALPHABET,
    generate_name,
    generated_name_base,
    validate_driver_name,
)


def test_the_generator_alphabet_is_upstreams() -> None:
    assert NAME_GENERATOR_ALPHABET == "bcdfghjklmnpqrstvwxz2456789"


def test_a_short_prefix_is_kept_whole() -> None:
    assert generated_name_base("web-0-extended-resources-") == "web-0-extended-resources-"


def test_a_long_prefix_is_cut_to_58_bytes() -> None:
    assert generated_name_base("p" * 70) == "p" * 58
    assert generated_name_base("p" * 58) == "p" * 58


def test_the_cut_counts_bytes_and_replaces_a_split_character() -> None:
    """Go slices the prefix's bytes: a two-byte character split at byte 58 is no longer valid UTF-8."""
    assert generated_name_base("é" * 30) == "é" * 29
    assert generated_name_base("a" + "é" * 30) == "a" + "é" * 28 + "\ufffd"


def test_generated_name_is_the_base_and_five_characters_of_the_alphabet() -> None:
    name = generate_name("p" * 70 + "-extended-resources-")
    assert len(name) == 63 and name.startswith("p" * 58)
    assert set(name[58:]) <= set(NAME_GENERATOR_ALPHABET)


def test_a_seeded_generator_draws_the_suffix_from_it() -> None:
    """simulate --seed: the suffix is five draws from the given generator, so a seed reproduces it."""
    draws = random.Random(7)
    expected = "".join(draws.choice(NAME_GENERATOR_ALPHABET) for _ in range(5))
    assert generate_name("web-", random.Random(7)) == "web-" + expected
    assert generate_name("web-", random.Random(7)) == generate_name("web-", random.Random(7))


def test_unseeded_names_differ() -> None:
    names = {generate_name("web-") for _ in range(20)}
    assert len(names) > 1
    assert all(len(n) == 9 and set(n[4:]) <= set(NAME_GENERATOR_ALPHABET) for n in names)


def test_an_empty_driver_name_is_only_required() -> None:
    path = Path("spec").child("driver")
    assert validate_driver_name("", path) == [required(path)]
