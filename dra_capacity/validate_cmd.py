"""`dra-capacity validate`: the webhook's mutation + validation, offline, on DeviceClass manifests.

Per object it prints what `kubectl apply` would print against a cluster with the webhook installed, on the
same streams: `created`/`configured` on stdout; warnings, rejections and notes on stderr. `-o json|yaml`
prints one document on stdout instead. Exit codes: 0 all allowed, 1 any rejected, 2 bad invocation,
unreadable input or no DeviceClass validated (nothing printed to stdout then).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from pydantic import ValidationError

from dra_capacity import kubectl
from dra_capacity.cliopts import (
    InputFailure,
    OutputError,
    add_feature_gates_flag,
    add_input_flags,
    add_kubernetes_version_flag,
    dump_json,
    empty_input,
    error_line,
    input_paths,
    parse_gates_or_exit,
    read_documents,
    read_each_file,
    write_output,
)
from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice
from resourceapi.capacity_requests import FIELD_PATH
from resourceapi.gates import FeatureGates
from resourceapi.machinery.objects import metadata_of
from resourceapi.manifests import apischema
from resourceapi.manifests.documents import Document, DocumentError
from webhook.clusterview.cluster_view import ClusterView
from webhook.deviceclass.admission import VERSIONS, DeviceClassAdmission
from webhook.deviceclass.dropping import DroppedField, apply_removals, drop_disabled_fields
from webhook.server.status import GROUP, KIND

COMMAND = "validate"
EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2

VALIDATE_EPILOG = """\
output: text (default) prints what `kubectl apply` prints with the webhook installed: the
  `deviceclass.resource.k8s.io/NAME created` lines on stdout; `Warning:` lines, rejections and notes (skipped
  kinds, fields dropped because their feature gate is off) on stderr. -o json|yaml print one document,
  {"results": [...]}, each result naming its file, document and List item.

exit status:
  0  every DeviceClass is allowed
  1  at least one DeviceClass is rejected (with --strict: also for unknown fields)
  2  bad usage, unreadable or unparseable input, or no DeviceClass in the input (one line on stderr,
     "dra-capacity validate: error: ...", nothing on stdout). A file that is not a Kubernetes manifest
     (a YAML error, a document without kind, an object without apiVersion) is reported in such a line and
     left out; every other file is still validated and printed, and the exit status is 2 at the end.
"""


@dataclass
class Result:
    """The verdict on one DeviceClass document, and where the document came from."""

    name: str
    update: bool
    allowed: bool
    warnings: list[str]
    status: dict[str, Any] | None
    patch: list[dict[str, Any]]
    doc: Document | None = None
    dropped: list[DroppedField] | None = None
    native: frozenset[tuple[str, str]] = frozenset()  # (field, message) of causes the API server checks too

    def causes(self) -> list[dict[str, Any]]:
        """The rejection's causes, each marked `native` when the API server enforces that rule itself."""
        causes = (self.status or {}).get("details", {}).get("causes", []) if not self.allowed else []
        out: list[dict[str, Any]] = []
        for c in causes:
            field, message = c.get("field", ""), c.get("message", "")
            native = (field, message) in self.native
            # the wire's StatusCause `reason` is `type` in this JSON (docs/cli-contract)
            out.append({"field": field, "type": c.get("reason", ""), "message": message, "native": native})
        return out

    def native_note(self) -> str | None:
        """For stderr: which causes are native rules (the API server would refuse the object too)."""
        fields = [c["field"] for c in self.causes() if c["native"]]
        if not fields:
            return None
        where = f"{self.doc.where}: " if self.doc is not None else ""
        return (
            f"{where}{kubectl.RESOURCE}/{self.name}: {', '.join(fields)}: native rule: the API server "
            "refuses this object too, with or without the webhook"
        )

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "allowed": self.allowed,
            "warnings": list(self.warnings),
            "causes": self.causes(),
            "patch": self.patch,
        }
        if self.doc is not None:
            out.update(file=self.doc.source, document=self.doc.index, item=self.doc.item)
        return out

    def text(self) -> list[str]:
        """Every line, in kubectl's order (warnings, then the verdict); see `stdout_lines`."""
        lines = kubectl.render_warnings(self.warnings)
        if self.allowed:
            lines.append(kubectl.render_success(self.name, self.update))
        else:
            lines.append(kubectl.render_status(self.status or {}))
        return lines

    def notes(self) -> list[str]:
        """Fields the API server would not store because their gate is off, said in words (stderr)."""
        where = f"{self.doc.where}: " if self.doc is not None else ""
        return [
            f"{where}{kubectl.RESOURCE}/{self.name}: {d.path} dropped: feature gate {d.gate} is disabled, "
            "so the API server does not store it"
            for d in self.dropped or []
        ]


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    add_feature_gates_flag(parser)
    add_kubernetes_version_flag(parser)
    parser.add_argument(
        "--old",
        action="append",
        default=[],
        metavar="FILE",
        help="previous versions of the objects (matched by name): evaluate an update instead of a create",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="unknown fields are errors, as kubectl --validate=strict (default: warnings)",
    )
    parser.add_argument(
        "--cluster",
        action="append",
        default=[],
        metavar="FILE",
        help="a dump of the cluster's ResourceSlices and DeviceClasses (kubectl get resourceslices,"
        "deviceclasses -o yaml): adds the webhook's cluster-aware warnings (never rejections)",
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json", "yaml"), default="text", help="output format"
    )
    add_input_flags(parser)
    parser.set_defaults(func=run_validate, parser=parser)


