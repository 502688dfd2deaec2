"""Every shell command the docs mark runnable still prints what the docs show, and every file they use ships.

The marker is the fenced block's info string `console runnable`:

    ```console runnable
    $ dra-capacity validate docs/examples/smoke-test/deviceclass.yaml
    <the output, stdout and stderr as a terminal shows them>
    ```

Each `$ ` line is a command (a line ending in a backslash continues it); the lines up to the next `$ ` line
are its expected output. Commands run with bash from the repository's root, with `.venv/bin` first on PATH
(as the README says to set it up), stderr merged into stdout. Only what must vary between runs is masked:
share IDs (random UUIDs, as upstream makes them) and the random suffix of a synthesized claim's name.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
_BLOCK = re.compile(r"^([ \t]*)```console runnable[ \t]*\n(.*?)^\1```[ \t]*$", re.M | re.S)
_MASKS = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<share-id>"),
    (re.compile(r"(?<= )[0-9a-f]{8}(?= )"), "<share>"),
    (re.compile(r"-extended-resources-[bcdfghjklmnpqrstvwxz2456789]{5}"), "-extended-resources-<random>"),
]


@dataclass(frozen=True)
class Example:
    doc: str
    line: int
    command: str
    expected: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def _mask(text: str) -> str:
    for rx, repl in _MASKS:
        text = rx.sub(repl, text)
    return text


def examples(paths: list[Path] = DOCS) -> list[Example]:
    out: list[Example] = []
    for path in paths:
        text = path.read_text()
        for block in _BLOCK.finditer(text):
            first = text.count("\n", 0, block.start(2)) + 1
            lines = textwrap.dedent(block.group(2)).splitlines()
            i = 0
            while i < len(lines):
                if not lines[i].startswith("$ "):
                    raise AssertionError(f"{path.name}:{first + i}: a runnable block's lines start with `$ `")
                start = i
                command = lines[i][2:]
                while command.endswith("\\"):
                    i += 1
                    command = command[:-1] + "\n" + lines[i]
                i += 1
                output: list[str] = []
                while i < len(lines) and not lines[i].startswith("$ "):
                    output.append(lines[i])
                    i += 1
                expected = "".join(line + "\n" for line in output)
                out.append(Example(path.name, first + start, command, expected))
    return out


def test_the_docs_mark_runnable_commands() -> None:
    found = {e.doc for e in examples()}
    assert {"simulate.md", "install.md", "validation.md"} <= found


def test_a_block_is_split_into_commands_and_their_output(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n\n  ```console runnable\n  $ echo a \\\n    b\n  a b\n  $ true\n  ```\n\n"
        "```console\n$ not run\n```\n"
    )
    assert [(e.line, e.command, e.expected) for e in examples([doc])] == [
        (4, "echo a \n  b", "a b\n"),
        (7, "true", ""),
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("KUBECONFIG", None)
    env["COLUMNS"] = "80"
    return env


@pytest.mark.parametrize("example", examples(), ids=str)
def test_runnable_command_prints_what_the_doc_shows(example: Example) -> None:
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", example.command],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert _mask(proc.stdout) == _mask(example.expected), f"{example}: $ {example.command}"


_EXAMPLE_PATH = re.compile(r"(?<![\w/.-])((?:docs|charts|bench|scripts)/[\w./-]*\.(?:ya?ml|json|md|py|sh))")


_LINK = re.compile(r"\]\(([^()#\s:]+)(?:#[^()\s]*)?\)")


def test_every_file_the_docs_name_ships() -> None:
    """A path the README or a doc names (docs/examples/..., bench/fixtures/..., a script), and the target of
    every relative link, exists."""
    missing = []
    for path in [ROOT / "README.md", *DOCS]:
        fenced = False
        for n, line in enumerate(path.read_text().splitlines(), 1):
            fenced ^= line.lstrip().startswith("```")
            for m in _EXAMPLE_PATH.finditer(line):
                if not (ROOT / m.group(1)).exists():
                    missing.append(f"{path.name}:{n}: {m.group(1)}")
            if fenced:  # a code block's text (a regular expression quoted in a message) is not a link
                continue
            for m in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                if not (path.parent / m.group(1)).exists():
                    missing.append(f"{path.name}:{n}: link {m.group(1)}")
    assert not missing
