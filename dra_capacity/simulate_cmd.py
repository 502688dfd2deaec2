"""`dra-capacity simulate`: flags, input reading and output (the logic is the allocator.simulate package).

Imports stay inside the functions: `dra-capacity --help` must not pay for pydantic models, the allocator, the
CEL engine or the `kubernetes` client.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from dra_capacity.cliopts import (
    STRATEGY_CHOICES,
    STRATEGY_HELP,
    OutputError,
    add_feature_gates_flag,
    add_input_flags,
    add_kubernetes_version_flag,
    bulk_load,
    dump_json,
    error_line,
    input_paths,
    parse_gates_or_exit,
    read_documents,
    write_output,
    young_collections_only,
)
from resourceapi.gates import DEFAULT_RELEASE
from resourceapi.manifests.documents import Document, DocumentError

if TYPE_CHECKING:
    from fractions import Fraction

    from allocator.simulate import Inputs
    from allocator.structured.cluster import Cluster
    from resourceapi.api.core_v1 import Node, Pod
    from resourceapi.gates import FeatureGates

COMMAND = "simulate"
EXIT_OK = 0
EXIT_UNSCHEDULABLE = 1
EXIT_BAD_INPUT = 2

SIMULATE_EPILOG = """\
input: DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate (resource.k8s.io/v1), Node and Pod
(v1) objects, and Deployments, ReplicaSets, StatefulSets and Jobs (their pods), as `kubectl get -o yaml|json`
prints them (multi-document streams, kind: List), from -f FILE, FILE, '-' (standard input) or a directory
(-R: recursively); or the cluster's own state with --kubeconfig. A pending pod's template entry without a
generated claim gets the claim the resourceclaim controller would generate.
Namespaces are read for their labels; other kinds are skipped with a note on stderr. Unknown fields are
warnings (errors with --strict).
  pod mode    the input has Pods without spec.nodeName: placed one at a time, in input order
  claim mode  unallocated ResourceClaims and no pending Pods: allocated together on one node
              (--node, or the only Node in the input)
pod results: bound, unschedulable, error, gated (spec.schedulingGates), unsupported (uses a scheduler
feature simulate does not model, named in the reason; never placed).

output: -o json (default) and -o yaml carry, for every pod or claim, the file, document and List item it
came from, and "devices": capacity used/total per device after the run (numbers in the capacity's base
unit). -o table prints one row per device share and the same summary. Notes go to stderr.
--explain adds, for each pod or claim not placed, the reasons per node and per request (class or request
selector, capacity name or amount, devices full or allocated, counters, taints, node predicates), grouped
across nodes: under its line in -o table, as an "explain" list in -o json|yaml.

exit status:
  0  the simulation ran (unschedulable pods are a result)
  1  with --fail-unschedulable: some pod or claim was not placed
  2  bad usage, unreadable input or a cluster that cannot be read (one line on stderr,
     "dra-capacity simulate: error: ...", naming the file, the document, the object and the field;
     nothing on stdout)
