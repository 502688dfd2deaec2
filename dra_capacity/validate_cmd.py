"""`dra-capacity validate`: the webhook's mutation + validation, offline, on DeviceClass manifests.

Per object it prints what `kubectl apply` would print against a cluster with the webhook installed (warnings,
then `created`/`configured` or the native-looking rejection), or one JSON document with `-o json`. Exit codes:
0 all allowed, 1 any rejected, 2 bad invocation or unreadable input (nothing printed to stdout then).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from dra_capacity import kubectl
from dra_capacity.cliopts import (
    OutputError,
    add_feature_gates_flag,
    parse_gates_or_exit,
    read_documents,
    write_output,
)
from resourceapi import schema
from resourceapi.documents import Document, DocumentError
from resourceapi.objects import metadata_of
from resourceapi.resource_v1 import DeviceClass
from webhook.admission import VERSIONS, DeviceClassAdmission
from webhook.dropping import apply_removals
from webhook.status import GROUP, KIND


@dataclass
class Result:
    """The verdict on one DeviceClass document."""

    name: str
    update: bool
    allowed: bool
    warnings: list[str]
    status: dict[str, Any] | None
    patch: list[dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        causes = (self.status or {}).get("details", {}).get("causes", []) if not self.allowed else []
        return {
            "name": self.name,
            "allowed": self.allowed,
            "warnings": list(self.warnings),
            "causes": [
                {"field": c.get("field", ""), "type": c.get("type", ""), "message": c.get("message", "")}
                for c in causes
            ],
            "patch": self.patch,
        }

    def text(self) -> list[str]:
        lines = kubectl.render_warnings(self.warnings)
        if self.allowed:
            lines.append(kubectl.render_success(self.name, self.update))
        else:
            lines.append(kubectl.render_status(self.status or {}))
        return lines


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    add_feature_gates_flag(parser)
    parser.add_argument(
        "--old",
        action="append",
        default=[],
        metavar="FILE",
        help="previous versions of the objects (matched by name): evaluate an update instead of a create",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML or JSON manifests ('-' for stdin)")
    parser.set_defaults(func=run_validate, parser=parser)


def run_validate(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    gates = parse_gates_or_exit(args.parser, args.feature_gates)
    try:
        docs = read_documents(args.files, require_objects=True)
        old_docs = read_documents(args.old) if args.old else []
    except DocumentError as exc:
        print(f"error: {exc}", file=err)
        return 2
    for doc in [*docs, *old_docs]:
        if not doc.api_version:
            # kubectl cannot decode an object without apiVersion either; skipping it would pass CI silently.
            print(f"error: {doc.where}: {doc.kind} {doc.name!r}: missing field 'apiVersion'", file=err)
            return 2
    olds: dict[str, dict[str, Any]] = {}
    for doc in old_docs:
        skip = _skip_reason(doc)
        if skip:
            print(f"{doc.where}: skipping {doc.kind} {doc.name!r} (--old): {skip}", file=err)
        elif name := assigned_name(doc.obj):
            olds[name] = doc.obj
    admission = DeviceClassAdmission(gates)
    results: list[Result] = []
    for number, doc in enumerate(docs, 1):
        skip = _skip_reason(doc)
        if skip:
            print(f"{doc.where}: skipping {doc.kind} {doc.name!r}: {skip}", file=err)
            continue
        name = assigned_name(doc.obj)
        results.append(evaluate(admission, doc, olds.get(name) if name else None, number))
    if args.output == "json":
        text = json.dumps({"results": [r.as_json() for r in results]}, indent=2) + "\n"
    else:
        text = "".join(line + "\n" for r in results for line in r.text())
    try:
        write_output(text, out)
    except OutputError as exc:
        print(f"error: {exc.strerror}", file=err)
        return 2
    return 1 if any(not r.allowed for r in results) else 0


def evaluate(
    admission: DeviceClassAdmission, doc: Document, old: dict[str, Any] | None, number: int
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
        warnings=[f'unknown field "{path}"' for path in unknown_fields(doc.obj)]
        + list(response.get("warnings", [])),
        status=response.get("status"),
        patch=patch,
    )


def unknown_fields(obj: dict[str, Any]) -> list[str]:
    """Paths of fields a DeviceClass does not have, as the API server's strict field validation names them
    (`spec.selectors[0].cell`). Webhooks never see them (the API server drops them, or kubectl's default
    `--validate=strict` refuses the write), so a typo would otherwise read as `created`."""
    return schema.unknown_fields(DeviceClass, obj)


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
