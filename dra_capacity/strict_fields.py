"""`simulate --strict`: the fields an object has that its Kubernetes 1.37 API type lacks, as the API server's
strict field validation names them (`unknown field "spec.nodeNmae"`, k8s.io/apimachinery/pkg/util/strict).

The types come from kubernetes-validate's OpenAPI-derived JSON schemas (the `-local-strict` set, where every
object type says `additionalProperties: false`); only the schema files are read, walked here without a JSON
schema engine, so every unknown field is reported, not the first one. The KEP-6406 field, which no upstream
release has yet, is known.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_SET = "v1.37.0-local-strict"
# KEP-6406: DeviceClass.spec.extendedResourceCapacityRequests (free form here: the admission rules check it).
_EXTRA_FIELDS = {("DeviceClass", "spec"): {"extendedResourceCapacityRequests"}}


def unknown_fields(obj: dict[str, Any]) -> list[str] | None:
    """Paths of unknown fields in document order, or None when there is no schema for the object's type."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return None
    schema = _schema(kind, api_version)
    if schema is None:
        return None
    out: list[str] = []
    _walk(schema, obj, "", out, kind)
    return out


@cache
def _schema(kind: str, api_version: str) -> dict[str, Any] | None:
    group_version = re.sub(
        r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version
    )  # resource.k8s.io/v1 -> resource-v1
    try:
        text = _files().joinpath(f"{kind.lower()}-{group_version}.json").read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _definitions() -> dict[str, Any]:
    defs: dict[str, Any] = json.loads(_files().joinpath("_definitions.json").read_text())["$defs"]
    return defs


def _files() -> Any:
    return resources.files("kubernetes_validate").joinpath("kubernetes-json-schema", SCHEMA_SET)


_RESOLVED: dict[int, dict[str, Any]] = {}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    """`$ref` and one-element `allOf` followed to the schema that holds `properties` (memoized per schema)."""
    key = id(schema)
    done = _RESOLVED.get(key)
    if done is not None:
        return done
    for _ in range(32):  # $ref chains are short; never loop on a malformed file
        ref = schema.get("$ref")
        if not isinstance(ref, str) or "#/$defs/" not in ref:
            break
        schema = _definitions().get(ref.partition("#/$defs/")[2], {})
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        schema = _resolve(all_of[0])
    _RESOLVED[key] = schema  # every schema dict lives in the cached files above: its id is never reused
    return schema


_CONTAINERS = (dict, list)


def _walk(schema: dict[str, Any], value: Any, path: str, out: list[str], kind: str) -> None:
    """Only collections are walked into: a scalar has no fields (most calls would be for scalars)."""
    schema = _resolve(schema)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if isinstance(props, dict):
            known = _EXTRA_FIELDS.get((kind, path), ())
            for key, item in value.items():
                sub = props.get(key)
                if sub is not None:
                    if isinstance(item, _CONTAINERS) and isinstance(sub, dict):
                        _walk(sub, item, f"{path}.{key}" if path else str(key), out, kind)
                elif key in known:
                    continue
                elif extra is False:
                    out.append(f"{path}.{key}" if path else str(key))
                elif isinstance(extra, dict) and isinstance(item, _CONTAINERS):
                    _walk(extra, item, f"{path}[{key}]", out, kind)
        elif isinstance(extra, dict):
            for key, item in value.items():
                if isinstance(item, _CONTAINERS):
                    _walk(extra, item, f"{path}[{key}]", out, kind)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                if isinstance(item, _CONTAINERS):
                    _walk(items, item, f"{path}[{i}]", out, kind)