def run_validate(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    gates = parse_gates_or_exit(
        args.parser, args.feature_gates, args.kubernetes_version, command=COMMAND, err=err
    )
    files = input_paths(args)
    if not files:
        args.parser.error("no input: give FILE or -f FILE ('-' for standard input)")
    try:
        old_docs = read_documents(args.old, recursive=args.recursive) if args.old else []
        cluster = (
            cluster_view(read_documents(args.cluster, recursive=args.recursive)) if args.cluster else None
        )
    except DocumentError as exc:
        error_line(COMMAND, str(exc), err)
        return EXIT_USAGE
    for doc in old_docs:
        if not doc.api_version:
            error_line(COMMAND, f"{doc.where}: {doc.kind} {doc.name!r}: missing field 'apiVersion'", err)
            return EXIT_USAGE
    # The objects to judge: a file that is not a Kubernetes manifest (a Helm values file in the directory, a
    # YAML error) is reported and left out, and every other file is still checked, as kubeconform does; the
    # exit status says so at the end (2). An object without apiVersion is such a failure too: kubectl cannot
    # decode it either, and skipping it silently would pass CI.
    docs, failures = read_each_file(files, recursive=args.recursive)
    for doc in docs:
        if not doc.api_version:
            failures.append(
                InputFailure(doc.source, f"{doc.where}: {doc.kind} {doc.name!r}: missing field 'apiVersion'")
            )
    docs = [d for d in docs if d.api_version]
    for failure in failures:
        error_line(COMMAND, failure.message, err)
    if not docs and not failures:
        error_line(COMMAND, empty_input(files), err)
        return EXIT_USAGE
    olds: dict[str, dict[str, Any]] = {}
    for doc in old_docs:
        skip = _skip_reason(doc)
        if skip:
            print(f"{doc.where}: skipping {doc.kind} {doc.name!r} (--old): {skip}", file=err)
        elif name := assigned_name(doc.obj):
            olds[name] = doc.obj
    admission = DeviceClassAdmission(gates, cluster=(lambda: cluster) if cluster is not None else None)
    results: list[Result] = []
    for number, doc in enumerate(docs, 1):
        skip = _skip_reason(doc)
        if skip:
            print(f"{doc.where}: skipping {doc.kind} {doc.name!r}: {skip}", file=err)
            continue
        name = assigned_name(doc.obj)
        old = olds.get(name) if name else None
        result = strict_rejection(doc, old) if args.strict else None
        results.append(result or evaluate(admission, doc, old, number, gates))
    if not results:
        if not failures:
            error_line(COMMAND, f"{', '.join(files)}: no DeviceClass found: nothing was validated", err)
        return EXIT_USAGE
    text = render(results, args.output, err, failures)
    try:
        write_output(text, out)
    except OutputError as exc:
        error_line(COMMAND, str(exc.strerror), err)
        return EXIT_USAGE
    if failures:
        error_line(
            COMMAND,
            f"left out {_plural(len(failures), 'input')} that "
            f"{'is not a Kubernetes object' if len(failures) == 1 else 'are not Kubernetes objects'} (see "
            "above); validated the "
            f"{_plural(len(results), 'DeviceClass', 'DeviceClasses')} in the rest",
            err,
        )
        return EXIT_USAGE
    return EXIT_REJECTED if any(not r.allowed for r in results) else EXIT_OK


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def render(results: list[Result], output: str, err: TextIO, failures: Sequence[InputFailure] = ()) -> str:
    """stdout's text; in text mode, warnings, rejections and notes are written to `err` as they come.
    `-o json|yaml` lists the files left out under `errors` (only when there are some)."""
    if output in ("json", "yaml"):
        doc: dict[str, Any] = {"results": [r.as_json() for r in results]}
        if failures:
            doc["errors"] = [{"file": f.file, "message": f.message} for f in failures]
        if output == "json":
            return dump_json(doc)
        import yaml

        return yaml.safe_dump(doc, sort_keys=False)
    lines: list[str] = []
    for r in results:
        for note in r.notes():
            print(note, file=err)
        for line in kubectl.render_warnings(r.warnings):
            print(line, file=err)
        if r.allowed:
            lines.append(kubectl.render_success(r.name, r.update))
        else:
            print(kubectl.render_status(r.status or {}), file=err)
            native = r.native_note()
            if native is not None:
                print(native, file=err)
    return "".join(line + "\n" for line in lines)


def strict_rejection(doc: Document, old: dict[str, Any] | None) -> Result | None:
    """kubectl `--validate=strict`: unknown fields fail the write before admission runs, as the API server's
    strict decoding does (`k8s.io/apimachinery/pkg/runtime/serializer/json`: `strict decoding error:
    unknown field "spec.x"`)."""
    unknown = unknown_fields(doc)
    if not unknown:
        return None
    _, _, version = doc.api_version.rpartition("/")
    fields = ", ".join(f'unknown field "{path}"' for path in unknown)
    message = (
        f"{KIND} in version {json.dumps(version)} cannot be handled as a {KIND}: "
        f"strict decoding error: {fields}"
    )
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
        "details": {
            "group": GROUP,
            "kind": KIND,
            "name": doc.name,
            "causes": [
                {"field": path, "reason": "FieldValueInvalid", "message": "unknown field"} for path in unknown
            ],
        },
    }
    return Result(doc.name, old is not None, False, [], status, [], doc)


