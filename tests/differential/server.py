"""What the real kube-apiserver answers: a dry-run create (`dryRun=All`, `fieldValidation=Strict`) per
object, through the real `kubernetes` client, kept as a `Verdict` (dra_capacity/apiverdict.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import urllib3
from kubernetes import client as k8s

from differential.compare import DROPPED
from dra_capacity.apiverdict import CREATED, Cause, Verdict

NAMESPACE = "differential"
_PLURALS = {
    "DeviceClass": "deviceclasses",
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "ResourceSlice": "resourceslices",
}
_NAMESPACED = frozenset({"ResourceClaim", "ResourceClaimTemplate"})
DRY_RUN = [("dryRun", "All"), ("fieldValidation", "Strict")]


def collection_path(obj: dict[str, Any], namespace: str = NAMESPACE) -> str:
    """The URL path to POST `obj` to (its apiVersion and kind; namespaced kinds in `namespace`)."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not isinstance(api_version, str) or kind not in _PLURALS:
        raise ValueError(f"cannot send {api_version}/{kind}")
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    base = f"/apis/{group_version}"
    if kind in _NAMESPACED:
        base += f"/namespaces/{namespace}"
    return f"{base}/{_PLURALS[str(kind)]}"


def kubectl_json(obj: Any) -> str:
    """The body as kubectl sends it: Go's compact `json.Marshal`, which escapes `<`, `>` and `&` (sizes
    such as the 10 KiB of opaque parameters are measured on these bytes)."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def verdict_of(status: int, body: bytes) -> Verdict:
    """The server's answer as a Verdict: 2xx allowed; otherwise the Status' code, causes and message."""
    if 200 <= status < 300:
        return Verdict(True, CREATED)
    try:
        doc = json.loads(body)
    except ValueError:
        return Verdict(False, status, (), body.decode("utf-8", "replace"))
    details = doc.get("details") or {}
    causes = tuple(
        Cause(c.get("field", ""), c.get("reason", ""), c.get("message", ""))
        for c in details.get("causes") or []
    )
    return Verdict(False, int(doc.get("code") or status), causes, doc.get("message", ""))


TRANSPORT_ATTEMPTS = 3


class ServerUnreachable(RuntimeError):
    """The API server dropped the same request's connection every time (it may have stopped)."""


