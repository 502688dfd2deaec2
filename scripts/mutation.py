"""Mutation testing of the core modules (`make mutation`): mutmut on each module against its own tests.

For each module: a scratch copy of the project under `.mutation/<module>/`, a `[tool.mutmut]` section that
mutates that one file and runs only its own tests, `mutmut run`, then a re-check of every mutant mutmut did
not report killed, each in a fresh `pytest` process (`--jobs` at a time): mutmut forks its workers from a
process that already ran the suite, so warm caches (`functools.lru_cache`s of quantities and qualified
names, the records of slices and capacities) hide a mutant's effect and report false survivors. Mutants
judged equivalent are listed, each with its reason, in `tests/mutation/equivalents.toml`; they are matched
by the mutated code (before and after, and the line above when that is ambiguous), not by mutmut's
numbering, which shifts as code moves.

Prints one line per module, `module: N mutants, K killed, E equivalent, score S%` (score = K / (N - E)),
then the diff of every mutant that survived; exits 1 when a module scores below the threshold.

Usage: `scripts/mutation.py [--jobs N] [--threshold 95] [--keep] [module.py ...]` (default: every core
module; `--keep` resumes an interrupted run of a module in its existing `.mutation/<module>/`).
Run it under `nice`; `docs/testing.md` ("Mutation testing") has the run time and the latest scores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
EQUIVALENTS = ROOT / "tests" / "mutation" / "equivalents.toml"
PACKAGES = ("resourceapi", "kubeio", "procrt", "webhook", "allocator", "binder", "certs", "dra_capacity")
THRESHOLD = 95.0

ALLOCATOR_CORE_TESTS = [
    "tests/allocator/upstream",
    "tests/allocator/test_pools.py",
    "tests/allocator/test_allocation_errors.py",
]

# Core module -> its own tests (the narrow selection mutmut runs per mutant).
MODULES: dict[str, list[str]] = {
    "binder/assume.py": ["tests/binder/test_assume_cache.py"],
    "binder/hints.py": [
        "tests/binder/test_queueing_hints.py",
        "tests/binder/test_per_pod_hints.py",
        "tests/binder/test_scheduling_queue.py",
    ],
    "webhook/deviceclass/dropping.py": ["tests/webhook/test_dropping.py"],
    "resourceapi/capacity_requests.py": [
        "tests/resourceapi/test_capacity_request_rules.py",
        "tests/webhook/test_capacity_requests.py",
    ],
    "resourceapi/capacity.py": ["tests/resourceapi/test_capacity.py"],
    "binder/claims.py": ["tests/binder/test_claims.py", "tests/binder/test_bind_bodies.py"],
    "allocator/scheduling/synthesis.py": [
        "tests/allocator/test_synthesis.py",
        "tests/allocator/test_synthesis_rules.py",
    ],
    "resourceapi/machinery/names.py": [
        "tests/resourceapi/test_names.py",
        "tests/resourceapi/test_generated_names.py",
    ],
    "resourceapi/machinery/quantity.py": [
        "tests/resourceapi/test_quantity.py",
        "tests/resourceapi/test_quantity_semantics.py",
    ],
    "allocator/structured/constraints.py": [
        *ALLOCATOR_CORE_TESTS,
        "tests/allocator/test_attribute_constraints.py",
        "tests/allocator/test_release_allocation.py",
    ],
    "allocator/structured/pools.py": [
        *ALLOCATOR_CORE_TESTS,
        "tests/allocator/test_node_selection.py",
        "tests/allocator/test_attribute_constraints.py",
        "tests/allocator/test_gather_pools.py",
        "tests/allocator/test_release_allocation.py",
    ],
    "allocator/structured/search.py": [
        *ALLOCATOR_CORE_TESTS,
        "tests/allocator/test_search_prefilter.py",
        "tests/allocator/test_search_shares.py",
        "tests/allocator/test_search_claims.py",
    ],
}

# pytest failed (1) or broke (3); mutmut's timeouts (36, and SIGXCPU as 24, -24, 152; 255) are CPU-time
# limits of 8 times the covering tests' own time (plus 8 s), not wall time: a mutant that hits one hangs them.
KILLED_EXIT_CODES = {1, 3, 36, 24, -24, 152, 255}
PYTEST_ARGS = ["-p", "no:cacheprovider", "-x", "-q"]


@dataclass(frozen=True)
class Equivalent:
    function: str
    before: str
    after: str
    reason: str
    context: str = ""  # the unchanged line just above the mutated code, when before/after are ambiguous


@dataclass
class Outcome:
    module: str
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0
    survivors: list[tuple[str, str]] = field(default_factory=list)  # (name, diff)
    stale_equivalents: list[Equivalent] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self) -> float:
        counted = self.mutants - self.equivalent
        return 100.0 * self.killed / counted if counted else 100.0

    def line(self) -> str:
        return (
            f"{self.module}: {self.mutants} mutants, {self.killed} killed, {self.equivalent} equivalent, "
            f"score {self.score:.1f}%"
        )


def _normalize(code: str) -> str:
    return re.sub(r"\s+", " ", code).strip()


def load_equivalents(path: Path = EQUIVALENTS) -> dict[str, list[Equivalent]]:
    """module -> its reviewed equivalent mutants. Every entry needs a function, the line before and after the
    mutation, and a reason."""
    data = tomllib.loads(path.read_text()) if path.exists() else {}
    out: dict[str, list[Equivalent]] = {}
    for i, entry in enumerate(data.get("equivalent", [])):
        missing = {"module", "function", "before", "after", "reason"} - set(entry)
        if missing or not str(entry.get("reason", "")).strip():
            raise SystemExit(f"{path}: equivalent #{i + 1} lacks {sorted(missing) or ['a reason']}")
        out.setdefault(entry["module"], []).append(
            Equivalent(
                entry["function"],
                _normalize(entry["before"]),
                _normalize(entry["after"]),
                entry["reason"],
                _normalize(entry.get("context", "")),
            )
        )
    return out


def _function_of(mutant: str) -> str:
    """`pkg.mod.x_func__mutmut_3` -> `func`; `pkg.mod.xǁClassǁmethod__mutmut_3` -> `Class.method`."""
    tail = mutant.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]
    if tail.startswith("x_"):
        return tail[2:]
    return ".".join(p for p in tail.split("ǁ")[1:] if p)


def _changed_lines(diff: str) -> tuple[str, str, str]:
    """(code before, code after, the unchanged line just above it) of a mutant's diff, normalized."""
    lines = diff.splitlines()
    before = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    after = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    first = next(
        (i for i, line in enumerate(lines) if line[:1] in "-+" and line[:3] not in ("---", "+++")), 0
    )
    context = next((line[1:] for line in reversed(lines[:first]) if line.startswith(" ")), "")
    return _normalize("\n".join(before)), _normalize("\n".join(after)), _normalize(context)