def evaluate(
    admission: DeviceClassAdmission,
    doc: Document,
    old: dict[str, Any] | None,
    number: int,
    gates: FeatureGates | None = None,
) -> Result:
    """Mutate, apply the patch, then validate the mutated object: the apiserver's order."""
    group, _, version = doc.api_version.rpartition("/")
    request: dict[str, Any] = {
        "uid": f"dra-capacity-validate-{number}",
        "kind": {"group": group, "version": version, "kind": KIND},
        "resource": {"group": group, "version": version, "resource": "deviceclasses"},
        "operation": "UPDATE" if old is not None else "CREATE",
        "name": doc.name,
        "object": doc.obj,
    }
    if old is not None:
        request["oldObject"] = old
    mutated = admission.mutate(request).response
    patch: list[dict[str, Any]] = []
    if "patch" in mutated:
        patch = json.loads(base64.b64decode(mutated["patch"]))
    obj = apply_removals(doc.obj, patch) if patch else doc.obj
    outcome = admission.validate({**request, "object": obj})
    response = outcome.response
    return Result(
        name=outcome.name or doc.name,
        update=old is not None,
        allowed=bool(response.get("allowed")),
        warnings=[f'unknown field "{path}"' for path in unknown_fields(doc)]
        + list(response.get("warnings", [])),
        status=response.get("status"),
        patch=patch,
        doc=doc,
        dropped=drop_disabled_fields(doc.obj, old, gates).dropped if gates is not None and patch else [],
        native=frozenset((e.field, e.body()) for e in getattr(outcome, "native", ())),
    )


def unknown_fields(doc: Document) -> list[str]:
    """Paths of fields a DeviceClass does not have, as the API server's strict field validation names them
    (`spec.selectors[0].cell`). Webhooks never see them (the API server drops them, or kubectl's default
    `--validate=strict` refuses the write), so a typo would otherwise read as `created`. Inside the KEP-6406
    field they are left to its own rules (resourceapi/capacity_requests.py), which report them once."""
    inside = f"{FIELD_PATH}."
    unknown = apischema.unknown_fields(doc.api_version, doc.kind, doc.obj) or []
    return [path for path in unknown if not path.startswith(inside)]


def assigned_name(obj: dict[str, Any]) -> str:
    """`metadata.name`, the key that matches an object to its `--old` version ("" when only `generateName` is
    set: such an object is always a create)."""
    name = metadata_of(obj).get("name")
    return name if isinstance(name, str) else ""


def _skip_reason(doc: Document) -> str:
    if doc.kind != KIND:
        return "not a DeviceClass"
    group, _, version = doc.api_version.rpartition("/")
    if group != GROUP:
        return f"apiVersion {doc.api_version!r} is not {GROUP}"
    if version not in VERSIONS:
        known = ", ".join(sorted(f"{GROUP}/{v}" for v in VERSIONS))
        return f"apiVersion {doc.api_version!r} is not one of {known}"
    return ""


def cluster_view(docs: list[Document]) -> ClusterView:
    """The `--cluster` dump as the webhook's informer would see it; other kinds are ignored."""
    slices: list[ResourceSlice] = []
    classes: list[DeviceClass] = []
    for doc in docs:
        model: type[ResourceSlice] | type[DeviceClass]
        if doc.kind == "ResourceSlice":
            model = ResourceSlice
        elif doc.kind == "DeviceClass":
            model = DeviceClass
        else:
            continue
        if not doc.api_version.startswith(GROUP + "/"):
            continue
        try:
            parsed = model.model_validate(doc.obj)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise DocumentError(f"{doc.where}: {doc.kind} {doc.name!r}: {where}: {error['msg']}") from None
        if isinstance(parsed, ResourceSlice):
            slices.append(parsed)
        else:
            classes.append(parsed)
    return ClusterView(slices, classes)
