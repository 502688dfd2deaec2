"""The HTTP layer of the kube-apiserver TEST DOUBLE: request routing as
`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`, the REST handlers of
`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/` (get, list, watch, create, update, patch, delete),
`pods/binding` (`pkg/registry/core/pod/storage/storage.go`), authentication by bearer token, faults,
pausing and the request log.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from . import codec, openapi, patches, schema, statuses, strategies
from .codec import clone
from .faults import Fault, Faults, RecordedRequest
from .registry import DeleteOptions, Registry
from .resources import BY_KEY, Discovery, ResourceType
from .selectors import SelectorError, parse_field_selector, parse_label_selector, predicate
from .store import BOOKMARK, CONTINUE_EXPIRED, ERROR, Obj, Store, Watcher

log = logging.getLogger("kubeapi")
NAMESPACE_SUBRESOURCES = ("status", "finalize")
TRUE = ("1", "t", "T", "true", "TRUE", "True")
MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's default request body limit
FRESHNESS_WAIT = 3.0  # seconds the watch cache waits for a resourceVersion it has not reached


@dataclass
class RequestInfo:
    """The resource a request addresses (`RequestInfoFactory.NewRequestInfo`)."""

    is_resource: bool
    path: str
    verb: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    rt: ResourceType | None = None


def parse_request_info(method: str, path: str, query: dict[str, str]) -> RequestInfo:
    parts = [p for p in path.strip("/").split("/") if p]
    info = RequestInfo(False, path)
    if not parts or parts[0] not in ("api", "apis"):
        return info
    if parts[0] == "api":
        if len(parts) < 2:
            return info
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 3:
            return info
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return info
    info.is_resource = True
    info.group, info.version = group, version
    if rest[0] == "namespaces" and len(rest) > 1:
        info.namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    info.resource = rest[0]
    if len(rest) > 1:
        info.name = rest[1]
    if len(rest) > 2:
        info.subresource = rest[2]
    if info.resource == "namespaces":
        info.namespace = info.name if info.name else ""
    info.verb = {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "GET": "get" if info.name else "list",
        "HEAD": "get" if info.name else "list",
        "DELETE": "delete" if info.name else "deletecollection",
    }.get(method, method.lower())
    if info.verb == "list" and query.get("watch") in TRUE:
        info.verb = "watch"
    key = f"{info.resource}.{group}" if group else info.resource
    rt = BY_KEY.get(key)
    if rt is not None and rt.version == version:
        info.rt = rt
    return info


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=codec.dumps(data),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def _error(e: statuses.ApiError, headers: dict[str, str] | None = None) -> web.Response:
    return _json(e.status(), e.code, headers)


def _route_not_found() -> statuses.ApiError:
    return statuses.ApiError(404, "NotFound", "the server could not find the requested resource", {})


def quote_warning(text: str) -> str:
    """A `Warning` header value: `299 - "<text>"` (`staging/src/k8s.io/apiserver/pkg/warning/context.go`)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() or c == "\t" else " " for c in escaped)
    return f'299 - "{escaped}"'


class RequestContext:
    """Per-request state: the user, the warnings to send, dry-run."""

    def __init__(self, user: dict[str, Any], query: dict[str, str]) -> None:
        self.user = user
        self.query = query
        self.warnings: list[str] = []
        self.dry_run = "dryRun" in query

    def warn(self, text: str) -> None:
        if text and text not in self.warnings:
            self.warnings.append(text)

    def headers(self) -> list[tuple[str, str]]:
        return [("Warning", quote_warning(w)) for w in self.warnings]


ADMIN_USER: dict[str, Any] = {
    "username": "kubernetes-admin",
    "uid": "kubeapi-double-admin",
    "groups": ["system:masters", "system:authenticated"],
}


