"""`dra-capacity top` (also `kubectl dra-capacity top`): shares used and free per class and node, pending pods
and headroom, from a dump (the inputs of `simulate`) or a live cluster (kubeio's informers).

Imports stay inside the functions: `dra-capacity --help` must not pay for the models, the allocator or the
`kubernetes` client.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any, cast

from dra_capacity.cliopts import (
    STRATEGY_CHOICES,
    STRATEGY_HELP,
    OutputError,
    add_feature_gates_flag,
    add_input_flags,
    bulk_load,
    dump_json,
    error_line,
    input_paths,
    parse_gates_or_exit,
    positive_float,
    read_documents,
    write_output,
)
from resourceapi.manifests.documents import DocumentError

if TYPE_CHECKING:
    from allocator.capacity.view import CapacityView, Report
    from allocator.scheduling.placement import Strategy
    from resourceapi.api.core_v1 import Pod

COMMAND = "top"
EXIT_OK = 0
EXIT_BAD_INPUT = 2
SYNC_TIMEOUT = 60.0

TOP_EPILOG = """\
columns:
  classes  CLASS, RESOURCE (the extended resource pods ask for), TOTAL, USED and FREE units (pods of one
           unit: what one request of the class consumes on each device, requestPolicy rounding included),
           PENDING (pods without a node that ask for the resource), HEADROOM (how many more pods of one unit
           fit now, counted by placing them as the binder would: node predicates, taints, counters and
           constraints all count; N+ means at least N)
  nodes    NODE, RESOURCE, TOTAL, USED, FREE per node (<shared>: devices of slices for several nodes)
  -o wide adds DEVICES (and each node row's CLASS); -o json|yaml print one document ("classes", "nodes",
  and "shape" with --shape).

input: the objects simulate reads (-f FILE, FILE, '-', a directory; -R), as `kubectl get -o yaml|json` prints
them, or a live cluster with --kubeconfig (listed and watched through informers; never written).
--watch redraws every --interval seconds (a live cluster: as the informers see changes; files: when they
change on disk); Ctrl-C ends it.

