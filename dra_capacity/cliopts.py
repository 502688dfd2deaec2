"""Command-line conventions shared by every subcommand: `--feature-gates`, manifest inputs, error lines."""

from __future__ import annotations

import argparse
import codecs
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from resourceapi.gates import DEFAULT_RELEASE, KNOWN_GATES, FeatureGates, GateError
from resourceapi.manifests.documents import Document, DocumentError, load_documents
from resourceapi.releases import RELEASES, release_warnings


def add_feature_gates_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="A=true,B=false",
        help="Kubernetes gates of the served cluster (known: " + ", ".join(KNOWN_GATES) + ")",
    )


def add_server_version_interval_flag(parser: argparse.ArgumentParser) -> None:
    """`--server-version-interval`: how often `serve` and `bind` read `/version` (kubeio/serverversion.py)."""
    parser.add_argument(
        "--server-version-interval",
        type=positive_float,
        default=60.0,
        metavar="SECONDS",
        help="read the API server's /version this often and judge by the lowest release answered in the "
        "last 10 reads: an upgrade or a downgrade switches what objects are judged by (default 60)",
    )


def add_kubernetes_version_flag(parser: argparse.ArgumentParser) -> None:
    """`--kubernetes-version`: the served cluster's release (resourceapi/releases.py)."""
    parser.add_argument(
        "--kubernetes-version",
        default=DEFAULT_RELEASE,
        choices=tuple(RELEASES),
        metavar="X.Y",
        help=f"Kubernetes release of the served cluster: {', '.join(RELEASES)} (default {DEFAULT_RELEASE})",
    )


def parse_gates_or_exit(
    parser: argparse.ArgumentParser,
    spec: str,
    release: str = DEFAULT_RELEASE,
    *,
    command: str | None = None,
    err: TextIO | None = None,
) -> FeatureGates:
    """Parse `--feature-gates` over `release`'s defaults; a bad entry is a usage error (exit 2) naming it and
    listing known gates. With `command`, the release's warnings (untested, a gate set against its lock) are
    written to `err` (stderr) as `dra-capacity <command>: warning: ...`: gates are never refused."""
    try:
        gates = FeatureGates.parse(spec, release)
    except GateError as exc:
        parser.error(f"--feature-gates: {exc}")
        raise  # unreachable: parser.error exits
    if command is not None:
        for warning in release_warnings(gates):
            print(f"dra-capacity {command}: warning: {warning}", file=err if err is not None else sys.stderr)
    return gates


MANIFEST_SUFFIXES = (
    ".json",
    ".yaml",
    ".yml",
)  # kubectl's FileExtensions (k8s.io/cli-runtime resource/visitor.go)


def positive_int(value: str) -> int:
    """An argparse type: a whole number of at least 1 (a usage error, exit 2, otherwise)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return number


def positive_float(value: str) -> float:
    """An argparse type: a number greater than zero (seconds, rates)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be greater than zero")
    return number


def add_input_flags(parser: argparse.ArgumentParser) -> None:
    """`-f FILE` (repeatable), positional files and `-R`, as `kubectl apply -f` reads them."""
    parser.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML or JSON manifests, repeatable ('-' is standard input; a directory: its *.yaml, *.yml and "
        "*.json files, sorted)",
    )
    parser.add_argument(
        "-R", "--recursive", action="store_true", help="read directories given with -f recursively"
    )
    parser.add_argument("extra_files", nargs="*", metavar="FILE", help="more manifests, as with -f")


def input_paths(args: argparse.Namespace) -> list[str]:
    """The files named by `-f` and positionally, in command-line order (-f first)."""
    return [*args.files, *args.extra_files]


def expand_paths(paths: list[str], recursive: bool = False) -> list[str]:
    """Directories become their manifest files in lexical order (kubectl's `filepath.Walk` order), into
    subdirectories only with `recursive`; files and `-` are kept as given. Raises DocumentError for a path
    that does not exist."""
    out: list[str] = []
    for p in paths:
        if p != "-" and os.path.isdir(p):
            out.extend(_directory_files(Path(p), recursive))
        else:
            out.append(p)
    return out


def _directory_files(root: Path, recursive: bool) -> list[str]:
    try:
        entries = sorted(root.iterdir(), key=lambda e: e.name)
    except OSError as exc:
        raise DocumentError(f"{root}: cannot read: {exc.strerror or exc}") from None
    out: list[str] = []
    for entry in entries:
        if entry.is_dir():
            if recursive:
                out.extend(_directory_files(entry, recursive))
        elif entry.suffix in MANIFEST_SUFFIXES:
            out.append(str(entry))
    return out


