"""A JSON view of the API server over the official `kubernetes` client's transport.

The client's generated methods turn objects into its own models, which drop fields they do not know
(`status.extendedResourceClaimStatus`, KEP-6406 fields); every informer, the Lease elector and the binder read
and write plain JSON instead, through the same `ApiClient` (configuration, TLS, authentication, connection
pool). Non-2xx answers raise `ApiError` with the `Status` reason, as client-go's `errors.IsConflict` and
friends read it (staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go).

One send path: a urllib3 pool for the API server built from the client's configuration as the client builds
its own (TLS, client certificates, proxy, pool size), orjson bodies, and the configuration's credentials
(re-read at most once a second, through its refresh hook), not the client's own request path
(`param_serialize` walking every body, `call_api`, the refresh hook on every call: what it would cost is in
docs/internals.md). `kubeio` (this module, `config.py`) alone imports `kubernetes`.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import orjson
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.rest import should_bypass_proxies
from kubernetes.watch.watch import iter_resp_lines

Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON = "application/json"
DEFAULT_TIMEOUT = 30.0
DEFAULT_PAGE_SIZE = 500  # kubectl's default --chunk-size
AUTH_TTL = 1.0  # seconds a token read from the configuration (and its refresh hook) is reused


class ApiError(Exception):
    """A non-2xx answer (status 0: no answer at all: connection refused, reset, timeout)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def conflict(self) -> bool:
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def transient(self) -> bool:
        """Worth retrying as is: no answer, throttled, internal error, unavailable, timeout."""
        return self.status in (0, 429, 500, 502, 503, 504)


@dataclass(frozen=True)
class Resource:
    """A REST resource: `group_version` is `v1` for core, else `group/version`."""

    group_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
        if sub is not None:
            base += f"/{sub}"
        return base


PODS = Resource("v1", "pods", True)
NODES = Resource("v1", "nodes", False)
NAMESPACES = Resource("v1", "namespaces", False)
EVENTS = Resource("v1", "events", True)
SECRETS = Resource("v1", "secrets", True)
EVENTS_V1 = Resource("events.k8s.io/v1", "events", True)
DEVICE_CLASSES = Resource("resource.k8s.io/v1", "deviceclasses", False)
RESOURCE_SLICES = Resource("resource.k8s.io/v1", "resourceslices", False)
DEVICE_TAINT_RULES = Resource("resource.k8s.io/v1", "devicetaintrules", False)
RESOURCE_CLAIMS = Resource("resource.k8s.io/v1", "resourceclaims", True)
LEASES = Resource("coordination.k8s.io/v1", "leases", True)
POD_DISRUPTION_BUDGETS = Resource("policy/v1", "poddisruptionbudgets", True)
PERSISTENT_VOLUME_CLAIMS = Resource("v1", "persistentvolumeclaims", True)
PERSISTENT_VOLUMES = Resource("v1", "persistentvolumes", False)
STORAGE_CLASSES = Resource("storage.k8s.io/v1", "storageclasses", False)
CSI_NODES = Resource("storage.k8s.io/v1", "csinodes", False)
CSI_DRIVERS = Resource("storage.k8s.io/v1", "csidrivers", False)
CSI_STORAGE_CAPACITIES = Resource("storage.k8s.io/v1", "csistoragecapacities", True)
ENDPOINT_SLICES = Resource("discovery.k8s.io/v1", "endpointslices", True)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", False
)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False
)


def load_configuration(kubeconfig: str) -> Any:
    """A client configuration from a kubeconfig file (tests and benchmarks; the commands resolve theirs with
    `kubeio.config`)."""
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig, client_configuration=configuration
    )
    return configuration