exit status: 0 the figures were printed; 2 bad usage, unreadable input or a cluster that cannot be read (one
line on stderr, "dra-capacity top: error: ..."). See docs/top.md.
"""


def add_commands(sub: Any) -> None:
    """Register `top` on the top-level subparsers."""
    top = sub.add_parser(
        "top",
        help="shares used and free per class and node, pending pods and headroom",
        description="Show, per capacity-backed extended resource (DeviceClass) and per node, the units in "
        "total, used and free, the pending pods that wait for them, and how many more pods of one unit fit "
        "now (headroom, counted by the allocator's own placement).",
        epilog=TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_feature_gates_flag(top)
    top.add_argument(
        "-o",
        "--output",
        choices=("wide", "json", "yaml"),
        default=None,
        help="output format (default: table)",
    )
    top.add_argument(
        "--shape",
        metavar="POD.yaml",
        help="also count how many more of this pod fit (a pod asking for several units, cpu, a selector...)",
    )
    top.add_argument(
        "--no-headroom", action="store_true", help="skip the headroom count (usage and pending pods only)"
    )
    top.add_argument("--strategy", choices=STRATEGY_CHOICES, default="binpack", help=STRATEGY_HELP)
    top.add_argument("-w", "--watch", action="store_true", help="redraw as the cluster (or the files) change")
    top.add_argument(
        "--interval", type=positive_float, default=2.0, metavar="SECONDS", help="redraw period of --watch (2)"
    )
    cluster = top.add_argument_group("reading a cluster (never writes to it)")
    cluster.add_argument("--kubeconfig", metavar="PATH", help="read this cluster through informers")
    cluster.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    add_input_flags(top)
    top.set_defaults(func=run_top, parser=top)


def _kubectl_default_config() -> bool:
    import os
    from pathlib import Path

    if os.environ.get("KUBECONFIG"):
        return True
    return (Path.home() / ".kube" / "config").is_file()


def run_top(args: argparse.Namespace) -> int:
    from allocator.capacity.headroom import ShapeError
    from allocator.simulate import InputError
    from dra_capacity.cluster_source import ClusterReadError

    parser: argparse.ArgumentParser = args.parser
    gates = parse_gates_or_exit(parser, args.feature_gates)
    files = input_paths(args)
    # No files and no flag: the cluster kubectl would talk to ($KUBECONFIG, else ~/.kube/config), as a
    # kubectl plugin does (`kubectl dra-capacity top`).
    live = bool(args.kubeconfig or args.context) or (not files and _kubectl_default_config())
    if live and files:
        parser.error("give either --kubeconfig (a live cluster) or files (a dump), not both")
    if not live and not files:
        parser.error(
            "no input: give -f FILE (a dump) or --kubeconfig PATH (a live cluster); "
            "without either, $KUBECONFIG or ~/.kube/config"
        )
    try:
        shape = _read_shape(args.shape) if args.shape else None
        if live:
            return _run_live(args, gates, shape)
        return _run_files(args, gates, files, shape)
    except (DocumentError, InputError, ShapeError, ClusterReadError) as exc:
        error_line(COMMAND, str(exc))
        return EXIT_BAD_INPUT
    except OutputError as exc:
        error_line(COMMAND, str(exc.strerror))
        return EXIT_BAD_INPUT


def _read_shape(path: str) -> Pod:
    """The one Pod of the --shape file (a Deployment's or Job's pod template is taken too)."""
    from allocator.simulate import load_inputs

    docs = read_documents([path], require_objects=True)
    inputs = load_inputs(docs)
    pods = inputs.pods
    if len(pods) != 1:
        raise DocumentError(
            f"--shape {path}: expected one Pod (or one workload of one replica), found {len(pods)}"
        )
    pod = pods[0]
    if pod.spec.node_name:
        raise DocumentError(
            f"--shape {path}: Pod {pod.name!r}: spec.nodeName is set; a shape asks where it fits"
        )
    return pod


def load_view(gates: Any, files: list[str], strategy: str, recursive: bool = False) -> CapacityView:
    """A view of the objects in the files (read and checked as simulate reads them)."""
    from allocator.capacity.view import CapacityView
    from allocator.simulate import load_inputs

    with bulk_load():
        docs = read_documents(files, require_objects=True, recursive=recursive)
        inputs = load_inputs(docs)
        del docs
    for note in inputs.notes:
        print(note, file=sys.stderr)
    view = CapacityView(gates, cast("Strategy", strategy))
    view.load(
        classes=inputs.classes,
        slices=inputs.slices,
        nodes=inputs.nodes,
        claims=inputs.claims,
        pods=inputs.pods,
    )
    if view.headroom is not None and inputs.namespaces:  # namespaceSelector terms of pod (anti-)affinity
        view.headroom.set_namespaces(
            {ns.metadata.name: dict(ns.metadata.labels or {}) for ns in inputs.namespaces}
        )
    return view


def _render(report: Report, output: str | None) -> str:
    from dra_capacity import top_render

    if output == "json":
        return dump_json(top_render.to_json(report))
    if output == "yaml":
        import yaml

        return str(yaml.safe_dump(top_render.to_json(report), sort_keys=False))
    return top_render.render_table(report, wide=output == "wide")


def _show(text: str, watch: bool, first: bool) -> None:
    if watch and sys.stdout.isatty():
        text = "\x1b[H\x1b[2J" + text  # redraw in place, as watch(1) does
    elif watch and not first:
        text = ("---\n" if text.startswith(("classes:", "{")) else "\n") + text
    write_output(text)


def _run_files(args: argparse.Namespace, gates: Any, files: list[str], shape: Pod | None) -> int:
    stamp = _stamps(files)
    view = load_view(gates, files, args.strategy, args.recursive)
    first = True
    while True:
        report = view.report(headroom=not args.no_headroom, shape=shape)
        _show(_render(report, args.output), args.watch, first)
        first = False
        if not args.watch:
            return EXIT_OK
        try:
            while _stamps(files) == stamp:
                time.sleep(args.interval)
        except KeyboardInterrupt:
            return EXIT_OK
        stamp = _stamps(files)
        view = load_view(gates, files, args.strategy, args.recursive)


def _stamps(files: list[str]) -> tuple[tuple[str, float], ...]:
    out = []
    for f in files:
        if f == "-":
            continue
        try:
            out.append((f, os.stat(f).st_mtime))
        except OSError:
            out.append((f, -1.0))
    return tuple(out)


def _run_live(args: argparse.Namespace, gates: Any, shape: Pod | None) -> int:
    from dra_capacity.top_live import LiveView

    live = LiveView(args.kubeconfig, args.context, gates, args.strategy)
    try:
        live.start(SYNC_TIMEOUT)
        first = True
        seen = -1
        while True:
            with live.feed.lock:
                changes = live.feed.changes
                report = live.feed.view.report(headroom=not args.no_headroom, shape=shape)
            if changes != seen:
                _show(_render(report, args.output), args.watch, first)
                first, seen = False, changes
            if not args.watch:
                return EXIT_OK
            try:
                time.sleep(args.interval)
            except KeyboardInterrupt:
                return EXIT_OK
    finally:
        live.stop()
