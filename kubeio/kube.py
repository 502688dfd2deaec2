"""A JSON view of the API server over the official `kubernetes` client's transport.

The client's generated methods turn objects into its own models, which drop fields they do not know
(`status.extendedResourceClaimStatus`, KEP-6406 fields); every informer, the Lease elector and the binder read
and write plain JSON instead, through the same `ApiClient` (configuration, TLS, authentication, connection
pool). Non-2xx answers raise `ApiError` with the `Status` reason, as client-go's `errors.IsConflict` and
friends read it (staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go).

Requests go straight to the client's urllib3 connection pool with orjson bodies: the client's own request
path (`param_serialize` walking every body, `call_api`, the kubeconfig refresh hook on every call) was a
third of the binder's CPU per pod. Its configuration's token is re-read at most once a second; with a proxy
or client-go style retries configured, the client's own path is used.
"""

from __future__ import annotations

import json
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
from kubernetes.client.rest import RESTResponse
from kubernetes.watch.watch import iter_resp_lines

Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON = "application/json"
DEFAULT_TIMEOUT = 30.0
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
RESOURCE_CLAIMS = Resource("resource.k8s.io/v1", "resourceclaims", True)
LEASES = Resource("coordination.k8s.io/v1", "leases", True)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", False
)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False
)


def load_configuration(kubeconfig: str) -> Any:
    """A client configuration from a kubeconfig file (tests and benchmarks; `dra-capacity bind` resolves its
    cluster with dra_capacity/kubeclient.py)."""
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
        self.api = k8s_client.ApiClient(configuration)
        self._lock = threading.Lock()
        self.requests_sent = 0  # watches included; for benchmarks and diagnostics
        self._direct()

    @classmethod
    def of_client(cls, api: Any) -> Kube:
        """A view sharing an existing `kubernetes.client.ApiClient` (its pool, as configured by its owner, who
        also closes it)."""
        kube = cls.__new__(cls)
        kube.api = api
        kube._lock = threading.Lock()
        kube.requests_sent = 0
        kube._direct()
        return kube

    def _direct(self) -> None:
        """The client's connection pool for its host, used directly (none with a proxy or client-go style
        retries: the client's own path then)."""
        configuration = self.api.configuration
        self._auth: tuple[float, dict[str, str]] = (-AUTH_TTL, {})
        self._pool: Any = None
        self._prefix = ""
        if not configuration.proxy and not getattr(configuration, "client_go_retries", False):
            self._pool = self.api.rest_client.pool_manager.connection_from_url(configuration.host)
            self._prefix = urlsplit(configuration.host).path.rstrip("/")

    def close(self) -> None:
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
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type or JSON
        with self._lock:
            self.requests_sent += 1
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        if self._pool is not None:
            return self._send_direct(method, path, params, body, headers, timeout)
        method_, url, headers_, body_, _ = self.api.param_serialize(
            method, path, query_params=params, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        try:
            return self.api.call_api(method_, url, headers_, body_, _request_timeout=timeout)
        except k8s_client.ApiException as exc:  # TLS failures, unpreparable requests
            raise ApiError(0, "ConnectionError", str(exc.reason)) from None
        except Exception as exc:  # urllib3: refused, reset, timed out
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

    def _send_direct(
        self,
        method: str,
        path: str,
        params: list[tuple[str, str]],
        body: Any,
        headers: dict[str, str],
        timeout: float | tuple[float, float] | None,
    ) -> Any:
        url = self._prefix + path + ("?" + urlencode(params) if params else "")
        headers = {**self.api.default_headers, **headers, **self._auth_headers()}
        data = None if body is None else _encode(body)
        if timeout is None:
            deadline = urllib3.Timeout()
        elif isinstance(timeout, tuple):
            deadline = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        else:
            deadline = urllib3.Timeout(total=timeout)
        try:
            raw = self._pool.urlopen(
                method, url, body=data, headers=headers, timeout=deadline, preload_content=False
            )
        except Exception as exc:  # urllib3: refused, reset, timed out, TLS
            raise ApiError(0, "ConnectionError", f"{type(exc).__name__}: {exc}") from None
        return RESTResponse(raw)

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
            resp.response.release_conn()
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
        resp = self._send(
            "GET", resource.path(namespace), {**query, "watch": "true"}, None, None, (10.0, timeout)
        )
        raw = resp.response
        if on_response is not None:
            on_response(raw)
        try:
            if not 200 <= resp.status < 300:
                data = raw.read()
                raise _error(resp.status, _decode(data), data)
            for line in iter_resp_lines(raw):  # type: ignore[no-untyped-call]
                if line:
                    yield orjson.loads(line)
        except ApiError:
            raise
        except Exception as exc:
            raise ApiError(0, "ConnectionError", f"{type(exc).__name__}: {exc}") from None
        finally:
            raw.release_conn()


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _encode(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:  # beyond orjson (an integer over 64 bits): the standard library's encoding
        return json.dumps(body).encode()


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
