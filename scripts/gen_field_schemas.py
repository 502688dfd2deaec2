"""Generate resourceapi/schemas/fields.json: the field names, JSON types and required fields of the kinds
`simulate` reads, from the `kubernetes` client's models (generated from the API server's OpenAPI).

Run after a `kubernetes` client upgrade: `.venv/bin/python scripts/gen_field_schemas.py`. The runtime never
imports the client for this; it reads the JSON (resourceapi/apischema.py).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import kubernetes.client as client

ROOTS = {
    "v1/Pod": "V1Pod",
    "v1/Node": "V1Node",
    "v1/Namespace": "V1Namespace",
    "resource.k8s.io/v1/DeviceClass": "V1DeviceClass",
    "resource.k8s.io/v1/ResourceSlice": "V1ResourceSlice",
    "resource.k8s.io/v1/ResourceClaim": "ResourceV1ResourceClaim",
    "resource.k8s.io/v1/ResourceClaimTemplate": "V1ResourceClaimTemplate",
}
# Fields newer than the client: KEP-6406's DeviceClass field (a CapacityRequirements).
EXTRA_FIELDS = {"V1DeviceClassSpec": {"extendedResourceCapacityRequests": ["m", "V1CapacityRequirements"]}}
SCALARS = {"str": "s", "int": "i", "bool": "b", "float": "n", "datetime": "s", "date": "s", "bytes": "s"}
OUT = Path(__file__).resolve().parents[1] / "resourceapi" / "schemas" / "fields.json"


def parse(tp: str) -> Any:
    """'List[V1Container]' -> ['l', ['m', 'V1Container']]; 'Dict[str, str]' -> ['d', 's']; 'object' -> 'o'."""
    m = re.fullmatch(r"List\[(.*)\]", tp)
    if m:
        return ["l", parse(m.group(1))]
    m = re.fullmatch(r"Dict\[str, (.*)\]", tp)
    if m:
        return ["d", parse(m.group(1))]
    if tp in SCALARS:
        return SCALARS[tp]
    if tp == "object":
        return "o"
    return ["m", tp]


def main() -> int:
    types: dict[str, Any] = {}
    todo = list(ROOTS.values())
    while todo:
        name = todo.pop()
        if name in types:
            continue
        cls = getattr(client, name)
        fields: dict[str, Any] = {}
        required: list[str] = []
        for attr, tp in sorted(cls.openapi_types.items()):
            json_name = cls.attribute_map[attr]
            fields[json_name] = parse(tp)
            field = cls.model_fields.get(attr) or cls.model_fields[f"var{attr}"]  # `_exec` -> `var_exec`
            if field.is_required():
                required.append(json_name)
        fields.update(EXTRA_FIELDS.get(name, {}))
        types[name] = {"fields": fields, "required": required}
        stack = list(fields.values())
        while stack:
            t = stack.pop()
            if isinstance(t, list):
                if t[0] == "m":
                    todo.append(t[1])
                else:
                    stack.append(t[1])
    version = getattr(client, "__version__", "")
    doc = {"client": version, "kinds": ROOTS, "types": types}
    OUT.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(types)} types", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