Walkthroughs: docs/simulate.md.
"""


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
    add_kubernetes_version_flag(simulate)
    simulate.add_argument("--node", metavar="NAME", help="the node for claim mode (pod mode: only this node)")
    simulate.add_argument("--strategy", choices=STRATEGY_CHOICES, default="binpack", help=STRATEGY_HELP)
    simulate.add_argument(
        "--percentage-of-nodes-to-score",
        type=_percentage,
        default=100,
        metavar="N",
        help="stop a pod's node search after this share of feasible nodes, as kube-scheduler (default 100: "
        "every node; 0: kube-scheduler's adaptive default; at least 100 nodes are always checked)",
    )
    simulate.add_argument(
        "-o", "--output", choices=("json", "yaml", "table"), default="json", help="output format"
    )
    simulate.add_argument(
        "--strict",
        action="store_true",
        help="unknown fields (for the Kubernetes 1.37 types) are errors, as kubectl --validate=strict",
    )
    simulate.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="seed of the random parts of generated names (workload pods, claims from templates, "
        "pod-template-hash), for reproducible output",
    )
    simulate.add_argument(
        "--explain",
        action="store_true",
        help="say why each pod or claim that did not fit fails, per node and per request (-o table: under "
        'its line; -o json|yaml: an "explain" list per pod, or in the claim-mode result)',
    )
    simulate.add_argument(
        "--fail-unschedulable",
        action="store_true",
        help="exit 1 when any pod or claim is not placed (for CI checks)",
    )
    cluster = simulate.add_argument_group("reading a cluster (never writes to it)")
    cluster.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="read Nodes, ResourceSlices, DeviceClasses, ResourceClaims and running Pods from this cluster "
        "(paginated LIST calls); files add the pods to place",
    )
    cluster.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    cluster.add_argument(
        "--pending",
        action="store_true",
        help="place the cluster's own pending pods (with --kubeconfig, or the default kubeconfig / "
        "in-cluster configuration)",
    )
    cluster.add_argument(
        "--chunk-size",
        type=int,
        default=500,
        metavar="N",
        help="objects per LIST page, as kubectl get --chunk-size (default 500)",
    )
    add_input_flags(simulate)
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


def _reads_cluster(args: argparse.Namespace) -> bool:
    return bool(args.kubeconfig or args.context or args.pending)


Origin = tuple[str, int, int | None]  # file, 1-based document, List item


def load(args: argparse.Namespace, gates: FeatureGates) -> tuple[Inputs, dict[int, Origin]]:
    """Read the files (and the cluster) and build the checked inputs; raises DocumentError, InputError or
    ClusterReadError. Also returns, per pod and claim (by object id), where it came from (not the Document:
    that would keep every raw object alive beside its model)."""
    from allocator.simulate import load_inputs

    files = input_paths(args)
    with bulk_load():
        docs: list[Document] = []
        if _reads_cluster(args):
            from dra_capacity.cluster_source import read_cluster

            progress = sys.stderr if sys.stderr is not None and sys.stderr.isatty() else None
            docs += read_cluster(
                args.kubeconfig,
                args.context,
                pending=args.pending,
                page_size=args.chunk_size,
                progress=progress,
            )
        if files:
            docs += read_documents(files, require_objects=not docs, recursive=args.recursive)
        if args.strict:
            check_strict(docs, gates.release)
        # warnings from its one walk
        inputs = load_inputs(docs, warn_unknown=not args.strict, seed=args.seed, gates=gates)
        by_key = {_key(d.kind, d.obj.get("metadata")): d for d in docs if d.kind in ("Pod", "ResourceClaim")}
        origin: dict[int, Origin] = {}
        for kind, objs in (("Pod", inputs.pods), ("ResourceClaim", inputs.claims)):
            for obj in objs:
                doc = by_key.get((kind, obj.metadata.namespace or "default", obj.metadata.name))
                if doc is not None:
                    origin[id(obj)] = (doc.source, doc.index, doc.item)
        del docs, by_key
    return inputs, origin


def check_strict(docs: list[Document], release_name: str = DEFAULT_RELEASE) -> None:
    """`--strict`: the first object with fields its type (in `release_name`) lacks is an input error naming
    all of them, in the API server's words (`strict decoding error: unknown field "spec.nodeNmae"`)."""
    from resourceapi.manifests.apischema import unknown_fields

    for doc in docs:
        unknown = unknown_fields(doc.api_version, doc.kind, doc.obj, release_name)
        if unknown:
            fields = ", ".join(f'unknown field "{path}"' for path in unknown)
            raise DocumentError(f"{doc.where}: {_label(doc)}: strict decoding error: {fields}")


def _label(doc: Document) -> str:
    meta = doc.obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    name = f"{ns or 'default'}/{doc.name}" if doc.kind in ("Pod", "ResourceClaim") else doc.name
    return f'{doc.kind} "{name}"'


def _key(kind: str, meta: Any) -> tuple[str, str, str]:
    if not isinstance(meta, dict):
        return (kind, "", "")
    return (kind, str(meta.get("namespace") or "default"), str(meta.get("name") or ""))


def run_simulate(args: argparse.Namespace) -> int:
    """Load everything, then run claim mode or pod mode; exit 0 whenever the simulation ran."""
    with young_collections_only():
        return _simulate(args)


