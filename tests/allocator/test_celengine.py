"""`CelEngine`: compile and evaluation outcomes are typed (`CelFailure`), never text to be parsed again."""

from __future__ import annotations

import pytest

from allocator.structured import selection
from allocator.structured.celengine import CelEngine
from allocator.structured.celfailures import CelFailure, FailureKind
from resourceapi.cel import device_input
from resourceapi.cel.cache import program_bytes
from resourceapi.gates import FeatureGates

ENGINE = CelEngine(FeatureGates.defaults())
DEVICE = device_input("dra.net", {"ifName": {"string": "eth0"}}, {})


def test_a_compile_error_is_a_compile_failure_with_upstreams_message() -> None:
    got = ENGINE.compile("noSuchVar")
    assert isinstance(got, CelFailure)
    assert got.kind is FailureKind.COMPILE
    assert got.message.startswith(
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar"
    )


def test_a_runtime_error_is_a_runtime_failure_with_upstreams_message() -> None:
    program = ENGINE.compile('device.attributes["dra.net"].speed > 1')
    assert not isinstance(program, CelFailure)
    assert ENGINE.evaluate(program, DEVICE) == CelFailure(FailureKind.RUNTIME, "no such key: speed")


def test_a_library_selector_evaluates_to_a_plain_bool() -> None:
    expression = '!format.dns1123Label().validate(device.attributes["dra.net"].ifName).hasValue()'
    program = ENGINE.compile(expression)
    assert not isinstance(program, CelFailure)
    assert ENGINE.evaluate(program, DEVICE) is True


def test_the_matchers_program_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Programs are weighed like the CelCache's entries; the cache empties rather than outgrow its budget."""
    monkeypatch.setattr(selection, "PROGRAMS_MAX_BYTES", 3 * program_bytes('device.driver == "a000"', 200))
    matcher = selection.Matcher(ENGINE)
    for i in range(50):
        matcher._program(f'device.driver == "a{i:03d}"')
        assert matcher._programs_bytes <= selection.PROGRAMS_MAX_BYTES
    assert 0 < len(matcher._programs) < 50
