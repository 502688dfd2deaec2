"""Generate resourceapi/manifests/schemas/fields.json: the field names, JSON types and required fields of the
kinds
`simulate` and `validate` read, from kubernetes-validate's Kubernetes 1.37 JSON schemas (the `-local-strict`
set, derived from the API server's OpenAPI, kubernetes/kubernetes api/openapi-spec/v3).

Run after a kubernetes-validate upgrade: `.venv/bin/python scripts/gen_field_schemas.py` (kubernetes-validate
is a dev dependency only; tests/resourceapi/test_apischema.py checks the committed file is this script's
output). The runtime walks the compact JSON (resourceapi/manifests/apischema.py), never the schema files
themselves: it
is several times faster, and the 100 MB schema package stays out of the image.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMA_SET = "v1.37.0-local-strict"
ROOTS = {
    "v1/Pod": "pod-v1",
    "v1/Node": "node-v1",
    "v1/Namespace": "namespace-v1",
    "resource.k8s.io/v1/DeviceClass": "deviceclass-resource-v1",
    "resource.k8s.io/v1beta2/DeviceClass": "deviceclass-resource-v1beta2",  # validate reads all three
    "resource.k8s.io/v1beta1/DeviceClass": "deviceclass-resource-v1beta1",
    "resource.k8s.io/v1/ResourceSlice": "resourceslice-resource-v1",
    "resource.k8s.io/v1/ResourceClaim": "resourceclaim-resource-v1",
    "resource.k8s.io/v1/ResourceClaimTemplate": "resourceclaimtemplate-resource-v1",
    "apps/v1/Deployment": "deployment-apps-v1",
    "apps/v1/ReplicaSet": "replicaset-apps-v1",
    "apps/v1/StatefulSet": "statefulset-apps-v1",
    "batch/v1/Job": "job-batch-v1",
}
# Fields newer than every upstream release, as JSON schemas: KEP-6406's DeviceClass field, a
# CapacityRequirements, as a KEP-6406 API server will type it (`validate` leaves its inside to the carrier's
# rules, resourceapi/capacity_requests.py, which report unknown keys themselves).
EXTRA_FIELDS = {
    f"io.k8s.api.resource.{version}.DeviceClassSpec": {
        "extendedResourceCapacityRequests": {
            "$ref": f"#/$defs/io.k8s.api.resource.{version}.CapacityRequirements"
        }
    }
    for version in ("v1", "v1beta2", "v1beta1")
}
SCALARS = {"string": "s", "integer": "i", "boolean": "b", "number": "n"}
# Types whose Go decoder takes a JSON string or number (their UnmarshalJSON): a Quantity ("q") takes any
# number (its text is parsed as a quantity), an IntOrString ("x") an integer. Other strings take no number.
UNION_TYPES = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "q",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "x",
}
OUT = Path(__file__).resolve().parents[1] / "resourceapi" / "schemas" / "fields.json"


class Converter:
    def __init__(self, files: Any) -> None:
        self.files = files
        self.defs: dict[str, Any] = json.loads(files.joinpath("_definitions.json").read_text())["$defs"]
        self.types: dict[str, Any] = {}
        self.todo: list[tuple[str, dict[str, Any]]] = []

    def model(self, name: str, schema: dict[str, Any]) -> list[Any]:
        if name not in self.types:
            self.types[name] = None  # reserved: recursive types terminate
            self.todo.append((name, schema))
        return ["m", name]

    def convert(self, schema: dict[str, Any]) -> Any:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.partition("#/$defs/")[2]
            if name in UNION_TYPES:
                return UNION_TYPES[name]
            target = self.defs[name]
            if isinstance(target.get("properties"), dict):
                return self.model(name, target)
            return self.convert(target)
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return "o"
        if isinstance(schema.get("oneOf"), list) or isinstance(schema.get("anyOf"), list):
            return "o"  # Quantity and IntOrString, the typed unions, are named above
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.convert(all_of[0])
        types = schema.get("type")
        names = [t for t in (types if isinstance(types, list) else [types]) if t and t != "null"]
        kind = names[0] if len(names) == 1 else None
        if kind in SCALARS:
            return SCALARS[kind]
        if kind == "array":
            items = schema.get("items")
            return ["l", self.convert(items) if isinstance(items, dict) else "o"]
        if kind == "object":
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return ["d", self.convert(extra)]
            return "o"
        return "o"

    def run(self) -> dict[str, Any]:
        kinds = {}
        for kind, file in ROOTS.items():
            root = json.loads(self.files.joinpath(f"{file}.json").read_text())
            kinds[kind] = self.model(file, root)[1]
        while self.todo:
            name, schema = self.todo.pop()
            fields = {key: self.convert(sub) for key, sub in sorted(schema["properties"].items())}
            fields.update({key: self.convert(sub) for key, sub in EXTRA_FIELDS.get(name, {}).items()})
            self.types[name] = {"fields": fields, "required": sorted(schema.get("required") or [])}
        return {"source": f"kubernetes-validate {SCHEMA_SET}", "kinds": kinds, "types": self.types}


def generate() -> str:
    """The text of fields.json, from the installed kubernetes-validate's schema files."""
    files = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema", SCHEMA_SET)
    return json.dumps(Converter(files).run(), sort_keys=True, separators=(",", ":")) + "\n"


def main() -> int:
    text = generate()
    OUT.write_text(text)
    doc = json.loads(text)
    print(f"{OUT}: {len(doc['types'])} types", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
