"""A minimal OpenAPI v3 discovery (`/openapi/v3` and `/openapi/v3/<api|apis/group>/<version>`).

kubectl checks there whether the server supports the `fieldValidation` query parameter on PATCH for a kind
(`staging/src/k8s.io/cli-runtime/pkg/resource/query_param_verifier_v3.go`); when it does, kubectl leaves
validation to the server, which is what the double does. The documents hold paths and operations only, no
schemas (so `kubectl explain` does not work).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .resources import BY_GROUP_VERSION, KUBERNETES_VERSION

PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def group_version_document(group: str, version: str) -> dict[str, Any] | None:
    types = BY_GROUP_VERSION.get((group, version))
    if not types:
        return None
    paths: dict[str, Any] = {}
    for t in types:
        base = "/" + _gv_path(group, version)
        item = (
            f"{base}/namespaces/{{namespace}}/{t.plural}/{{name}}"
            if t.namespaced
            else f"{base}/{t.plural}/{{name}}"
        )
        gvk = {"group": group, "version": version, "kind": t.kind}
        params = [
            {"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}} for p in PARAMS
        ]
        op = {
            "x-kubernetes-group-version-kind": gvk,
            "x-kubernetes-action": "patch",
            "parameters": params,
            "responses": {"200": {"description": "OK"}},
        }
        post = {**op, "x-kubernetes-action": "post"}
        paths[item] = {"patch": op, "put": {**op, "x-kubernetes-action": "put"}}
        coll = item.rsplit("/", 1)[0]
        paths[coll] = {"post": post}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _hash(doc: dict[str, Any]) -> str:
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()


def root_document() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for group, version in BY_GROUP_VERSION:
        doc = group_version_document(group, version)
        assert doc is not None
        gv = _gv_path(group, version)
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_hash(doc)}"}
    return {"paths": paths}


def document_for_path(path: str) -> dict[str, Any] | None:
    """`/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`."""
    parts = [p for p in path.strip("/").split("/") if p][2:]
    if parts[:1] == ["api"] and len(parts) == 2:
        return group_version_document("", parts[1])
    if parts[:1] == ["apis"] and len(parts) == 3:
        return group_version_document(parts[1], parts[2])
    return None
