"""docs/internals.md's "One home for each concept" table, held against the code: each file a row names exists,
and each name it gives in parentheses after a file is defined there, so a stale row fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TABLE = "## One home for each concept"
TICKED = re.compile(r"`([^`]+)`")
# `path/to/module.py` (`Name`, `mod.name`, ...): the names that the row says the file holds
NAMED = re.compile(r"`([\w./{},]+\.py)` \(([^)]*)\)")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


def _rows() -> list[str]:
    text = (ROOT / "docs/internals.md").read_text()
    section = text.split(TABLE, 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    return [line for line in lines if line.startswith("| ") and not line.startswith("| concept")]


def _expand(token: str) -> list[str]:
    """`localcluster/{cluster,nodes}.py` names two files."""
    match = re.search(r"\{([^}]*)\}", token)
    if not match:
        return [token]
    return [token[: match.start()] + part + token[match.end() :] for part in match.group(1).split(",")]


def _homes(row: str) -> list[tuple[str, str | None]]:
    """The files a row's home names, each with the symbol it points into (`pkg/mod.name`), if any."""
    home = row.rsplit("|", 2)[1]
    homes: list[tuple[str, str | None]] = []
    for token in TICKED.findall(home):
        if not re.fullmatch(r"[\w./{},-]+", token) or "/" not in token:
            continue
        for path in _expand(token):
            if "." not in path.rsplit("/", 1)[-1] or re.search(r"\.(py|json|yaml|toml|md)$", path):
                homes.append((path, None))
            else:  # `dra_capacity/cliopts.read_documents`: the module, then a name it defines
                module, _, symbol = path.rpartition(".")
                homes.append((f"{module}.py", symbol))
    return homes


def _defines(source: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+def|def|class)\s+{name}\b|^{name}\s*[:=]", source, re.M) is not None


def _concept(row: str) -> str:
    return row.split("|")[1].strip()[:60]


def test_the_table_has_rows() -> None:
    assert len(_rows()) >= 20


@pytest.mark.parametrize("row", _rows(), ids=_concept)
def test_each_row_names_files_that_exist(row: str) -> None:
    missing = [p for p, _ in _homes(row) if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"docs/internals.md names files that do not exist: {missing}"
    undefined = [f"{p}: {s}" for p, s in _homes(row) if s and not _defines((ROOT / p).read_text(), s)]
    assert not undefined, f"docs/internals.md names what the code does not define: {undefined}"


@pytest.mark.parametrize("row", [r for r in _rows() if NAMED.search(r)], ids=_concept)
def test_each_name_given_after_a_file_is_defined_there(row: str) -> None:
    absent = []
    for path, names in NAMED.findall(row):
        for file in _expand(path):
            folder = (ROOT / file).parent
            for name in TICKED.findall(names):
                if not IDENT.match(name):
                    continue
                if "." in name:  # `health.HealthListener`: a module beside the file, or the file's own module
                    module, symbol = name.split(".", 1)
                    candidates = [folder / f"{module}.py", folder / module / "__init__.py", ROOT / file]
                else:
                    symbol, candidates = name, [ROOT / f for f in _expand(path)]
                sources = [c.read_text() for c in candidates if c.is_file()]
                if not any(_defines(s, symbol) for s in sources):
                    absent.append(f"{name} in {file}")
    assert not absent, f"docs/internals.md names what the code does not define: {absent}"


def test_each_file_of_the_where_to_change_what_table_exists() -> None:
    text = (ROOT / "docs/internals.md").read_text()
    section = text.split("## Where to change what", 1)[1].split("\n## ", 1)[0]
    named = [t for t in TICKED.findall(section) if "/" in t and "<" not in t]
    missing = [t for t in named if not (ROOT / t.rstrip("/")).exists()]
    assert len(named) >= 15 and not missing, f"the map names files that do not exist: {missing}"
