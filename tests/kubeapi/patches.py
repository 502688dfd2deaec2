"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902, via `jsonpatch`) and strategic merge
patch for the built-in types, as `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go` applies them.

Strategic merge follows `staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go` for the list
fields whose `patchMergeKey` the double knows (the table below, from `staging/src/k8s.io/api/core/v1/types.go`
and `meta/v1/types.go`); other lists are replaced, as atomic lists are. `$patch: delete|replace`,
`$deleteFromPrimitiveList/<f>`, `$retainKeys` and `$setElementOrder/<f>` are honored.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

from .codec import clone

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class PatchError(ValueError):
    """A patch that does not apply; its text is the BadRequest/Invalid message."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        return jsonpatch.apply_patch(target, patch)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
        raise PatchError(str(e)) from e
    except (TypeError, KeyError, IndexError, ValueError) as e:
        raise PatchError(f"the server rejected our request due to an error in our request: {e}") from e


# (path suffix of list field) -> merge key; "" means a list of primitives merged as a set.
_MERGE_KEYS: dict[str, str] = {
    "metadata.finalizers": "",
    "metadata.ownerReferences": "uid",
    "spec.containers": "name",
    "spec.initContainers": "name",
    "spec.ephemeralContainers": "name",
    "spec.volumes": "name",
    "spec.imagePullSecrets": "name",
    "spec.resourceClaims": "name",
    "spec.hostAliases": "ip",
    "spec.schedulingGates": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "status.conditions": "type",
    "status.podIPs": "ip",
    "status.hostIPs": "ip",
    "status.resourceClaimStatuses": "name",
    "status.addresses": "type",
    "secrets": "name",
    "imagePullSecrets": "name",
    # staging/src/k8s.io/api/resource/v1/types.go ResourceClaimStatus.ReservedFor
    "status.reservedFor": "uid",
    # staging/src/k8s.io/api/admissionregistration/v1/types.go (Validating|Mutating)WebhookConfiguration
    "webhooks": "name",
}


def _merge_key(path: str) -> str | None:
    for suffix, key in _MERGE_KEYS.items():
        if path == suffix or (path.endswith("." + suffix) and suffix != "webhooks"):
            return key
    return None


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    return _smp_map(clone(target) if isinstance(target, dict) else {}, patch, "")


def _smp_map(original: dict[str, Any], patch: dict[str, Any], path: str) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    retain = patch.get("$retainKeys")
    result = original
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        sub = f"{path}.{key}" if path else key
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                base = result.get(key)
                result[key] = _smp_map(base if isinstance(base, dict) else {}, value, sub)
        elif isinstance(value, list):
            result[key] = _smp_list(result.get(key), value, sub)
        else:
            result[key] = clone(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _smp_list(original: Any, patch: list[Any], path: str) -> list[Any]:
    key = _merge_key(path)
    if key is None or not isinstance(original, list):
        if key is not None:
            original = []
        else:
            return [clone(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [clone(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    result: list[Any] = clone(original)
    if key == "":
        for v in patch:
            if v not in result:
                result.append(clone(v))
        return result
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"unable to find api field in struct for the list item of {path}")
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        idx = next((i for i, v in enumerate(result) if isinstance(v, dict) and v.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                result.pop(idx)
            continue
        if idx is None:
            result.append({k: clone(v) for k, v in item.items() if not k.startswith("$")})
        else:
            result[idx] = _smp_map(result[idx], item, path)
    return result