@contextmanager
def bulk_load() -> Iterator[None]:
    """The cyclic garbage collector paused while a big input is parsed and modelled; the survivors frozen.

    Parsing a cluster dump allocates millions of containers and frees none; each collection the allocations
    trigger walks all of them again (docs/internals.md has the figure). Freezing afterwards keeps the later
    collections (during placement) from walking the input objects, which live until the command exits."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


@contextmanager
def young_collections_only() -> Iterator[None]:
    """The cyclic garbage collector's full passes off for a batch run (young generations still collected).

    A full pass walks every live container; a simulate run over a cluster dump keeps hundreds of thousands
    of results alive until it prints them, so the passes its allocations trigger walk all of them (a
    measurable share of the run, docs/internals.md) and find almost nothing: the cycles it makes (a search's
    undo log) die young and are collected there."""
    threshold = gc.get_threshold()
    gc.set_threshold(threshold[0], threshold[1], 1 << 30)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def dump_json(doc: object) -> str:
    """`json.dumps(doc, indent=2)` plus a newline, byte for byte, through orjson (a 20,000-pod result is tens
    of MB: Python's own encoder is pure Python once `indent` is set). Falls back to `json` for what orjson
    refuses (integers beyond 64 bits, non-string keys); orjson writes non-ASCII text as UTF-8, not escaped."""
    import json

    try:
        import orjson

        return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE).decode()
    except (ImportError, TypeError):
        return json.dumps(doc, indent=2) + "\n"


def error_line(command: str, message: str, err: TextIO | None = None) -> None:
    """One line on stderr in argparse's own style: `dra-capacity <command>: error: <message>`."""
    print(f"dra-capacity {command}: error: {message}", file=err if err is not None else sys.stderr)


def read_documents(
    paths: list[str], *, require_objects: bool = False, recursive: bool = False
) -> list[Document]:
    """Read and parse every file (`-` is standard input, a directory its manifest files); raises DocumentError
    naming the file.

    With `require_objects`, input that holds no object at all (empty files, a wrong glob, a `kubectl get` that
    matched nothing) is an error too, as `kubectl apply` refuses it: an empty run must not pass silently."""
    docs: list[Document] = []
    for p in expand_paths(paths, recursive):
        docs.extend(_read_file(p))
    if require_objects and not docs:
        raise DocumentError(empty_input(paths))
    return docs


def read_each_file(paths: list[str], *, recursive: bool = False) -> tuple[list[Document], list[InputFailure]]:
    """Like read_documents, but a file that cannot be read or parsed does not stop the others (as kubeconform
    and `kubectl apply -f DIR` go on): its failure is returned beside the documents of every other file."""
    docs: list[Document] = []
    failures: list[InputFailure] = []
    for given in paths:
        try:
            files = expand_paths([given], recursive)
        except DocumentError as exc:
            failures.append(InputFailure(_source(given), str(exc)))
            continue
        for p in files:
            try:
                docs.extend(_read_file(p))
            except DocumentError as exc:
                failures.append(InputFailure(_source(p), str(exc)))
    return docs, failures


@dataclass(frozen=True)
class InputFailure:
    """A file left out of a run: its path (`<stdin>` for `-`) and the message naming what is wrong."""

    file: str
    message: str


def empty_input(paths: list[str]) -> str:
    return f"{', '.join(_source(p) for p in paths)}: no objects found (empty input)"


def _read_file(p: str) -> list[Document]:
    """One file's (or standard input's) documents; DocumentError names the file."""
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
        del data  # a dump's bytes need not live on beside its text and its objects
    return load_documents(text.removeprefix(_BOM), source)


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


# allocator.scheduling.placement.STRATEGIES, spelled out so parsing a command imports no allocator
STRATEGY_CHOICES: tuple[str, ...] = ("binpack", "spread", "least-allocated")
STRATEGY_HELP = (
    "node scoring: binpack (default, the fullest node), spread (the emptiest) or least-allocated "
    "(kube-scheduler's LeastAllocated + BalancedAllocation); preferred node affinity and PreferNoSchedule "
    "taints are scored as upstream scores them under each"
)


ROUTING_NAMESPACE_CHOICES: tuple[str, ...] = ("all", "labelled")  # resourceapi.routing.NAMESPACE_MODES


def add_routing_namespaces_flag(parser: argparse.ArgumentParser) -> None:
    """`--pod-routing-namespaces`, shared by `serve` (routing) and `bind` (its routing audit)."""
    parser.add_argument(
        "--pod-routing-namespaces",
        choices=ROUTING_NAMESPACE_CHOICES,
        default="all",
        help="which namespaces route their pods to the binder: all (default) but those labelled "
        "dra-capacity.io/pod-routing=disabled, or only those labelled =enabled (a pod label overrides its "
        "namespace's); give serve and bind the same setting",
    )


def add_whole_device_flag(parser: argparse.ArgumentParser, who: str) -> None:
    """`--route-whole-device-classes`, shared by `serve` (routing) and `bind` (its routing audit)."""
    what = {
        "/mutate-pods": "also route pods that ask for an extended resource of a DeviceClass without capacity "
        "requests (KEP-5004 whole devices)",
        "the routing audit": "the routing audit also reports pods of DeviceClasses without capacity requests "
        "(KEP-5004 whole devices) that kept the default scheduler",
    }[who]
    parser.add_argument(
        "--route-whole-device-classes",
        action="store_true",
        help=f"{what}; default off. The binder is then the only allocator for those devices: give serve and "
        "bind the same setting",
    )