class ApiServer:
    """The aiohttp application and its state; see `kubeapi.KubeAPIServer` for the thread-owning wrapper."""

    def __init__(
        self, store: Store, *, tokens: dict[str, dict[str, Any]], bookmark_interval: float = 1.0
    ) -> None:
        self.store = store
        self.registry = Registry(store)
        self.tokens = tokens
        self.discovery = Discovery()
        self.faults = Faults()
        self.requests: list[RecordedRequest] = []
        self.bookmark_interval = bookmark_interval
        self.freshness_wait = FRESHNESS_WAIT
        self.running = asyncio.Event()
        self.running.set()
        self.watch_tasks: dict[Watcher, web.BaseRequest] = {}
        # Filled in by kubeapi.admission once available: (rt, info, ctx, operation) -> hooks.
        self.admission: Any = None
        self.app = web.Application(client_max_size=MAX_BODY)
        self.app.router.add_route("*", "/{tail:.*}", self.handle)

    # ------------------------------------------------------------------ entry point
    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        info = parse_request_info(request.method, request.path, query)
        raw = await request.read()
        body: Any = None
        if raw:
            try:
                body = codec.loads(raw)
            except ValueError:
                body = raw.decode(errors="replace")
        rec = RecordedRequest(
            method=request.method,
            path=request.path,
            query=query,
            verb=info.verb,
            resource=info.rt.key if info.rt else (info.resource if info.is_resource else ""),
            subresource=info.subresource,
            namespace=info.namespace,
            name=info.name,
            body=body,
            content_type=request.content_type,
        )
        self.requests.append(rec)
        await self.running.wait()
        user = self._authenticate(request)
        if user is None:
            rec.status = 401
            return _error(statuses.unauthorized())
        rec.user = str(user.get("username", ""))
        fired = self.faults.take(rec) if info.is_resource else []
        before = [f for f in fired if not f.after]
        after = [f for f in fired if f.after]
        try:
            early = await self._apply_faults(before, rec)
            if early is not None:
                return early
            ctx = RequestContext(user, query)
            resp = await self._dispatch(request, info, raw, body, ctx)
            late = await self._apply_faults(after, rec)
            if late is not None:
                return late
        except statuses.ApiError as e:
            resp = _error(e)
        except (asyncio.CancelledError, ConnectionError):
            raise
        except Exception as e:  # a bug in the double: answer as kube-apiserver's panic filter would
            log.exception("kubeapi double: unhandled error for %s %s", request.method, request.path)
            resp = _error(statuses.internal(f"kubeapi double: {type(e).__name__}: {e}"))
        rec.status = resp.status
        return resp

    def _authenticate(self, request: web.Request) -> dict[str, Any] | None:
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return self.tokens.get(auth[len("Bearer ") :].strip())
        return None

    async def _apply_faults(self, faults: list[Fault], rec: RecordedRequest) -> web.StreamResponse | None:
        for f in faults:
            rec.fault = f.action
            f.arrived.set()  # for an `after` fault: the call was served
            if f.action == "delay":
                await asyncio.sleep(f.seconds)
            elif f.action == "hold":
                await asyncio.get_running_loop().run_in_executor(None, f.release.wait, f.seconds)
            elif f.action == "hang":
                await asyncio.sleep(f.seconds)
                raise ConnectionResetError("kubeapi double: hung request closed")
            elif f.action == "fail":
                rec.status = f.code
                return _error(self._fault_error(f, rec))
        return None

    @staticmethod
    def _fault_error(f: Fault, rec: RecordedRequest) -> statuses.ApiError:
        rt = BY_KEY.get(rec.resource)
        if f.code == 409 and rt is not None:
            e = statuses.conflict(rt, rec.name, f.message or statuses.OPTIMISTIC_LOCK_ERROR, rec.subresource)
        elif f.code == 500:
            e = statuses.internal(f.message or "injected fault")
        elif f.code == 503:
            e = statuses.service_unavailable(
                f.message or "the server is currently unable to handle the request"
            )
        elif f.code == 504:
            e = statuses.timeout()
        elif f.code == 429:
            e = statuses.ApiError(
                429, "TooManyRequests", f.message or "Too many requests, please try again later."
            )
        elif f.code == 404 and rt is not None:
            e = statuses.not_found(rt, rec.name)
        else:
            e = statuses.ApiError(f.code, "", f.message or "injected fault")
        return e

    # ------------------------------------------------------------------ dispatch
    async def _dispatch(
        self, request: web.Request, info: RequestInfo, raw: bytes, body: Any, ctx: RequestContext
    ) -> web.StreamResponse:
        if not info.is_resource:
            return self._non_resource(request, info)
        rt = info.rt
        if rt is None:
            raise _route_not_found()
        if (
            rt.namespaced
            and info.verb in ("create", "update", "patch", "delete", "get")
            and not info.namespace
        ):
            raise _route_not_found()
        if info.subresource and info.subresource not in rt.subresources:
            raise _route_not_found()
        verb = info.verb
        if verb in ("create", "update") and request.content_type not in (
            "application/json",
            "application/octet-stream",
        ):
            # The double decodes JSON only (kubectl's typed clients send protobuf for core types).
            raise statuses.ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json",
            )
        if verb == "get":
            if info.subresource not in ("", "status"):
                raise _route_not_found()
            obj = self.store.get(rt, info.namespace, info.name)
            if obj is None:
                raise statuses.not_found(rt, info.name)
            return _json(obj)
        if verb == "list":
            return await self._list(rt, info, ctx)
        if verb == "watch":
            return await self._watch(request, rt, info, ctx)
        if verb == "create":
            if info.subresource == "binding":
                return await self._bind(rt, info, body, ctx)
            if info.name and not (rt.key == "namespaces" and info.subresource == ""):
                raise _route_not_found()
            return await self._create(rt, info, body, ctx)
        if verb == "update":
            return await self._update(rt, info, body, ctx)
        if verb == "patch":
            return await self._patch(request, rt, info, raw, ctx)
        if verb == "delete":
            return await self._delete(rt, info, body, ctx)
        if verb == "deletecollection":
            return await self._delete_collection(rt, info, body, ctx)
        raise statuses.method_not_supported(rt, verb)

    def _respond(self, data: Any, ctx: RequestContext, status: int = 200) -> web.Response:
        resp = _json(data, status)
        for k, v in ctx.headers():
            resp.headers.add(k, v)
        return resp

    def _non_resource(self, request: web.Request, info: RequestInfo) -> web.Response:
        parts = [p for p in info.path.strip("/").split("/") if p]
        if request.method not in ("GET", "HEAD"):
            raise statuses.method_not_supported(BY_KEY["pods"], request.method)
        if parts == ["version"]:
            return _json(self.discovery.version())
        if parts in (["healthz"], ["readyz"], ["livez"]):
            return web.Response(text="ok")
        if parts == ["api"]:
            return _json(self.discovery.api_versions())
        if parts == ["openapi", "v3"]:
            return _json(openapi.root_document())
        if parts[:2] == ["openapi", "v3"]:
            doc = openapi.document_for_path(info.path)
            if doc is not None:
                return _json(doc)
        if parts == ["apis"]:
            return _json(self.discovery.api_group_list())
        if len(parts) == 2 and parts[0] == "api":
            doc = self.discovery.resource_list("", parts[1])
            if doc is not None:
                return _json(doc)
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in self.discovery.groups():
            return _json(self.discovery.api_group(parts[1]))
        if len(parts) == 3 and parts[0] == "apis":
            doc = self.discovery.resource_list(parts[1], parts[2])
            if doc is not None:
                return _json(doc)
        raise _route_not_found()

    # ------------------------------------------------------------------ reads
    def _selectors(self, rt: ResourceType, query: dict[str, str]) -> Callable[[Obj], bool]:
        try:
            labels = parse_label_selector(query.get("labelSelector", ""))
            fields = parse_field_selector(query.get("fieldSelector", ""), rt)
        except SelectorError as e:
            raise statuses.bad_request(str(e)) from e
        return predicate(labels, fields)

    async def _fresh(self, wanted: int) -> None:
        """The watch cache's waitUntilFreshAndBlock: a version newer than the store's is waited for (3 s)."""
        deadline = asyncio.get_running_loop().time() + self.freshness_wait
        while self.store.revision < wanted:
            if asyncio.get_running_loop().time() > deadline:
                raise statuses.too_large_resource_version(wanted, self.store.revision)
            await asyncio.sleep(0.02)

    @staticmethod
    def _resource_version(value: str) -> int:
        try:
            return int(value)
        except ValueError as e:
            raise statuses.bad_request(f"invalid resource version: {value}") from e

    async def _list(self, rt: ResourceType, info: RequestInfo, ctx: RequestContext) -> web.Response:
        """LIST with upstream's resourceVersion semantics (api-concepts "Semantics for get and list"):
        unset or "0" the current state; N (NotOlderThan) at least N, waiting for it; Exact exactly N, rebuilt
        from the history (410 once compacted); a continue token pages through the snapshot it was cut from."""
        q = ctx.query
        match = self._selectors(rt, q)
        namespace = info.namespace or None
        rv_param, rv_match = q.get("resourceVersion", ""), q.get("resourceVersionMatch", "")
        if rv_match and not rv_param:
            raise statuses.ApiError(
                422,
                "Invalid",
                'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
                {
                    "group": "meta.k8s.io",
                    "kind": "ListOptions",
                    "causes": [
                        {
                            "reason": "FieldValueForbidden",
                            "field": "resourceVersionMatch",
                            "message": "Forbidden: resourceVersionMatch is forbidden unless "
                            "resourceVersion is provided",
                        }
                    ],
                },
            )
        if rv_match not in ("", "Exact", "NotOlderThan"):
            raise statuses.bad_request(f"unsupported resourceVersionMatch: {rv_match}")
        token = q.get("continue")
        after: tuple[str, str] | None = None
        if token:
            try:
                state = json.loads(base64.b64decode(token))
                revision, after = int(state["rv"]), (str(state["ns"]), str(state["name"]))
            except (ValueError, KeyError, TypeError) as e:
                raise statuses.bad_request(f"continue key is not valid: {e}") from e
            try:
                items = self.store.list_at(rt, namespace, revision)
            except statuses.ApiError as e:
                # handleCompactedErrorForPaging: 410 with a token that continues, inconsistently, at "now".
                expired = statuses.resource_expired(CONTINUE_EXPIRED)
                current = self.store.revision
                fresh = {"rv": current, "ns": after[0], "name": after[1]}
                expired.list_meta = {"continue": base64.b64encode(json.dumps(fresh).encode()).decode()}
                raise expired from e
        elif rv_param not in ("", "0"):
            wanted = self._resource_version(rv_param)
            await self._fresh(wanted)
            if rv_match == "Exact":
                items, revision = self.store.list_at(rt, namespace, wanted), wanted
            else:
                items, revision = self.store.list(rt, namespace)
        else:
            items, revision = self.store.list(rt, namespace)
        items = [o for o in items if match(o) and (after is None or self._key(o) > after)]
        limit = int(q.get("limit") or 0)
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        page = items
        if limit > 0 and len(items) > limit:
            page = items[:limit]
            ns, name = self._key(page[-1])
            meta["continue"] = base64.b64encode(
                json.dumps({"rv": revision, "ns": ns, "name": name}).encode()
            ).decode()
            meta["remainingItemCount"] = len(items) - limit
        for o in page:
            o.pop("kind", None)
            o.pop("apiVersion", None)
        return self._respond(
            {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta, "items": page}, ctx
        )

    @staticmethod
    def _key(obj: Obj) -> tuple[str, str]:
        m = obj.get("metadata") or {}
        return (str(m.get("namespace") or ""), str(m.get("name") or ""))

    async def _watch(
        self, request: web.Request, rt: ResourceType, info: RequestInfo, ctx: RequestContext
    ) -> web.StreamResponse:
        q = ctx.query
        match = self._selectors(rt, q)
        rv_param = q.get("resourceVersion", "")
        send_initial = q.get("sendInitialEvents") in TRUE
        bookmarks = q.get("allowWatchBookmarks") in TRUE
        since = None if rv_param in ("", "0") or send_initial else self._resource_version(rv_param)
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        loop = asyncio.get_running_loop()
        try:
            if since is not None:
                await self._fresh(since)
            watcher, replay, revision = self.store.watch(rt, info.namespace or None, match, loop, since)
        except statuses.ApiError as e:
            await resp.prepare(request)
            await self._send(resp, ERROR, e.status())
            await resp.write_eof()
            return resp
        await resp.prepare(request)
        self.watch_tasks[watcher] = request
        deadline = loop.time() + timeout if timeout else None
        try:
            for typ, obj in replay:
                await self._send(resp, typ, obj)
            if send_initial and bookmarks:
                await self._send(resp, BOOKMARK, self._bookmark(rt, revision, initial_end=True))
            while True:
                wait = self.bookmark_interval if bookmarks else None
                if deadline is not None:
                    left = deadline - loop.time()
                    if left <= 0:
                        break
                    wait = min(wait, left) if wait is not None else left
                if watcher.queue.empty():
                    try:
                        first = await asyncio.wait_for(watcher.queue.get(), wait)
                    except TimeoutError:
                        if bookmarks and (deadline is None or deadline - loop.time() > 0):
                            await self._send(resp, BOOKMARK, self._bookmark(rt, self.store.revision))
                        continue
                    batch = [first]
                else:
                    batch = []
                # what is queued already goes out in one write (one TLS record for a burst of events)
                while not watcher.queue.empty():
                    batch.append(watcher.queue.get_nowait())
                lines = []
                ended = False
                for item in batch:
                    if item is None:
                        ended = True
                        break
                    lines.append(self._line(item[0], item[1]))
                if lines:
                    await resp.write(b"".join(lines))
                if ended:
                    break
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.write_eof()
        except (ConnectionError, RuntimeError):
            pass
        finally:
            self.store.unwatch(watcher)
            self.watch_tasks.pop(watcher, None)
        return resp

    @staticmethod
    def _bookmark(rt: ResourceType, revision: int, initial_end: bool = False) -> Obj:
        meta: dict[str, Any] = {"resourceVersion": str(revision), "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}

    @staticmethod
    def _line(typ: str, obj: Obj) -> bytes:
        return codec.dumps({"type": typ, "object": obj}) + b"\n"

    @classmethod
    async def _send(cls, resp: web.StreamResponse, typ: str, obj: Obj) -> None:
        await resp.write(cls._line(typ, obj))

    def drop_watches(self, resource: str | None = None, abort: bool = False) -> int:
        """End matching watch streams: cleanly (the stream ends, the client must re-watch) or, with `abort`,
        by resetting the TCP connection mid-stream (the client sees a broken connection)."""
        n = 0
        for watcher, request in list(self.watch_tasks.items()):
            if resource is None or resource in (watcher.rt.key, watcher.rt.plural):
                if abort and request.transport is not None:
                    request.transport.abort()
                watcher.close()
                n += 1
        return n

    # ------------------------------------------------------------------ writes
    def _decode(self, rt: ResourceType, body: Any, ctx: RequestContext, *, owned: bool = False) -> Obj:
        """The object a body decodes to (pruned, defaulted); `owned`: `body` is ours to change (a patch
        result), else it is copied first (the request log keeps the body as sent)."""
        if not isinstance(body, dict):
            raise statuses.bad_request(
                "the object provided is unrecognized (must be of type "
                + rt.kind
                + "): couldn't get version/kind; "
                "json parse error: invalid JSON body"
            )
        obj = body if owned else clone(body)
        if (obj.get("apiVersion") and obj.get("apiVersion") != rt.api_version) or (
            obj.get("kind") and obj.get("kind") != rt.kind
        ):
            raise statuses.bad_request(
                f"the API version in the data ({obj.get('apiVersion')}) does not match the expected API "
                f"version "
                f"({rt.api_version})"
                if obj.get("apiVersion") != rt.api_version
                else f"the kind in the data ({obj.get('kind')}) does not match the expected kind ({rt.kind})"
            )
        self._prune(rt, obj, ctx)
        strategies.apply_defaults(rt, obj)
        return obj

    @staticmethod
    def _prune(rt: ResourceType, obj: Obj, ctx: RequestContext) -> None:
        """Unknown fields are dropped; `fieldValidation` says whether that fails, warns or is silent."""
        directive = ctx.query.get("fieldValidation", "Warn") or "Warn"
        if directive not in ("Strict", "Warn", "Ignore"):
            raise statuses.bad_request(
                f'fieldValidation must be one of "Ignore", "Warn", or "Strict", got "{directive}"'
            )
        unknown = schema.prune(rt, obj)
        if not unknown or directive == "Ignore":
            return
        if directive == "Strict":
            # transformDecodeError in staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go
            raise statuses.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                + "strict decoding error: "
                + ", ".join(f'unknown field "{p}"' for p in unknown)
            )
        for p in unknown:
            ctx.warn(f'unknown field "{p}"')

    def _hooks(
        self, rt: ResourceType, info: RequestInfo, ctx: RequestContext, operation: str
    ) -> tuple[Any, Any]:
        if self.admission is None:
            return None, None
        return self.admission.hooks(rt, info, ctx, operation)  # type: ignore[no-any-return]

    async def _create(
        self, rt: ResourceType, info: RequestInfo, body: Any, ctx: RequestContext
    ) -> web.Response:
        obj = self._decode(rt, body, ctx)
        mutate, validate = self._hooks(rt, info, ctx, "CREATE")
        created = await self.registry.create(
            rt, info.namespace, obj, mutate=mutate, validate=validate, dry_run=ctx.dry_run
        )
        return self._respond(created, ctx, 201)

    async def _update(
        self, rt: ResourceType, info: RequestInfo, body: Any, ctx: RequestContext
    ) -> web.Response:
        if info.subresource == "finalize":
            return await self._finalize_namespace(rt, info, body, ctx)
        obj = self._decode(rt, body, ctx)
        mutate, validate = self._hooks(rt, info, ctx, "UPDATE")

        def compute(_old: Obj) -> Obj:
            return clone(obj)

        return await self._write_update(rt, info, compute, mutate, validate, ctx)

    async def _write_update(
        self,
        rt: ResourceType,
        info: RequestInfo,
        compute: Callable[[Obj], Obj],
        mutate: Any,
        validate: Any,
        ctx: RequestContext,
    ) -> web.Response:
        """The registry's update of the object `info` names by `compute` (a PUT or a patch), answered."""
        updated = await self.registry.update(
            rt,
            info.namespace,
            info.name,
            compute,
            subresource=info.subresource,
            mutate=mutate,
            validate=validate,
            dry_run=ctx.dry_run,
            compute_copies=True,
        )
        return self._respond(updated, ctx)

    async def _patch(
        self, request: web.Request, rt: ResourceType, info: RequestInfo, raw: bytes, ctx: RequestContext
    ) -> web.Response:
        ctype = request.content_type
        try:
            patch = codec.loads(raw) if raw else None
        except ValueError as e:
            raise statuses.bad_request(f"error decoding patch: {e}") from e
        if ctype not in (patches.MERGE_PATCH, patches.JSON_PATCH, patches.STRATEGIC_MERGE_PATCH):
            raise statuses.ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{patches.JSON_PATCH}, {patches.MERGE_PATCH}, {patches.STRATEGIC_MERGE_PATCH}",
            )
        mutate, validate = self._hooks(rt, info, ctx, "UPDATE")

        def compute(old: Obj) -> Obj:
            try:
                if ctype == patches.MERGE_PATCH:
                    new = patches.merge_patch(old, patch)
                elif ctype == patches.JSON_PATCH:
                    new = patches.json_patch(old, patch)
                else:
                    new = patches.strategic_merge_patch(old, patch)
            except patches.PatchError as e:
                raise statuses.ApiError(422, "Invalid", str(e)) from e
            if not isinstance(new, dict):
                raise statuses.bad_request("patch produced a non-object")
            # A patch that does not name a resourceVersion is not a precondition (patch.go applyPatch).
            patched_rv = (new.get("metadata") or {}).get("resourceVersion")
            if patched_rv == (old.get("metadata") or {}).get("resourceVersion"):
                strategies.meta(new).pop("resourceVersion", None)
            return self._decode(rt, new, ctx, owned=True)

        return await self._write_update(rt, info, compute, mutate, validate, ctx)

    async def _delete(
        self, rt: ResourceType, info: RequestInfo, body: Any, ctx: RequestContext
    ) -> web.Response:
        if info.subresource:
            raise _route_not_found()
        options = DeleteOptions.from_body(body, ctx.query)
        _mutate, validate = self._hooks(rt, info, ctx, "DELETE")
        result = await self.registry.delete(rt, info.namespace, info.name, options, validate=validate)
        if not result.deleted or rt.key in ("pods", "namespaces"):
            return self._respond(result.obj, ctx)
        details: dict[str, Any] = {"name": info.name}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        details["uid"] = (result.obj.get("metadata") or {}).get("uid")
        return self._respond(statuses.success(details), ctx)

    async def _delete_collection(
        self, rt: ResourceType, info: RequestInfo, body: Any, ctx: RequestContext
    ) -> web.Response:
        match = self._selectors(rt, ctx.query)
        items, rv = self.store.list(rt, info.namespace or None)
        options = DeleteOptions.from_body(body, ctx.query)
        options.preconditions = {}
        deleted = []
        for obj in items:
            if not match(obj):
                continue
            sub = RequestInfo(
                True,
                info.path,
                "delete",
                rt.group,
                rt.version,
                rt.plural,
                "",
                str(obj["metadata"].get("namespace") or ""),
                str(obj["metadata"]["name"]),
                rt,
            )
            _m, validate = self._hooks(rt, sub, ctx, "DELETE")
            with contextlib.suppress(statuses.ApiError):
                res = await self.registry.delete(rt, sub.namespace, sub.name, options, validate=validate)
                res.obj.pop("kind", None)
                res.obj.pop("apiVersion", None)
                deleted.append(res.obj)
        return self._respond(
            {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(rv)},
                "items": deleted,
            },
            ctx,
        )

    async def _finalize_namespace(
        self, rt: ResourceType, info: RequestInfo, body: Any, ctx: RequestContext
    ) -> web.Response:
        """`namespaces/{name}/finalize`: only spec.finalizers changes
        (`pkg/registry/core/namespace/storage`)."""
        if not isinstance(body, dict):
            raise statuses.bad_request("invalid body")
        finalizers = list((body.get("spec") or {}).get("finalizers") or [])
        result = await self.finalize_namespace(info.name, finalizers)
        return self._respond(result, ctx)

    async def finalize_namespace(self, name: str, finalizers: list[str]) -> Obj:
        rt = BY_KEY["namespaces"]
        old = self.store.get(rt, "", name)
        if old is None:
            raise statuses.not_found(rt, name)
        new = clone(old)
        new.setdefault("spec", {})["finalizers"] = finalizers
        m = strategies.meta(new)
        if m.get("deletionTimestamp") and not finalizers and not m.get("finalizers"):
            self.store.remove(rt, "", name, expect_rv=int(m["resourceVersion"]))
            return new
        if new == old:
            return old
        return self.store.replace(rt, new, int(m["resourceVersion"]))

    # ------------------------------------------------------------------ pods/binding
    async def _bind(
        self, rt: ResourceType, info: RequestInfo, body: Any, ctx: RequestContext
    ) -> web.Response:
        """`BindingREST.Create` then `assignPod`/`setPodNodeAndMetadata` in
        pkg/registry/core/pod/storage/storage.go."""
        if not isinstance(body, dict):
            raise statuses.bad_request("invalid Binding body")
        bmeta = body.get("metadata") or {}
        if bmeta.get("name") and bmeta.get("name") != info.name:
            raise statuses.bad_request("name in URL does not match name in Binding object")
        target = body.get("target") or {}
        node = str(target.get("name") or "")
        if target.get("kind") not in (None, "", "Node"):
            raise statuses.invalid(BY_KEY["pods"], info.name, [_binding_kind_error(str(target.get("kind")))])
        if not node:
            from resourceapi.machinery.field import required

            raise statuses.ApiError(
                422,
                "Invalid",
                f'Binding "{info.name}" is invalid: target.name: Required value',
                {"name": info.name, "kind": "Binding", "causes": [required("target.name").cause()]},
            )
        _mutate, validate = self._hooks(rt, info, ctx, "CREATE")
        if validate is not None:
            binding = clone(body)
            binding.setdefault("metadata", {}).setdefault("namespace", info.namespace)
            await validate(binding, None)

        def compute(pod: Obj) -> Obj:
            m = strategies.meta(pod)
            if bmeta.get("uid") and bmeta["uid"] != m.get("uid"):
                raise statuses.conflict(
                    rt,
                    info.name,
                    f"Precondition failed: UID in precondition: {bmeta['uid']}, "
                    f"UID in object meta: {m.get('uid')}",
                    "binding",
                )
            if bmeta.get("resourceVersion") and str(bmeta["resourceVersion"]) != str(
                m.get("resourceVersion")
            ):
                raise statuses.conflict(rt, info.name, statuses.OPTIMISTIC_LOCK_ERROR, "binding")
            if m.get("deletionTimestamp"):
                raise statuses.internal(f"pod {info.name} is being deleted, cannot be assigned to a host")
            spec = pod.setdefault("spec", {})
            if spec.get("nodeName"):
                raise statuses.conflict(
                    rt,
                    info.name,
                    f'pod {info.name} is already assigned to node "{spec["nodeName"]}"',
                    "binding",
                )
            if spec.get("schedulingGates"):
                raise statuses.conflict(
                    rt, info.name, f"pod {info.name} has non-empty .spec.schedulingGates", "binding"
                )
            spec["nodeName"] = node
            if bmeta.get("annotations"):
                m.setdefault("annotations", {}).update(bmeta["annotations"])
            status = pod.setdefault("status", {})
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append(
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": strategies.now_rfc3339(),
                }
            )
            status["conditions"] = conds
            m.pop("resourceVersion", None)
            return pod

        await self.registry.update(rt, info.namespace, info.name, compute, subresource="binding")
        return self._respond(statuses.success(code=201), ctx, 201)


def _binding_kind_error(kind: str) -> Any:
    from resourceapi.machinery.field import ErrorType, FieldError

    return FieldError(ErrorType.NOT_SUPPORTED, "target.kind", kind, 'supported values: "Node"')
