"""Command-line conventions shared by every subcommand: `--feature-gates` and manifest inputs."""

from __future__ import annotations

import argparse
import codecs
import os
import sys
from pathlib import Path
from typing import TextIO

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


def read_documents(paths: list[str], *, require_objects: bool = False) -> list[Document]:
    """Read and parse every file (`-` is standard input); raises DocumentError naming the file.

    With `require_objects`, input that holds no object at all (empty files, a wrong glob, a `kubectl get` that
    matched nothing) is an error too, as `kubectl apply` refuses it: an empty run must not pass silently."""
    docs: list[Document] = []
    for p in paths:
        if p == "-":
            source = "<stdin>"
            if sys.stdin is None:
                raise DocumentError(f"{source}: cannot read: standard input is closed")
            buffer = getattr(sys.stdin, "buffer", None)
            text = decode_manifest(buffer.read(), source) if buffer is not None else sys.stdin.read()
        else:
            source = p
            try:
                data = Path(p).read_bytes()
            except OSError as exc:
                raise DocumentError(f"{p}: cannot read: {exc.strerror or exc}") from None
            text = decode_manifest(data, source)
        docs.extend(load_documents(text.removeprefix(_BOM), source))
    if require_objects and not docs:
        raise DocumentError(f"{', '.join(_source(p) for p in paths)}: no objects found (empty input)")
    return docs


_BOM = "\ufeff"


def decode_manifest(data: bytes, source: str) -> str:
    """Bytes to text as kubectl's file reader does: UTF-8, or UTF-16 when a byte-order mark says so (what
    Windows tools write), a UTF-8 byte-order mark dropped. Anything else names the first bad byte."""
    try:
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.start + 1].hex()
        raise DocumentError(
            f"{source}: cannot read: not UTF-8 or UTF-16 text (byte 0x{bad} at offset {exc.start}); "
            "give a YAML or JSON manifest"
        ) from None


def _source(path: str) -> str:
    return "<stdin>" if path == "-" else path


class OutputError(OSError):
    """The command's output could not be written (disk full, ...); the message says why."""


def write_output(text: str, out: TextIO | None = None) -> None:
    """Write and flush a command's whole output. A write error becomes OutputError (a one-line message, no
    traceback); a closed pipe (`| head`) re-raises BrokenPipeError. Either way stdout is pointed at /dev/null
    first, so the interpreter's exit-time flush cannot print a traceback either."""
    stream = out if out is not None else sys.stdout
    try:
        stream.write(text)
        stream.flush()
    except OSError as exc:
        if stream is sys.stdout:
            _silence_stdout()
        if isinstance(exc, BrokenPipeError):
            raise
        raise OutputError(exc.errno, f"cannot write output: {exc.strerror or exc}") from None


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
