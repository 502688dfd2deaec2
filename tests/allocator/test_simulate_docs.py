"""The walkthroughs in docs/simulate.md still produce the documented output (random IDs and names masked)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from dra_capacity.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "simulate.md"
_BLOCK = re.compile(r"```console\n\$ (dra-capacity [^\n]*)\n(.*?)```", re.S)
_MASKS = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<share-id>"),
    (re.compile(r"(?<= )[0-9a-f]{8}(?= )"), "<share>"),
    (re.compile(r"-extended-resources-[bcdfghjklmnpqrstvwxz2456789]{5}"), "-extended-resources-<random>"),
]


def _mask(text: str) -> str:
    for rx, repl in _MASKS:
        text = rx.sub(repl, text)
    return text


def _walkthroughs() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(DOC.read_text())]


def test_the_page_has_walkthrough_commands() -> None:
    commands = [c for c, _ in _walkthroughs()]
    assert any("gpu-shared" in c for c in commands) and any("nic-slices" in c for c in commands)


@pytest.mark.parametrize(
    ("command", "expected"), _walkthroughs(), ids=lambda v: v if v.startswith("dra") else ""
)
def test_walkthrough_output_matches_the_page(
    command: str, expected: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command)[1:]
    assert main(argv) == 0
    assert _mask(capsys.readouterr().out) == _mask(expected)
