"""`dra-capacity migrate plan`: the move from device-plugin time-slicing to DRA shares, planned for the
cluster you have (an export, or a live cluster read as `simulate --kubeconfig` reads it; never written).

Imports stay inside the functions: `dra-capacity --help` must not pay for the models or the allocator.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dra_capacity.cliopts import (
    STRATEGY_CHOICES,
    STRATEGY_HELP,
    add_feature_gates_flag,
    add_input_flags,
    add_kubernetes_version_flag,
    bulk_load,
    dump_json,
    error_line,
    input_paths,
    parse_gates_or_exit,
    positive_int,
    read_documents,
    write_output,
)
from resourceapi.manifests.documents import Document, DocumentError

if TYPE_CHECKING:
    from allocator.migrate import MigrationInput
    from allocator.migrate.plugin_config import PluginConfig

COMMAND = "migrate plan"
EXIT_OK = 0
EXIT_UNFIT = 1
EXIT_BAD_INPUT = 2
CORE_KINDS = (
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "Node",
    "Pod",
    "Namespace",
    "ResourceClaimTemplate",
)
SIDE_KINDS = ("ConfigMap", "ResourceQuota", "PodDisruptionBudget")

PLAN_EPILOG = """\
input: an export (-f FILE, FILE, '-', a directory; -R), for example
  kubectl get nodes,pods,deviceclasses,resourceslices,resourceclaims,namespaces,resourcequotas,\\
    poddisruptionbudgets,replicasets,deployments,statefulsets,daemonsets,jobs,cronjobs -A -o yaml \\
    > cluster.yaml
  kubectl get configmap -n gpu-operator time-slicing-config -o yaml > plugin-config.yaml
or a live cluster with --kubeconfig (LIST calls only; never written). --plugin-config reads the NVIDIA device
plugin's sharing ConfigMap (a file, or NAMESPACE/NAME in the export or the cluster); without it a ConfigMap of
the input that holds a plugin config is used, else the nodes' *.shared resources and gpu-feature-discovery's
labels (nvidia.com/gpu.count, nvidia.com/gpu.replicas).

output: three parts, the classes (manifests with the capacity request in the annotation carrier, the driver
settings they assume, warnings), the workloads (grouped by owner, with what changes for each) and the steps
(0: install, classes, namespaces; then one per node batch: cordon, drain, switch, uncordon, where the evicted
pods go, whether all fit, the headroom per class as `top` counts it, a rollback). -o json|yaml: one document
with the keys classes, workloads and steps (each step has node and fits). --write-classes DIR writes the
classes to create, one file each.

exit status:
  0  the plan was made (a step that cannot keep every pod is a result)
  1  with --fail-unschedulable: some step cannot keep every pod
  2  bad usage, unreadable input or a cluster that cannot be read (one line on stderr,
     "dra-capacity migrate plan: error: ...", naming the file, the object and the field; nothing on stdout)