def _simulate(args: argparse.Namespace) -> int:
    from allocator.simulate import (
        InputError,
        Simulation,
        UsageError,
        render_table,
        run_claims,
        run_pods,
        to_json,
    )
    from dra_capacity.cluster_source import ClusterReadError

    parser: argparse.ArgumentParser = args.parser
    gates = parse_gates_or_exit(parser, args.feature_gates, args.kubernetes_version, command=COMMAND)
    if not input_paths(args) and not _reads_cluster(args):
        parser.error("no input: give -f FILE (or --kubeconfig PATH to read a cluster)")
    if args.chunk_size < 1:
        parser.error("--chunk-size must be at least 1")
    try:
        inputs, origin = load(args, gates)
    except (DocumentError, InputError, ClusterReadError) as exc:
        error_line(COMMAND, str(exc))
        return EXIT_BAD_INPUT
    for note in inputs.notes:
        print(note, file=sys.stderr)
    sim: Simulation
    try:
        if inputs.pending_pods() or not inputs.unallocated_claims():
            sim, cluster = run_pods(
                inputs,
                gates,
                args.strategy,
                args.node,
                percentage=args.percentage_of_nodes_to_score,
                explain=args.explain,
            )
            out = to_json(sim)
            pods = inputs.pending_pods()
            nodes = {n.name: n for n in inputs.nodes}
            for entry, pod in zip(out["pods"], pods, strict=True):
                _add_origin(entry, origin.get(id(pod)))
                _add_device_plugin(entry, pod, nodes)
        else:
            sim, cluster = run_claims(inputs, gates, args.node, explain=args.explain)
            out = to_json(sim)
            for entry, claim in zip(out["claims"], inputs.unallocated_claims(), strict=True):
                _add_origin(entry, origin.get(id(claim)))
    except UsageError as exc:
        parser.error(str(exc))
        raise  # unreachable
    for note in [*sim.notes, *_device_plugin_notes(out)]:
        print(note, file=sys.stderr)
    if args.output == "table":
        text = render_table(sim, cluster, inputs.slices)
    else:
        out["devices"] = device_summary(cluster, inputs)
        if args.output == "yaml":
            import yaml

            text = yaml.safe_dump(out, sort_keys=False)
        else:
            text = dump_json(out)
    try:
        write_output(text)
    except OutputError as exc:
        error_line(COMMAND, str(exc.strerror))
        return EXIT_BAD_INPUT
    if args.fail_unschedulable and not _all_placed(out):
        return EXIT_UNSCHEDULABLE
    return EXIT_OK


def _all_placed(out: dict[str, Any]) -> bool:
    if out["mode"] == "claims":
        return bool(out["result"] == "allocated")
    return all(p["result"] == "bound" for p in out["pods"])


def _add_origin(entry: dict[str, Any], origin: Origin | None) -> None:
    """Where the pod or claim came from: `file`, 1-based `document`, `item` in a List (else null)."""
    if origin is not None:
        entry.update(file=origin[0], document=origin[1], item=origin[2])


def _add_device_plugin(entry: dict[str, Any], pod: Pod, nodes: dict[str, Node]) -> None:
    """`devicePlugin`: the pod's extended resources its node serves through the device plugin (the node's
    `status.allocatable` lists them, so the scheduler does not ask DRA), as upstream's
    pkg/scheduler/framework/plugins/dynamicresources/extended decides."""
    if entry.get("result") != "bound" or not entry.get("node"):
        return
    from allocator.scheduling.synthesis import scalar_requests

    node = nodes.get(entry["node"])
    allocatable = (node.status.allocatable if node is not None and node.status is not None else None) or {}
    served = sorted(
        name for name in scalar_requests(pod) if name in allocatable and allocatable[name].sign() != 0
    )
    if served:
        entry["devicePlugin"] = served


def _device_plugin_notes(out: dict[str, Any]) -> list[str]:
    return [
        f"note: {p['namespace']}/{p['name']}: {', '.join(p['devicePlugin'])} served by the device plugin on "
        f"node {p['node']} (listed in its status.allocatable), not by DRA"
        for p in out.get("pods") or []
        if p.get("devicePlugin")
    ]


def device_summary(cluster: Cluster, inputs: Inputs) -> list[dict[str, Any]]:
    """Per device and capacity, used and total after the run as numbers in the capacity's base unit (bytes,
    shares, ...), the summary `-o table` prints; in the table's order."""
    from allocator.structured.ids import DeviceID

    out: list[dict[str, Any]] = []
    for s in sorted(inputs.slices, key=lambda s: (s.spec.driver, s.spec.pool.name, s.metadata.name)):
        for d in s.spec.devices or []:
            if not d.capacity:
                continue
            device = DeviceID(s.spec.driver, s.spec.pool.name, d.name)
            exclusive = device in cluster.state.dedicated  # allocated whole: all of it is in use
            for cap, (used, total) in sorted(cluster.device_capacity(device).items()):
                used = total if exclusive else used
                out.append(
                    {
                        "driver": s.spec.driver,
                        "pool": s.spec.pool.name,
                        "device": d.name,
                        "capacity": cap,
                        "used": _number(used.value),
                        "total": _number(total.value),
                    }
                )
    return out


def _number(value: Fraction) -> int | float:
    return value.numerator if value.denominator == 1 else float(value)
