"""`KubeAPIServer`: the kube-apiserver TEST DOUBLE running on its own thread and event loop, serving HTTPS on
127.0.0.1 with its own CA, so synchronous code (the `kubernetes` client, `kubectl`, `dra-capacity`
subprocesses) can call it from the test thread.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import copy
import json
import secrets
import ssl
import tempfile
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, TypeVar, Unpack

from aiohttp import web

from certs.authority import Issued, ServingBundle, generate_self_signed

from . import strategies
from .admission import Admission
from .controllers import Controllers
from .faults import Faults, RecordedRequest
from .kubeconfig import write_kubeconfig
from .registry import SYSTEM_NAMESPACES, DeleteOptions
from .resources import BY_KEY, ResourceType, for_object, lookup
from .server import ADMIN_USER, ApiServer
from .store import Obj, Store

T = TypeVar("T")


class HttpOptions(TypedDict, total=False):
    """`http`'s options: the body's content type (JSON), a bearer token (the double's), a timeout (30 s)."""

    content_type: str
    token: str | None
    timeout: float


@dataclass(frozen=True)
class HttpResult:
    """A raw response: status code, the `Warning` header values, the decoded JSON body."""

    status: int
    warnings: builtins.list[str]
    body: Any


def bearer_api_client(url: str, ca_path: Path, token: str) -> Any:
    """A `kubernetes.client.ApiClient` for the API server at `url` as bearer `token`, verifying `ca_path`."""
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = url
    cfg.ssl_ca_cert = str(ca_path)
    cfg.verify_ssl = True
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(cfg)


def raw_request(
    pool: Any, method: str, url: str, body: Any, headers: dict[str, str], content_type: str, timeout: float
) -> HttpResult:
    """One request on a urllib3 `pool`: `body` as JSON (or bytes as given), the answer decoded."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    headers = {**headers, "Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = content_type
    resp = pool.request(method, url, body=data, headers=headers, timeout=timeout, retries=False)
    try:
        parsed = json.loads(resp.data) if resp.data else None
    except ValueError:
        parsed = resp.data.decode(errors="replace")
    return HttpResult(resp.status, resp.headers.getlist("Warning"), parsed)


class KubeAPIServer:
    """A TEST DOUBLE of kube-apiserver 1.37 (see the package docstring for what it implements).

    Use as a context manager, or `start()` / `stop()`. Every public method is safe to call from any thread
    except the double's own loop thread.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        workdir: Path | None = None,
        bookmark_interval: float = 1.0,
        history_limit: int = 10_000,
        tls: ServingBundle | None = None,
    ) -> None:
        self.host = host
        self._requested_port = port
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="kubeapi-")
            workdir = Path(self._tmp.name)
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.token = secrets.token_hex(16)
        self.store = Store(history_limit=history_limit)
        self.api = ApiServer(
            self.store, tokens={self.token: dict(ADMIN_USER)}, bookmark_interval=bookmark_interval
        )
        self.tls = tls or generate_self_signed(())
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.controllers: Controllers
        self.admission: Admission
        self._install_extensions()

    def _install_extensions(self) -> None:
        """The webhook admission plugins, and the emulated controllers."""
        self.admission = Admission(self)
        self.api.admission = self.admission
        self.controllers = Controllers(self)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> KubeAPIServer:
        ready = threading.Event()
        errors: list[BaseException] = []
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._astart())
            except BaseException as e:  # surfaced to start()
                errors.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._astop())
            loop.close()

        self._thread = threading.Thread(target=run, name="kubeapi-double", daemon=True)
        self._thread.start()
        ready.wait(30)
        if errors:
            raise errors[0]
        self.write_kubeconfig(self.kubeconfig_path)
        self.ca_path.write_bytes(self.tls.ca.cert_pem)
        return self

    async def _astart(self) -> None:
        for ns in SYSTEM_NAMESPACES:
            await self._create_namespace(ns)
        self.controllers.start(asyncio.get_running_loop())
        self._runner = web.AppRunner(
            self.api.app, handle_signals=False, access_log=None, shutdown_timeout=0.1
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._requested_port, ssl_context=self._ssl_context())
        await site.start()
        server: Any = site._server
        self.port = int(server.sockets[0].getsockname()[1])
        self.api.discovery.server_address = f"{self.host}:{self.port}"

    async def _create_namespace(self, name: str) -> None:
        body: Obj = {"metadata": {"name": name}}
        strategies.apply_defaults(BY_KEY["namespaces"], body)
        await self.api.registry.create(BY_KEY["namespaces"], "", body)

    async def _astop(self) -> None:
        self.api.running.set()
        self.api.drop_watches()
        await self.controllers.stop()
        await self.admission.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> KubeAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        cert = self.workdir / "apiserver.crt"
        key = self.workdir / "apiserver.key"
        cert.write_bytes(self.tls.serving.cert_pem)
        key.write_bytes(self.tls.serving.key_pem)
        key.chmod(0o600)
        ctx.load_cert_chain(str(cert), str(key))
        return ctx

    # ------------------------------------------------------------------ connection details
    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def ca(self) -> Issued:
        return self.tls.ca

    @property
    def ca_path(self) -> Path:
        return self.workdir / "ca.crt"

    @property
    def kubeconfig_path(self) -> Path:
        return self.workdir / "kubeconfig"

    def write_kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        return write_kubeconfig(path, self.url, self.tls.ca.cert_pem, self.token, namespace)

    def add_user(self, username: str, groups: list[str] | None = None) -> str:
        """A new bearer token authenticating as `username`; returns the token."""
        token = secrets.token_hex(16)
        self.api.tokens[token] = {
            "username": username,
            "uid": username,
            "groups": [*(groups or []), "system:authenticated"],
        }
        return token

    def serve_versions(self, *git_versions: str) -> None:
        """TEST-DOUBLE behaviour: `/version` answers these gitVersions from now on, one per request in turn (a
        control plane mid-upgrade: `serve_versions("v1.37.2", "v1.38.0-beta.0")`; one when it is done)."""
        assert git_versions, "at least one gitVersion"
        self.api.discovery.git_versions = tuple(git_versions)

    def api_client(self, token: str | None = None) -> Any:
        """A `kubernetes.client.ApiClient` configured for the double (verifying its CA)."""
        return bearer_api_client(self.url, self.ca_path, token or self.token)

    def http(self, method: str, path: str, body: Any = None, **options: Unpack[HttpOptions]) -> HttpResult:
        """One raw HTTPS request (for bodies the typed client refuses, e.g. unknown fields)."""
        content_type = options.get("content_type", "application/json")
        token = options.get("token")
        timeout = options.get("timeout", 30.0)
        import urllib3

        pool = urllib3.PoolManager(ca_certs=str(self.ca_path), cert_reqs="CERT_REQUIRED")
        headers = {"Authorization": f"Bearer {token or self.token}"}
        return raw_request(pool, method, self.url + path, body, headers, content_type, timeout)

    # ------------------------------------------------------------------ running code on the loop
    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        assert self._loop is not None, "KubeAPIServer not started"
        if threading.current_thread() is self._thread:
            raise RuntimeError("KubeAPIServer.call() from the double's own loop thread would deadlock")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ------------------------------------------------------------------ direct state access (no admission)
    def _type(self, obj: Obj) -> ResourceType:
        return for_object(obj)

    def seed(self, obj: Obj) -> Obj:
        """Create `obj` (a dict with apiVersion and kind) directly: defaults, strategy and native
        validation apply, admission webhooks do not. A namespace that does not exist is created.
        Status is kept for types with a status subresource (as a controller's later status write would)."""
        rt = self._type(obj)
        ns = str((obj.get("metadata") or {}).get("namespace") or "default") if rt.namespaced else ""
        body = copy.deepcopy(obj)
        status = body.get("status")
        strategies.apply_defaults(rt, body)

        async def go() -> Obj:
            if rt.namespaced and self.store.get(BY_KEY["namespaces"], "", ns) is None:
                await self._create_namespace(ns)
            created = await self.api.registry.create(rt, ns, body)
            if status is not None and rt.has_status:
                meta = created["metadata"]
                created = await self.api.registry.update(
                    rt,
                    ns,
                    meta["name"],
                    lambda o: {**o, "status": copy.deepcopy(status)},
                    subresource="status",
                )
            return created

        return self.call(go())

    def get(self, resource: str, name: str, namespace: str = "default") -> Obj | None:
        """The stored object (`resource`: plural, kind, short name or `plural.group`), or None."""
        return self.store.get(lookup(resource), namespace, name)

    def list(self, resource: str, namespace: str | None = None) -> builtins.list[Obj]:
        items, _ = self.store.list(lookup(resource), namespace)
        return items

    def update(self, obj: Obj, subresource: str = "") -> Obj:
        """Replace `obj` directly (unconditionally unless it carries a resourceVersion); no admission."""
        rt = self._type(obj)
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "") if rt.namespaced else ""
        body = copy.deepcopy(obj)
        return self.call(
            self.api.registry.update(
                rt, ns, str(meta["name"]), lambda _o: copy.deepcopy(body), subresource=subresource
            )
        )

    def delete(self, resource: str, name: str, namespace: str = "default", **options: Any) -> Obj:
        """Delete directly (finalizers and graceful deletion apply); `options`: DeleteOptions fields."""
        rt = lookup(resource)
        return self.call(
            self.api.registry.delete(rt, namespace if rt.namespaced else "", name, DeleteOptions(**options))
        ).obj

    @property
    def revision(self) -> int:
        """The current resourceVersion (shared by all types)."""
        return self.store.revision

    def compact(self) -> int:
        """Forget the watch history: a watch from any older resourceVersion now gets 410 Gone."""
        return self.store.compact()

    # ------------------------------------------------------------------ observation and faults
    @property
    def faults(self) -> Faults:
        return self.api.faults

    @property
    def requests(self) -> builtins.list[RecordedRequest]:
        return self.api.requests

    def requests_for(
        self, verb: str | None = None, resource: str | None = None
    ) -> builtins.list[RecordedRequest]:
        return [
            r
            for r in list(self.api.requests)
            if (verb is None or r.verb == verb)
            and (resource is None or resource in (r.resource, r.resource.split(".", 1)[0]))
        ]

    def clear_requests(self) -> None:
        self.api.requests.clear()

    def pause(self) -> None:
        """Hold every request (already-open watches keep streaming) until `resume()`."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self.api.running.clear)

    def resume(self) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self.api.running.set)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def drop_watches(self, resource: str | None = None, abort: bool = False) -> int:
        """End the open watch streams (of `resource` if given): cleanly, or with `abort=True` by resetting
        the connection; returns how many were open."""
        assert self._loop is not None

        async def go() -> int:
            return self.api.drop_watches(resource, abort)

        return self.call(go())

    def wait_idle(self, timeout: float = 10) -> None:
        """Wait until the emulated controllers (garbage collector, resourceclaim, namespace, kubelet) have
        nothing left to do."""
        self.call(self.controllers.wait_idle(), timeout)
