"""`make mutation`'s configuration stays true to the tree: every core module and each of its test selections
exist, and every reviewed equivalent mutant names a core module and gives its reason (the mutation run itself
is not part of `make test`: docs/testing.md, "Mutation testing")."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


MUTATION = _script()


def test_every_core_module_and_its_tests_exist() -> None:
    for module, tests in MUTATION.MODULES.items():
        assert (ROOT / module).is_file(), module
        assert tests, module
        for path in tests:
            assert (ROOT / path).exists(), f"{module}: {path}"


def test_every_equivalent_names_a_core_module_and_gives_a_reason() -> None:
    equivalents = MUTATION.load_equivalents()
    assert equivalents
    for module, entries in equivalents.items():
        assert module in MUTATION.MODULES, module
        for entry in entries:
            assert entry.function and entry.before != entry.after
            assert len(entry.reason.split()) >= 5, entry


def test_survivors_are_matched_by_function_and_mutated_code() -> None:
    assert (
        MUTATION._function_of("webhook.deviceclass.dropping.x_drop_disabled_fields__mutmut_28")
        == "drop_disabled_fields"
    )
    assert (
        MUTATION._function_of("resourceapi.machinery.quantity.xǁQuantityǁparse__mutmut_3") == "Quantity.parse"
    )
    diff = (
        "# webhook.deviceclass.dropping.x_f__mutmut_1: survived\n"
        "--- webhook/deviceclass/dropping.py\n+++ webhook/deviceclass/dropping.py\n"
        "@@ -1,3 +1,3 @@\n context\n-    drop_annotation = False\n+    drop_annotation   = None\n context\n"
    )
    assert MUTATION._changed_lines(diff) == ("drop_annotation = False", "drop_annotation = None", "context")
