"""A programmable admission webhook (a TEST DOUBLE of a webhook server) for the double's admission tests:
real HTTPS on 127.0.0.1 with its own CA, on its own thread, answering AdmissionReviews with `decide`."""

from __future__ import annotations

import asyncio
import base64
import ssl
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from certs.authority import generate_self_signed

Decide = Callable[[dict[str, Any]], dict[str, Any]]


def allow(_request: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True}


class WebhookDouble:
    """Serves `/<anything>`; `decide(request)` returns the response fields (uid is filled in).
    `delay` seconds are slept before answering. Every request is kept in `.requests`."""

    def __init__(self, decide: Decide = allow, dns_names: tuple[str, ...] = ()) -> None:
        self.decide = decide
        self.delay = 0.0
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.tls = generate_self_signed(dns_names)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._dir = tempfile.TemporaryDirectory(prefix="webhook-double-")

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.tls.ca.cert_pem).decode()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def _handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        req = review["request"]
        self.requests.append(req)
        self.paths.append(request.path_qs)
        if self.delay:
            await asyncio.sleep(self.delay)
        response = {"uid": req["uid"], **self.decide(req)}
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        d = Path(self._dir.name)
        (d / "tls.crt").write_bytes(self.tls.serving.cert_pem)
        (d / "tls.key").write_bytes(self.tls.serving.key_pem)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(d / "tls.crt"), str(d / "tls.key"))
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        server: Any = site._server
        self.port = int(server.sockets[0].getsockname()[1])

    def __enter__(self) -> WebhookDouble:
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()
            assert self._runner is not None
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True, name="webhook-double")
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._dir.cleanup()


def configuration(
    kind: str,
    name: str,
    webhook: WebhookDouble,
    *,
    path: str = "/",
    rules: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A Validating/MutatingWebhookConfiguration with one webhook `<name>.example.com` calling `webhook`."""
    wh: dict[str, Any] = {
        "name": f"{name}.example.com",
        "clientConfig": {"url": webhook.url + path, "caBundle": webhook.ca_bundle},
        "rules": rules
        or [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["resource.k8s.io"],
                "apiVersions": ["v1"],
                "resources": ["deviceclasses"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **fields,
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [wh],
    }


def patch_response(ops: list[dict[str, Any]]) -> dict[str, Any]:
    import json

    return {
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(ops).encode()).decode(),
    }