class Kube:
    """JSON requests on one `ApiClient` (thread-safe: urllib3's pool is)."""

    def __init__(self, configuration: Any, pool_size: int = 32) -> None:
        """`pool_size`: connections kept open; each informer's watch holds one, each bind worker uses one."""
        configuration.connection_pool_maxsize = max(pool_size, 4)
        self._init(k8s_client.ApiClient(configuration))

    @classmethod
    def of_client(cls, api: Any) -> Kube:
        """A view sharing an existing `kubernetes.client.ApiClient` (its pool, as configured by its owner, who
        also closes it)."""
        kube = cls.__new__(cls)
        kube._init(api)
        return kube

    def _init(self, api: Any) -> None:
        self.api = api
        self._lock = threading.Lock()
        self.requests_sent = 0  # watches included; for benchmarks and diagnostics
        self._auth: tuple[float, dict[str, str]] = (-AUTH_TTL, {})
        configuration = api.configuration
        self._manager = _pool_manager(configuration)
        self._pool = self._manager.connection_from_url(configuration.host)
        self._prefix = urlsplit(configuration.host).path.rstrip("/")

    def close(self) -> None:
        self._manager.clear()
        self.api.close()  # type: ignore[no-untyped-call]

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str | None,
        timeout: float | tuple[float, float] | None,
    ) -> Any:
        """The one send path: our connection pool for the API server, orjson bodies, the configuration's
        credentials (see the module docstring)."""
        headers = {**self.api.default_headers, "Accept": JSON, **self._auth_headers()}
        if body is not None:
            headers["Content-Type"] = content_type or JSON
        with self._lock:
            self.requests_sent += 1
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        url = self._prefix + path + ("?" + urlencode(params) if params else "")
        data = None if body is None else _encode(body)
        if timeout is None:
            deadline = urllib3.Timeout()
        elif isinstance(timeout, tuple):
            deadline = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        else:
            deadline = urllib3.Timeout(total=timeout)
        try:
            return self._pool.urlopen(
                method, url, body=data, headers=headers, timeout=deadline, preload_content=False
            )
        except Exception as exc:  # urllib3: refused, reset, timed out, TLS
            raise ApiError(0, "ConnectionError", f"{type(exc).__name__}: {exc}") from None

    def _auth_headers(self) -> dict[str, str]:
        """The configuration's credentials (its refresh hook runs at most once per AUTH_TTL)."""
        at, headers = self._auth
        now = time.monotonic()
        if now - at >= AUTH_TTL:
            headers = {}
            for setting in self.api.configuration.auth_settings().values():
                if setting.get("in") == "header" and setting.get("value"):
                    headers[str(setting["key"])] = str(setting["value"])
            self._auth = (now, headers)
        return headers

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Obj:
        resp = self._send(method, path, query, body, content_type, timeout)
        try:
            data = resp.read()
        except Exception as exc:
            raise ApiError(0, "ConnectionError", f"{type(exc).__name__}: {exc}") from None
        finally:
            resp.release_conn()
        payload = _decode(data)
        if not 200 <= resp.status < 300:
            raise _error(resp.status, payload, data)
        return payload

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        return self.request("GET", resource.path(namespace, name))

    def list(
        self, resource: Resource, query: Mapping[str, Any] | None = None, namespace: str | None = None
    ) -> Obj:
        return self.request("GET", resource.path(namespace), query=query, timeout=120.0)

    def pages(
        self,
        resource: Resource,
        query: Mapping[str, Any] | None = None,
        namespace: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> Iterator[Obj]:
        """LIST answers `page_size` objects at a time, following `metadata.continue` until it is empty
        (k8s.io/client-go/tools/pager/pager.go): together one consistent snapshot. Raises ApiError; an expired
        continue token answers 410 Gone, and the caller starts over."""
        token: str | None = None
        while True:
            page = self.list(
                resource,
                {**(query or {}), "limit": page_size or None, "continue": token},
                namespace=namespace,
            )
            yield page
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return

    def watch(
        self,
        resource: Resource,
        query: Mapping[str, Any],
        timeout: float,
        on_response: Callable[[Any], None] | None = None,
        namespace: str | None = None,
    ) -> Iterator[Obj]:
        """Watch events (`{"type", "object"}`) until the server ends the stream; raises ApiError on a non-2xx
        answer. The caller handles `ERROR` events (410 Gone: relist). `on_response` receives the open urllib3
        response, whose `shutdown()` interrupts a blocking read from another thread."""
        raw = self._send(
            "GET", resource.path(namespace), {**query, "watch": "true"}, None, None, (10.0, timeout)
        )
        if on_response is not None:
            on_response(raw)
        try:
            if not 200 <= raw.status < 300:
                data = raw.read()
                raise _error(raw.status, _decode(data), data)
            for line in iter_resp_lines(raw):  # type: ignore[no-untyped-call]
                if line:
                    yield orjson.loads(line)
        except ApiError:
            raise
        except Exception as exc:
            raise ApiError(0, "ConnectionError", f"{type(exc).__name__}: {exc}") from None
        finally:
            raw.release_conn()


def _pool_manager(configuration: Any) -> Any:
    """urllib3's pool manager for `configuration`, with the client's settings (kubernetes/client/rest.py
    `RESTClientObject`): TLS verification, CA and client certificate, server name, socket options, pool size,
    and an HTTP(S) proxy unless `no_proxy` names the server."""
    args: dict[str, Any] = {
        "cert_reqs": ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE,
        "ca_certs": configuration.ssl_ca_cert,
        "cert_file": configuration.cert_file,
        "key_file": configuration.key_file,
        "ca_cert_data": getattr(configuration, "ca_cert_data", None),
        "maxsize": configuration.connection_pool_maxsize or 4,
    }
    if configuration.assert_hostname is not None:
        args["assert_hostname"] = configuration.assert_hostname
    if configuration.tls_server_name:
        args["server_hostname"] = configuration.tls_server_name
    if configuration.socket_options is not None:
        args["socket_options"] = configuration.socket_options
    if configuration.proxy and not should_bypass_proxies(configuration.host, configuration.no_proxy or ""):
        return urllib3.ProxyManager(
            proxy_url=configuration.proxy, proxy_headers=configuration.proxy_headers, **args
        )
    return urllib3.PoolManager(**args)


def _encode(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:  # beyond orjson (an integer over 64 bits): the standard library's encoding
        return json.dumps(body).encode()


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _decode(data: bytes | None) -> Obj:
    if not data:
        return {}
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(data)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _error(status: int, payload: Obj, data: bytes | None) -> ApiError:
    reason = str(payload.get("reason") or "")
    message = str(payload.get("message") or (data or b"").decode("utf-8", "replace")[:200])
    return ApiError(status, reason, message)
