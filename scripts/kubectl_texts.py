"""Put the kubectl texts captured on a real kube-apiserver into the docs.

`tests/e2e/test_real_kubectl_texts.py` records what the real kubectl prints for every rule in
`tests/e2e/golden/kubectl_texts.json`. The docs quote them between markers,

    <!-- captured: kubectl-texts SECTION -->
    ```console
    ...
    ```
    <!-- /captured -->

and this script writes each block from the file (one transcript per case of SECTION, in the file's order).
`--check` writes nothing and exits 1 when a block differs or a section of the file is quoted nowhere.

    .venv/bin/python scripts/kubectl_texts.py [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "e2e" / "golden" / "kubectl_texts.json"
DOCS = (
    ROOT / "docs" / "validation.md",
    ROOT / "docs" / "troubleshooting.md",
    ROOT / "docs" / "user-guide.md",
)
BLOCK = re.compile(
    r"(<!-- captured: kubectl-texts (?P<section>[\w-]+) -->\n)(?P<body>.*?)(<!-- /captured -->)", re.DOTALL
)
WHO = {
    "server": "the API server's own answer (before any webhook)",
    "webhook": "the webhook's answer",
    "kubectl": "kubectl's own answer (nothing is sent)",
}


def render(section: str, golden: dict[str, Any]) -> str:
    """The console block quoting every case of `section`."""
    parts = []
    for entry in golden.values():
        if entry["section"] != section:
            continue
        texts = entry["texts"]
        who = WHO[entry["by"]]
        if set(texts) == {"warn", "deny"} and texts["warn"] == texts["deny"]:
            parts.append(
                f"# {entry['rule']}: {who}, the same with --native-rules warn and deny\n{texts['warn']}"
            )
        else:
            for mode, text in texts.items():
                suffix = f", --native-rules {mode}" if len(texts) > 1 else ""
                parts.append(f"# {entry['rule']}: {who}{suffix}\n{text}")
    if not parts:
        raise SystemExit(f"kubectl_texts: no case of section {section!r} in {GOLDEN.relative_to(ROOT)}")
    return "```console\n" + "\n".join(parts) + "```\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a doc is not up to date; write nothing"
    )
    args = parser.parse_args()
    golden = json.loads(GOLDEN.read_text())
    quoted: set[str] = set()
    stale = []
    for doc in DOCS:
        text = doc.read_text()

        def block(match: re.Match[str]) -> str:
            quoted.add(match["section"])
            return match.group(1) + render(match["section"], golden) + match.group(4)

        new = BLOCK.sub(block, text)
        if new != text:
            stale.append(doc.relative_to(ROOT))
            if not args.check:
                doc.write_text(new)
    missing = sorted({e["section"] for e in golden.values()} - quoted)
    for section in missing:
        print(f"kubectl_texts: section {section!r} is quoted in no doc", file=sys.stderr)
    if args.check and stale:
        print(
            f"kubectl_texts: not up to date: {', '.join(map(str, stale))} (run scripts/kubectl_texts.py)",
            file=sys.stderr,
        )
    return 1 if missing or (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