def prepare(module: str, tests: list[str], workdir: Path) -> None:
    """A scratch copy of the packages and tests, with a pyproject that mutates `module` against `tests`."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", "controlplane")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, workdir / package, ignore=ignore)
    shutil.copytree(ROOT / "tests", workdir / "tests", ignore=ignore)
    config = (
        "\n[tool.mutmut]\n"
        f"source_paths = {json.dumps(list(PACKAGES))}\n"
        f"only_mutate = {json.dumps([module])}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
        # CPU-time limit per mutant: (its tests' time + 1 s) x 2 x this (mutmut's default 15 makes the hanging
        # mutants of the allocator's search run for minutes each on a loaded machine)
        "timeout_multiplier = 4.0\n"
        "use_git_change_detection = false\n"
    )
    (workdir / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + config)


def mutmut(workdir: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "mutmut"
    out = log.open("w") if log is not None else subprocess.PIPE
    try:
        return subprocess.run(
            [str(exe), *args], cwd=workdir, stdout=out, stderr=subprocess.STDOUT, text=True, check=False
        )
    finally:
        if log is not None and not isinstance(out, int):
            out.close()


def exit_codes(workdir: Path, module: str) -> dict[str, int | None]:
    meta = json.loads((workdir / "mutants" / f"{module}.meta").read_text())
    codes: dict[str, int | None] = meta["exit_code_by_key"]
    return codes


def fresh_check(workdir: Path, mutant: str, tests: list[str], timeout: float) -> bool:
    """True when the module's tests fail with `mutant` active, in a new interpreter (no warm caches): first
    the tests mutmut saw call the mutated function (quick), then, if they pass, all the module's tests."""
    covering = sorted(_covering_tests(workdir).get(_mangled(mutant), ()))
    for selection in ([covering] if covering else []) + [tests]:
        env = {**os.environ, "MUTANT_UNDER_TEST": mutant}
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", *PYTEST_ARGS, *selection],
                cwd=workdir / "mutants",
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return True  # the mutant hangs the tests: detected
        if proc.returncode != 0:
            return True
    return False


_COVERING: dict[Path, dict[str, list[str]]] = {}