Walkthrough: docs/user-guide.md.
"""


def add_commands(sub: Any) -> None:
    """Register `migrate` (with its one subcommand, `plan`) on the top-level subparsers."""
    migrate = sub.add_parser("migrate", help="plan the move from device-plugin time-slicing to DRA shares")
    verbs = migrate.add_subparsers(dest="migrate_command", metavar="COMMAND")
    verbs.required = True
    plan = verbs.add_parser(
        "plan",
        help="the classes, the workloads and the node-by-node steps of the move",
        description="Plan the move of time-sliced GPUs (NVIDIA device plugin) to DRA consumable capacity "
        "with the pods unchanged: the DeviceClasses to create, what changes for each workload, and the "
        "steps node batch by node batch, each placed as the binder would place the evicted pods.",
        epilog=PLAN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_feature_gates_flag(plan)
    add_kubernetes_version_flag(plan)
    plan.add_argument(
        "-o", "--output", choices=("table", "json", "yaml"), default="table", help="output format (table)"
    )
    plan.add_argument(
        "--max-unavailable", type=positive_int, default=1, metavar="N", help="nodes per step (default 1)"
    )
    plan.add_argument("--node-pool-label", metavar="LABEL", help="one step per value of this node label")
    plan.add_argument(
        "--plugin-config",
        metavar="FILE|NAMESPACE/NAME",
        help="the device plugin's sharing ConfigMap: a file, or a ConfigMap of the input (or the cluster)",
    )
    plan.add_argument(
        "--plugin-config-default",
        metavar="KEY",
        help="the ConfigMap key nodes without nvidia.com/device-plugin.config use (chart: config.default)",
    )
    plan.add_argument("--write-classes", metavar="DIR", help="write the DeviceClasses to create into DIR")
    plan.add_argument("--strategy", choices=STRATEGY_CHOICES, default="binpack", help=STRATEGY_HELP)
    plan.add_argument(
        "--explain",
        action="store_true",
        help="say why, for the pods of every failing step (the first failing step always says it)",
    )
    plan.add_argument(
        "--fail-unschedulable", action="store_true", help="exit 1 when some step cannot keep every pod"
    )
    cluster = plan.add_argument_group("reading a cluster (never writes to it)")
    cluster.add_argument("--kubeconfig", metavar="PATH", help="read the cluster (paginated LIST calls)")
    cluster.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    add_input_flags(plan)
    plan.set_defaults(func=run_plan, parser=plan)


def run_plan(args: argparse.Namespace) -> int:
    from allocator.migrate import Options, PlanError, PluginConfigError, plan_migration
    from allocator.migrate.render import render_table, to_json
    from allocator.simulate import InputError
    from dra_capacity.cluster_source import ClusterReadError

    parser: argparse.ArgumentParser = args.parser
    gates = parse_gates_or_exit(parser, args.feature_gates, args.kubernetes_version, command="migrate")
    live = bool(args.kubeconfig or args.context)
    files = input_paths(args)
    if live and files:
        parser.error("give either --kubeconfig (a live cluster) or files (an export), not both")
    if not live and not files:
        parser.error("no input: give -f FILE (an export) or --kubeconfig PATH (a live cluster)")
    try:
        data = _load(args, gates, live, files)
        plan = plan_migration(
            data,
            gates,
            Options(args.max_unavailable, args.node_pool_label, args.strategy, args.explain),
        )
        doc = to_json(plan)
        if args.output == "json":
            text = dump_json(doc)
        elif args.output == "yaml":
            import yaml

            text = str(yaml.safe_dump(doc, sort_keys=False))
        else:
            text = render_table(plan)
        if args.write_classes:
            _write_classes(Path(args.write_classes), [c.manifest for c in plan.classes if not c.exists])
        for note in data.notes:
            print(note, file=sys.stderr)
        write_output(text)
    except (DocumentError, InputError, ClusterReadError, PlanError, PluginConfigError) as exc:
        error_line(COMMAND, str(exc))
        return EXIT_BAD_INPUT
    except OSError as exc:
        error_line(COMMAND, f"{getattr(exc, 'filename', None) or ''}: {exc.strerror or exc}".lstrip(": "))
        return EXIT_BAD_INPUT
    if args.fail_unschedulable and not plan.fits:
        return EXIT_UNFIT
    return EXIT_OK


def _write_classes(root: Path, manifests: list[dict[str, Any]]) -> None:
    import yaml

    root.mkdir(parents=True, exist_ok=True)
    for m in manifests:
        (root / f"{m['metadata']['name']}.yaml").write_text(yaml.safe_dump(m, sort_keys=False))


def _load(args: argparse.Namespace, gates: Any, live: bool, files: list[str]) -> MigrationInput:
    from allocator.migrate import MigrationInput
    from allocator.simulate import load_inputs

    notes: list[str] = []
    named = _configmap_name(args.plugin_config)
    with bulk_load():
        if live:
            from dra_capacity.cluster_source import migrate_kinds, read_cluster

            docs = read_cluster(
                args.kubeconfig, args.context, pending=True, extra=migrate_kinds(named), notes=notes
            )
        else:
            docs = read_documents(files, require_objects=True, recursive=args.recursive)
        extra: list[Document] = []
        if args.plugin_config and named is None:
            extra = read_documents([args.plugin_config], require_objects=True)
        core = [d for d in docs if d.kind in CORE_KINDS]
        side = [d for d in docs if d.kind in SIDE_KINDS]
        owners = [d.obj for d in docs if d.kind not in CORE_KINDS and d.kind not in SIDE_KINDS]
        inputs = load_inputs(core, gates=gates)
        notes.extend(inputs.notes)
        quotas = [d.obj for d in side if d.kind == "ResourceQuota"]
        budgets = _budgets([d for d in side if d.kind == "PodDisruptionBudget"])
        configmaps = [d for d in side if d.kind == "ConfigMap"]
        plugin = _plugin(args, named, configmaps, [d for d in extra if d.kind == "ConfigMap"], notes)
    return MigrationInput(inputs, owners, quotas, budgets, plugin, notes)


def _configmap_name(value: str | None) -> tuple[str, str] | None:
    """`NAMESPACE/NAME` (a ConfigMap of the input), or None for a file path."""
    if value is None or Path(value).exists() or value.count("/") != 1 or value.startswith(("/", ".")):
        return None
    ns, name = value.split("/")
    return (ns, name) if ns and name else None


def _budgets(docs: list[Document]) -> list[dict[str, Any]]:
    from pydantic import ValidationError

    from allocator.migrate.disruption import read_budgets

    for d in docs:
        try:
            read_budgets([d.obj])
        except ValidationError as exc:
            first = exc.errors()[0]
            path = ".".join(str(p) for p in first["loc"])
            raise DocumentError(
                f'{d.where}: PodDisruptionBudget "{_ns_name(d.obj)}": spec.selector.{path}: {first["msg"]}'
            ) from None
    return [d.obj for d in docs]


def _ns_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def _is_plugin_config(obj: dict[str, Any]) -> bool:
    data = obj.get("data") or {}
    return isinstance(data, dict) and any(
        isinstance(v, str) and ("timeSlicing" in v or "mps:" in v) for v in data.values()
    )


def _plugin(
    args: argparse.Namespace,
    named: tuple[str, str] | None,
    configmaps: list[Document],
    from_file: list[Document],
    notes: list[str],
) -> PluginConfig | None:
    from allocator.migrate import PluginConfigError, read_plugin_config

    chosen: Document | None = None
    if named is not None:
        chosen = next((d for d in configmaps if _ns_name(d.obj) == f"{named[0]}/{named[1]}"), None)
        if chosen is None:
            raise DocumentError(f"--plugin-config {args.plugin_config}: no such ConfigMap in the input")
    elif args.plugin_config:
        if len(from_file) != 1:
            raise DocumentError(
                f"--plugin-config {args.plugin_config}: expected one ConfigMap, found {len(from_file)}"
            )
        chosen = from_file[0]
    else:
        found = [d for d in configmaps if _is_plugin_config(d.obj)]
        if len(found) > 1:
            raise DocumentError(
                "the input holds several device plugin ConfigMaps ("
                + ", ".join(_ns_name(d.obj) for d in found)
                + "): choose one with --plugin-config NAMESPACE/NAME"
            )
        if found:
            chosen = found[0]
            notes.append(f"note: using the device plugin config in ConfigMap {_ns_name(chosen.obj)}")
    if chosen is None:
        return None
    try:
        return read_plugin_config(chosen.obj, args.plugin_config_default)
    except PluginConfigError as exc:
        raise PluginConfigError(f"{chosen.where}: {exc}") from None
