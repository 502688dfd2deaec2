"""docs/validation.md and docs/troubleshooting.md quote the kubectl texts captured on a real kube-apiserver
(`tests/e2e/golden/kubectl_texts.json`, recorded by tests/e2e/test_real_kubectl_texts.py), verbatim and in
full, through the blocks `scripts/kubectl_texts.py` writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "e2e" / "golden" / "kubectl_texts.json"
DOCS = (ROOT / "docs" / "validation.md", ROOT / "docs" / "troubleshooting.md")


def test_every_captured_text_is_quoted_verbatim_in_the_docs() -> None:
    docs = "".join(doc.read_text() for doc in DOCS)
    golden = json.loads(GOLDEN.read_text())
    assert len(golden) >= 40
    missing = [
        f"{case} ({mode})"
        for case, entry in golden.items()
        for mode, text in entry["texts"].items()
        if f"\n{text}" not in docs
    ]
    assert not missing


def test_the_docs_blocks_are_what_the_script_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "kubectl_texts.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