class Server:
    """Dry-run creates against one API server, from a few threads (each with its own connection pool)."""

    def __init__(self, configuration: k8s.Configuration, workers: int = 4) -> None:
        self.configuration = configuration
        self.workers = workers
        self._local = threading.local()

    def _api(self) -> k8s.ApiClient:
        api = getattr(self._local, "api", None)
        if api is None:
            api = self._local.api = k8s.ApiClient(self.configuration)
        return api

    def request(
        self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None
    ) -> tuple[int, bytes]:
        """One request with a JSON body; the status and the raw response body (errors are answers here). A
        connection the server drops (a pooled keep-alive closed under load) is asked again, twice, then
        `ServerUnreachable`: a dropped connection is no verdict."""
        for attempt in range(TRANSPORT_ATTEMPTS):
            try:
                return self._request_once(method, path, body, query)
            except urllib3.exceptions.HTTPError as exc:
                if attempt == TRANSPORT_ATTEMPTS - 1:
                    raise ServerUnreachable(
                        f"{method} {path}: no answer after {TRANSPORT_ATTEMPTS} attempts ({exc})"
                    ) from exc
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def _request_once(
        self, method: str, path: str, body: Any, query: list[tuple[str, str]] | None
    ) -> tuple[int, bytes]:
        api = self._api()
        raw = body if isinstance(body, str) else None
        method, url, headers, body, _ = api.param_serialize(
            method,
            path,
            query_params=query or [],
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            body=None if raw is not None else body,
            auth_settings=["BearerToken"],
        )
        if raw is not None:
            # The client would encode a text body as a JSON string: send the bytes through its own connection
            # pool (TLS and token as configured) instead.
            response = api.rest_client.pool_manager.request(
                method, url, body=raw.encode(), headers=headers, timeout=60.0
            )
            return int(response.status), bytes(response.data)
        result = api.call_api(method, url, headers, body, _request_timeout=60)
        return int(result.status), bytes(result.read())

    def ensure_namespace(self, name: str = NAMESPACE) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        status, text = self.request("POST", "/api/v1/namespaces", body)
        if status not in (201, 409):
            raise RuntimeError(f"creating namespace {name}: {status} {text[:200]!r}")

    def dry_run(self, obj: dict[str, Any]) -> Verdict:
        """Create `obj` with dryRun=All and fieldValidation=Strict; nothing is stored."""
        body_text = kubectl_json(obj)
        for _ in range(3):  # a loaded machine can time a request out (504): that is no verdict, ask again
            try:
                status, body = self.request("POST", collection_path(obj), body_text, DRY_RUN)
            except ServerUnreachable as exc:
                return self._dropped(exc)
            if status < 500:
                break
        return verdict_of(status, body)

    def _dropped(self, exc: ServerUnreachable) -> Verdict:
        """The DROPPED verdict when the server still answers `/readyz` (so it was this object), else `exc`."""
        status, _ = self.request("GET", "/readyz")
        if status != 200:
            raise exc
        return Verdict(False, DROPPED, (), f"the API server dropped the connection ({exc})")

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create `obj` for real (status rules need a stored object); the stored object."""
        status, body = self.request("POST", collection_path(obj), kubectl_json(obj))
        if status != 201:
            raise RuntimeError(f"creating {obj.get('kind')}: {status} {body[:300]!r}")
        stored: dict[str, Any] = json.loads(body)
        return stored

    def delete(self, obj: dict[str, Any]) -> None:
        self.request("DELETE", f"{collection_path(obj)}/{obj['metadata']['name']}")

    def _write(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        status, text = self.request(method, path, kubectl_json(body))
        if status != 200:
            raise RuntimeError(f"{method} {path}: {status} {text[:300]!r}")
        out: dict[str, Any] = json.loads(text)
        return out

    def get(self, obj: dict[str, Any]) -> dict[str, Any]:
        status, text = self.request("GET", f"{collection_path(obj)}/{obj['metadata']['name']}")
        if status != 200:
            raise RuntimeError(f"reading {obj['metadata']['name']}: {status} {text[:300]!r}")
        out: dict[str, Any] = json.loads(text)
        return out

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace `obj` for real (e.g. to remove a finalizer); the stored object."""
        return self._write("PUT", f"{collection_path(obj)}/{obj['metadata']['name']}", obj)

    def update_status(self, stored: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """Write `status` to the stored object for real; the stored object."""
        path = f"{collection_path(stored)}/{stored['metadata']['name']}/status"
        return self._write("PUT", path, {**stored, "status": status})

    def delete_now(self, obj: dict[str, Any]) -> None:
        """Delete `obj` (a finalizer keeps it, marked with a deletionTimestamp)."""
        status, text = self.request("DELETE", f"{collection_path(obj)}/{obj['metadata']['name']}")
        if status not in (200, 202):
            raise RuntimeError(f"deleting {obj['metadata']['name']}: {status} {text[:300]!r}")

    def dry_run_status(self, stored: dict[str, Any], status: dict[str, Any]) -> Verdict:
        """Update the stored object's status with `status` (dryRun=All, fieldValidation=Strict)."""
        body = {**stored, "status": status}
        path = f"{collection_path(stored)}/{stored['metadata']['name']}/status"
        for _ in range(3):
            try:
                code, text = self.request("PUT", path, kubectl_json(body), DRY_RUN)
            except ServerUnreachable as exc:
                return self._dropped(exc)
            if code < 500:
                break
        return verdict_of(code, text)

    def dry_run_many(self, objs: Iterable[dict[str, Any]]) -> Iterator[Verdict]:
        """`dry_run` for each object, in order, `workers` at a time."""
        with ThreadPoolExecutor(self.workers) as pool:
            yield from pool.map(self.dry_run, objs)
