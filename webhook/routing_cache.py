"""The informer cache `/mutate-pods` reads: DeviceClasses (which resource names route) and Namespace labels.

Two list+watch loops on daemon threads with the official client, relisting on 410 Gone. The admission path
only reads two attributes that each loop replaces whole, so it never waits on a lock: until both lists have
come back, `routed_names()` is None and the endpoint allows pods unchanged (fail-open, counted).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from resourceapi.routing import routed_resource_names

log = logging.getLogger("dra_capacity.webhook")
Obj = dict[str, Any]


class RoutingCache:
    """What routing needs from the cluster, as of the last watch event."""

    def __init__(self) -> None:
        self._routed: frozenset[str] | None = None
        self._namespaces: dict[str, dict[str, str]] | None = None

    # --- reads (the admission path) -------------------------------------------------------------------------

    def routed_names(self) -> frozenset[str] | None:
        """Resource names backed by a capacity class; None while the cache is cold."""
        return self._routed if self._namespaces is not None else None

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        ns = self._namespaces
        return ns.get(namespace) if ns is not None else None

    # --- writes (the informer threads, or a test seeding it) ------------------------------------------------

    def set_classes(self, classes: Iterable[Mapping[str, Any]]) -> None:
        self._routed = routed_resource_names(classes)

    def set_namespaces(self, namespaces: Iterable[Mapping[str, Any]]) -> None:
        out: dict[str, dict[str, str]] = {}
        for ns in namespaces:
            meta = ns.get("metadata") or {}
            if isinstance(meta.get("name"), str):
                labels = meta.get("labels")
                out[meta["name"]] = dict(labels) if isinstance(labels, dict) else {}
        self._namespaces = out


class _Watcher:
    """List, then watch from the list's resourceVersion; any gap (410, error) relists. `publish` receives the
    whole current set after every change."""

    def __init__(self, api_client: Any, path: str, publish: Callable[[Iterable[Obj]], None]) -> None:
        self.api = api_client
        self.path = path
        self.publish = publish
        self.items: dict[str, Obj] = {}
        self._stop = threading.Event()
        self._response: Any = None
        self.thread = threading.Thread(target=self._run, name=f"routing-cache{path}", daemon=True)

    def _get(self, query: list[tuple[str, str]], timeout: Any) -> Any:
        method, url, headers, body, _ = self.api.param_serialize(
            "GET",
            self.path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        return self.api.call_api(method, url, headers, body, _request_timeout=timeout)

    def _run(self) -> None:
        delay = 0.5
        while not self._stop.is_set():
            try:
                resp = self._get([], 60.0)
                if resp.status != 200:
                    raise RuntimeError(f"list {self.path}: HTTP {resp.status}")
                data = json.loads(resp.read())
                self.items = {i["metadata"]["name"]: i for i in data.get("items") or []}
                self.publish(self.items.values())
                rv = str(data["metadata"].get("resourceVersion") or "")
                delay = 0.5
                while not self._stop.is_set() and rv:
                    rv = self._watch(rv)
            except Exception as exc:
                if self._stop.is_set():
                    return
                log.debug("routing cache %s: %s", self.path, exc)
                self._stop.wait(delay * (1 + random.random()))
                delay = min(delay * 2, 10.0)

    def _watch(self, rv: str) -> str:
        """Returns the resourceVersion to resume from, or "" to relist."""
        from kubernetes.watch.watch import iter_resp_lines

        query = [("watch", "true"), ("resourceVersion", rv), ("allowWatchBookmarks", "true")]
        query.append(("timeoutSeconds", str(random.randint(240, 300))))
        resp = self._get(query, (10.0, 330.0))
        raw = resp.response
        self._response = raw
        try:
            if resp.status != 200:
                return ""
            for line in iter_resp_lines(raw):  # type: ignore[no-untyped-call]
                if not line:
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                kind = event.get("type")
                if kind == "ERROR":
                    return ""
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if kind == "BOOKMARK":
                    continue
                name = str((obj.get("metadata") or {}).get("name") or "")
                if kind == "DELETED":
                    self.items.pop(name, None)
                else:
                    self.items[name] = obj
                self.publish(list(self.items.values()))
            return rv
        finally:
            self._response = None
            raw.release_conn()

    def stop(self) -> None:
        self._stop.set()
        raw = self._response
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.shutdown()


class ClusterRoutingCache(RoutingCache):
    """A RoutingCache fed from the API server through a `kubernetes.client.ApiClient`."""

    def __init__(self, api_client: Any) -> None:
        super().__init__()
        self.api_client = api_client
        self._watchers = [
            _Watcher(api_client, "/apis/resource.k8s.io/v1/deviceclasses", self.set_classes),
            _Watcher(api_client, "/api/v1/namespaces", self.set_namespaces),
        ]

    def start(self) -> None:
        for w in self._watchers:
            w.thread.start()

    def stop(self) -> None:
        for w in self._watchers:
            w.stop()
        for w in self._watchers:
            w.thread.join(2.0)
