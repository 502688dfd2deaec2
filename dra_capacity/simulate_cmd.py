"""`dra-capacity simulate`: flags, input reading and output (the logic is allocator/simulate.py)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dra_capacity.cliopts import (
    OutputError,
    add_feature_gates_flag,
    parse_gates_or_exit,
    read_documents,
    write_output,
)
from resourceapi.documents import DocumentError

EXIT_OK = 0
EXIT_BAD_INPUT = 2

SIMULATE_EPILOG = """\
input: DeviceClass, ResourceSlice, ResourceClaim (resource.k8s.io/v1), Node and Pod (v1) objects, as
`kubectl get -o yaml|json` prints them (multi-document streams, kind: List); any other kind is an error.
  pod mode    the input has Pods without spec.nodeName: placed one at a time, in input order
  claim mode  unallocated ResourceClaims and no pending Pods: allocated together on one node
              (--node, or the only Node in the input)

exit status: 0 whenever the simulation ran (unschedulable pods are a result); 2 for bad usage or bad
input (the message names the file, the document, the object and the field; nothing on stdout).
Walkthroughs: docs/simulate.md."""


def add_commands(sub: Any) -> None:
    """Register `simulate` on the top-level subparsers."""
    simulate = sub.add_parser(
        "simulate",
        help="what-if DRA allocation and pod placement, offline",
        description=(
            "Allocate unallocated ResourceClaims on one node (claim mode) or place pending Pods one at a "
            "time (pod mode), as the binder would, from ordinary Kubernetes objects."
        ),
        epilog=SIMULATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_feature_gates_flag(simulate)
    simulate.add_argument("--node", metavar="NAME", help="the node for claim mode (pod mode: only this node)")
    simulate.add_argument("--strategy", choices=("binpack", "spread"), default="binpack", help="node scoring")
    simulate.add_argument(
        "--percentage-of-nodes-to-score",
        type=_percentage,
        default=100,
        metavar="N",
        help="stop a pod's node search after this share of feasible nodes, as kube-scheduler (default 100: "
        "every node; 0: kube-scheduler's adaptive default; at least 100 nodes are always checked)",
    )
    simulate.add_argument("-o", "--output", choices=("json", "table"), default="json", help="output format")
    simulate.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML/JSON input (repeatable; '-' is standard input)",
    )
    simulate.add_argument("extra_files", nargs="*", metavar="FILE", help=argparse.SUPPRESS)
    simulate.set_defaults(func=run_simulate, parser=simulate)


def _percentage(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: must be an integer from 0 to 100"
        ) from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: must be an integer from 0 to 100")
    return value


def run_simulate(args: argparse.Namespace) -> int:
    """Load everything, then run claim mode or pod mode; exit 0 whenever the simulation ran."""
    from allocator.simulate import InputError, UsageError, load_inputs, render_table, run_claims, run_pods

    parser: argparse.ArgumentParser = args.parser
    gates = parse_gates_or_exit(parser, args.feature_gates)
    files = [*args.files, *args.extra_files]
    if not files:
        parser.error("no input: give at least one -f FILE")
    try:
        inputs = load_inputs(read_documents(files, require_objects=True))
    except (DocumentError, InputError) as exc:
        print(f"dra-capacity simulate: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if inputs.pending_pods() or not inputs.unallocated_claims():
            out, cluster = run_pods(
                inputs, gates, args.strategy, args.node, percentage=args.percentage_of_nodes_to_score
            )
        else:
            out, cluster = run_claims(inputs, gates, args.node)
    except UsageError as exc:
        parser.error(str(exc))
        raise  # unreachable
    text = (
        render_table(out, cluster, inputs.slices)
        if args.output == "table"
        else json.dumps(out, indent=2) + "\n"
    )
    try:
        write_output(text)
    except OutputError as exc:
        print(f"dra-capacity simulate: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK
