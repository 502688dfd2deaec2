"""Command-line conventions shared by every subcommand: `--feature-gates` and manifest inputs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from resourceapi.documents import Document, DocumentError, load_documents
from resourceapi.gates import KNOWN_GATES, FeatureGates, GateError


def add_feature_gates_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="A=true,B=false",
        help="Kubernetes gates of the served cluster (known: " + ", ".join(KNOWN_GATES) + ")",
    )


def parse_gates_or_exit(parser: argparse.ArgumentParser, spec: str) -> FeatureGates:
    """Parse `--feature-gates`; a bad entry is a usage error (exit 2) naming it and listing known gates."""
    try:
        return FeatureGates.parse(spec)
    except GateError as exc:
        parser.error(f"--feature-gates: {exc}")
        raise  # unreachable: parser.error exits


def read_documents(paths: list[str]) -> list[Document]:
    """Read and parse every file (`-` is standard input); raises DocumentError naming the file."""
    docs: list[Document] = []
    for p in paths:
        if p == "-":
            text = sys.stdin.read()
            source = "<stdin>"
        else:
            try:
                text = Path(p).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise DocumentError(f"{p}: cannot read: {reason}") from None
            source = p
        docs.extend(load_documents(text, source))
    return docs
