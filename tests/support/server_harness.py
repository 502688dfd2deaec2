"""Shared pieces of the server tests: a self-signed TLS directory, a running HTTPS webhook on loopback, a
client that verifies the server against the generated CA, and a labelled test double of the admission handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import ssl
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from certs.authority import ServingBundle, generate_self_signed
from certs.files import CA_CRT, write_bundle
from localcluster.objects import make_class
from procrt.manager import Manager
from webhook.server import logs
from webhook.server.limits import ServerLimits
from webhook.server.metrics import WebhookMetrics
from webhook.server.server import CertificateEvents, Listen, WebhookServer, process_manager
from webhook.server.tlsreload import CertificateReloader

ADMISSION_JSON = {"Content-Type": "application/json"}


@dataclass
class DoubleOutcome:
    response: dict[str, Any]
    handled: bool = True
    cause_types: list[str] = field(default_factory=list)
    name: str = ""
    operation: str = ""


class AdmissionDouble:
    """TEST DOUBLE of webhook.deviceclass.admission.DeviceClassAdmission, for server tests independent of the
    rules.

    Allows DeviceClasses; denies one named `deny-me` with a 422 like native validation; answers handled=False
    for other kinds; raises for one named `boom`; `warm_up` blocks until `release` is set when `hold` is true.
    """

    def __init__(self, hold: bool = False) -> None:
        self.release = threading.Event()
        if not hold:
            self.release.set()
        self.calls = 0

    def warm_up(self) -> None:
        self.release.wait(timeout=30)

    def _decide(self, request: dict[str, Any]) -> DoubleOutcome:
        self.calls += 1
        obj = request.get("object") or {}
        name = str((obj.get("metadata") or {}).get("name", ""))
        op = str(request.get("operation", ""))
        if obj.get("kind") != "DeviceClass":
            return DoubleOutcome(
                {"uid": request["uid"], "allowed": True}, handled=False, name=name, operation=op
            )
        if name == "boom":
            raise RuntimeError("secret internal detail")
        if name == "deny-me":
            status = {
                "status": "Failure",
                "code": 422,
                "reason": "Invalid",
                "message": 'DeviceClass.resource.k8s.io "deny-me" is invalid: spec.selectors[0].cel: ...',
                "details": {
                    "group": "resource.k8s.io",
                    "kind": "DeviceClass",
                    "name": name,
                    "causes": [
                        {"type": "FieldValueRequired", "field": "spec.selectors[0].cel", "message": "x"}
                    ],
                },
            }
            return DoubleOutcome(
                {"uid": request["uid"], "allowed": False, "status": status},
                cause_types=["FieldValueRequired"],
                name=name,
                operation=op,
            )
        return DoubleOutcome({"uid": request["uid"], "allowed": True}, name=name, operation=op)

    def validate(self, request: dict[str, Any]) -> DoubleOutcome:
        return self._decide(request)

    def mutate(self, request: dict[str, Any]) -> DoubleOutcome:
        return self._decide(request)


def device_class(name: str = "gpu", **spec: Any) -> dict[str, Any]:
    return (make_class(name).spec(**spec) if spec else make_class(name).driver("gpu.example.com")).obj()


DEVICE_CLASS_KIND = {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"}
DEVICE_CLASSES = {"group": "resource.k8s.io", "version": "v1", "resource": "deviceclasses"}
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}
PODS = {"group": "", "version": "v1", "resource": "pods"}


def admission_review(
    uid: str, kind: dict[str, str], resource: dict[str, str], **request: Any
) -> dict[str, Any]:
    """An admission.k8s.io/v1 AdmissionReview whose request has `uid`, `kind`, `resource`, then `request`'s
    fields, in that order (the body's bytes are what the size tests measure). `kind` and `resource` are
    copied: tests mutate the review they get."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "kind": dict(kind), "resource": dict(resource), **request},
    }


def review(
    uid: str = "uid-1", obj: dict[str, Any] | None = None, operation: str = "CREATE"
) -> dict[str, Any]:
    """A DeviceClass review as the API server sends it for an admin's `operation`."""
    obj = obj if obj is not None else device_class()
    return admission_review(
        uid,
        DEVICE_CLASS_KIND,
        DEVICE_CLASSES,
        name=obj.get("metadata", {}).get("name", ""),
        operation=operation,
        userInfo={"username": "admin"},
        object=obj,
        oldObject=None,
        dryRun=False,
    )


def make_tls_dir(directory: Path, dns_names: tuple[str, ...] = ()) -> ServingBundle:
    bundle = generate_self_signed(dns_names)
    write_bundle(directory, bundle)
    return bundle


def client_context(tls_dir: Path) -> ssl.SSLContext:
    """A client that trusts only the generated CA and checks the host name, as the apiserver does."""
    return ssl.create_default_context(cafile=str(tls_dir / CA_CRT))


@dataclass
class Running:
    server: WebhookServer
    url: str
    log: io.StringIO
    metrics: WebhookMetrics
    reloader: CertificateReloader
    manager: Manager


@contextlib.asynccontextmanager
async def running_server(
    tls_dir: Path,
    handler: Any = None,
    *,
    wait_ready: bool = True,
    metrics_listen: Listen | None = None,
    health_listen: Listen | None = None,
    interval: float = 0.05,
    limits: ServerLimits | None = None,
    pod_router: Any = None,
    endpoints: tuple[Any, ...] | list[Any] = (),
) -> AsyncIterator[Running]:
    """A real HTTPS webhook on 127.0.0.1 (free port), logs captured in `.log`; `metrics_listen` and
    `health_listen` are its Manager's listeners, as `serve` wires them (`.manager.metrics_port`)."""
    handler = handler if handler is not None else AdmissionDouble()
    log = io.StringIO()
    logger = logs.configure(stream=log)
    metrics = WebhookMetrics()
    events = CertificateEvents(metrics, logger)
    reloader = CertificateReloader(
        tls_dir, interval=interval, on_reload=events.loaded, on_failure=events.failed
    )
    reloader.load()
    server = WebhookServer(
        handler,
        reloader,
        Listen("127.0.0.1", 0),
        serve_metrics=metrics_listen is None,
        metrics=metrics,
        logger=logger,
        limits=limits,
        pod_router=pod_router,
        endpoints=endpoints,
    )
    manager = process_manager(server, health_listen=health_listen, metrics_listen=metrics_listen)
    await server.start()
    try:
        await manager.start_async()
        if wait_ready:
            await asyncio.wait_for(server.warmed.wait(), timeout=30)
        yield Running(server, f"https://127.0.0.1:{server.port}", log, metrics, reloader, manager)
    finally:
        await server.stop()
        await asyncio.to_thread(manager.stop)


def session(tls_dir: Path, force_close: bool = False) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(ssl=client_context(tls_dir), force_close=force_close)
    return aiohttp.ClientSession(connector=connector)


def metric_sample(metrics_text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in Prometheus text, matched by name and a subset of labels."""
    for line in metrics_text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, _, value = line.rpartition(" ")
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            return float(value)
    return None