def _covering_tests(workdir: Path) -> dict[str, list[str]]:
    """mutmut's record of which tests call each (mangled) function, from its stats run."""
    if workdir not in _COVERING:
        stats = workdir / "mutants" / "mutmut-stats.json"
        data = json.loads(stats.read_text()) if stats.exists() else {}
        _COVERING[workdir] = data.get("tests_by_mangled_function_name", {})
    return _COVERING[workdir]


def _mangled(mutant: str) -> str:
    return mutant.rsplit("__mutmut_", 1)[0]


def run_module(
    module: str, tests: list[str], jobs: int, equivalents: list[Equivalent], keep: bool = False
) -> Outcome:
    start = time.monotonic()
    outcome = Outcome(module)
    workdir = WORK / module.replace("/", "__").removesuffix(".py")
    if not (keep and (workdir / "mutants").is_dir()):
        prepare(module, tests, workdir)
    proc = mutmut(workdir, "run", "--max-children", str(jobs), log=workdir / "mutmut-run.log")
    meta = workdir / "mutants" / f"{module}.meta"
    if proc.returncode != 0 or not meta.exists():
        raise SystemExit(
            f"{module}: mutmut run failed (exit {proc.returncode}); see {workdir}/mutmut-run.log"
        )
    codes = exit_codes(workdir, module)
    outcome.mutants = len(codes)
    killed = sorted(name for name, code in codes.items() if code in KILLED_EXIT_CODES)
    unkilled = sorted(name for name, code in codes.items() if code not in KILLED_EXIT_CODES)

    clean = time.monotonic()
    if subprocess.run(
        [sys.executable, "-m", "pytest", *PYTEST_ARGS, *tests],
        cwd=workdir / "mutants",
        env={**os.environ, "MUTANT_UNDER_TEST": ""},
        stdout=subprocess.DEVNULL,
        check=False,
    ).returncode:
        raise SystemExit(f"{module}: its tests fail without a mutant in {workdir}/mutants")
    timeout = 5 * (time.monotonic() - clean) + 30
    # The re-check must see mutants at all: a mutant mutmut killed must fail in a fresh process too.
    if killed and not fresh_check(workdir, killed[0], tests, timeout):
        raise SystemExit(f"{module}: the fresh-process re-check does not activate mutants ({killed[0]})")

    used: set[Equivalent] = set()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        detected = dict(
            zip(unkilled, pool.map(lambda n: fresh_check(workdir, n, tests, timeout), unkilled), strict=True)
        )
    for name in unkilled:
        if detected[name]:
            killed.append(name)
            continue
        diff = mutmut(workdir, "show", name).stdout or ""
        before, after, context = _changed_lines(diff)
        match = next(
            (
                e
                for e in equivalents
                if e.function == _function_of(name)
                and (e.before, e.after) == (before, after)
                and e.context in ("", context)
            ),
            None,
        )
        if match is not None:
            used.add(match)
            outcome.equivalent += 1
        else:
            outcome.survivors.append((name, diff))
    outcome.killed = len(killed)
    outcome.stale_equivalents = [e for e in equivalents if e not in used]
    outcome.seconds = time.monotonic() - start
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("modules", nargs="*", help="core modules to test (default: all)")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("MUTATION_JOBS", "2")))
    parser.add_argument("--threshold", type=float, default=THRESHOLD)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="reuse .mutation/<module>/ as it is: mutmut keeps its verdicts and tests the rest (resume)",
    )
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"not a core module: {', '.join(unknown)} (known: {', '.join(MODULES)})")
    equivalents = load_equivalents()
    listed_unknown = sorted(set(equivalents) - set(MODULES))
    if listed_unknown:
        parser.error(f"{EQUIVALENTS}: modules that are not core modules: {', '.join(listed_unknown)}")

    outcomes: list[Outcome] = []
    for module in args.modules or list(MODULES):
        outcome = run_module(module, MODULES[module], args.jobs, equivalents.get(module, []), args.keep)
        outcomes.append(outcome)
        print(outcome.line(), f"({outcome.seconds:.0f} s)", flush=True)
    failed = [o for o in outcomes if o.score < args.threshold]
    for o in outcomes:
        for name, diff in o.survivors:
            print(f"\nsurvived: {name}\n{diff.rstrip()}")
        for e in o.stale_equivalents:
            print(f"\nstale equivalent in {EQUIVALENTS.name} (no such survivor): {o.module} {e.function}")
            print(f"  {e.before}\n  -> {e.after}")
    total = sum(o.seconds for o in outcomes)
    print(f"\n{len(outcomes)} modules in {total:.0f} s; threshold {args.threshold:g}%", end="")
    if failed:
        print(f"; below it: {', '.join(o.module for o in failed)}")
        return 1
    print("; all at or above it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
