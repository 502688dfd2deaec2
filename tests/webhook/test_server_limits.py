"""The server's limits over real HTTPS: the caller's deadline, the byte budget, content codings, disconnects,
the connection cap, keep-alive and graceful shutdown (handler: the labelled test double, on threads)."""

from __future__ import annotations

import asyncio
import functools
import gzip
import io
import json
import os
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from support.server_harness import (
    ADMISSION_JSON,
    AdmissionDouble,
    DoubleOutcome,
    client_context,
    device_class,
    review,
    running_server,
    session,
)

from resourceapi.machinery.field import invalid
from webhook.server import logs, status
from webhook.server.envelope import EnvelopeError, parse_timeout
from webhook.server.limits import ServerLimits
from webhook.server.server import Listen, WebhookServer
from webhook.server.tlsreload import CertificateReloader


class SlowDouble(AdmissionDouble):
    """TEST DOUBLE: AdmissionDouble that takes `seconds` over a DeviceClass named `slow`."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.finished = threading.Event()

    def validate(self, request: dict[str, Any]) -> DoubleOutcome:
        if ((request.get("object") or {}).get("metadata") or {}).get("name") == "slow":
            time.sleep(self.seconds)
            self.finished.set()
        return super().validate(request)


def _sample(metrics_text: str, name: str, **labels: str) -> float | None:
    for line in metrics_text.splitlines():
        head, _, value = line.rpartition(" ")
        if (head == name or head.startswith(name + "{")) and all(
            f'{k}="{v}"' in head for k, v in labels.items()
        ):
            return float(value)
    return None


# --- the answer's size --------------------------------------------------------------------------------------


def test_causes_are_capped_with_a_final_count() -> None:
    errors = [invalid(f"metadata.labels[k{i}]", "v", "bad") for i in range(250)]
    causes = status.bounded_causes(errors)
    assert len(causes) == status.MAX_CAUSES + 1
    assert causes[-1] == {"field": "", "message": "... and 150 more errors"}


def test_cause_text_is_capped_in_bytes() -> None:
    errors = [invalid(f"spec.selectors[{i}].cel.expression", "x" * 60_000, "bad") for i in range(32)]
    causes = status.bounded_causes(errors)
    assert sum(len(c["message"]) for c in causes) <= status.MAX_CAUSE_BYTES + 100
    assert causes[-1]["message"].startswith("... and ") and causes[-1]["message"].endswith(" more errors")


def test_message_names_the_first_errors_only() -> None:
    errors = [invalid(f"metadata.labels[k{i}]", "v", "bad") for i in range(1000)]
    message = status.invalid_status("gpu", errors)["message"]
    assert message.count("Invalid value") == status.MESSAGE_ERRORS
    assert message.endswith(", ... and 990 more errors]")


def test_few_errors_keep_upstreams_message() -> None:
    errors = [invalid("a", "v", "bad"), invalid("b", "v", "bad")]
    assert status.invalid_status("gpu", errors)["message"] == (
        'DeviceClass.resource.k8s.io "gpu" is invalid: '
        '[a: Invalid value: "v": bad, b: Invalid value: "v": bad]'
    )


# --- the caller's deadline ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds"), [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("1.5s", 1.5)])
def test_timeout_parameter_reads_go_durations(text: str, seconds: float) -> None:
    assert parse_timeout(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "ten seconds", "-1s", "0s"])
def test_timeout_parameter_that_the_apiserver_never_sends_is_400(text: str) -> None:
    with pytest.raises(EnvelopeError) as caught:
        parse_timeout(text)
    assert caught.value.status == 400


async def test_review_not_judged_in_time_is_denied_before_the_deadline(tls_dir: Path) -> None:
    handler = SlowDouble(3.0)
    async with running_server(tls_dir, handler) as srv, session(tls_dir) as http:
        started = time.monotonic()
        resp = await http.post(srv.url + "/validate?timeout=1s", json=review("late", device_class("slow")))
        took = time.monotonic() - started
        answer = (await resp.json())["response"]
        assert resp.status == 200 and took < 1.0
        assert answer["uid"] == "late" and answer["allowed"] is False
        assert answer["status"]["reason"] == "Timeout" and answer["status"]["code"] == 504
        assert 'DeviceClass.resource.k8s.io "slow" was not admitted' in answer["status"]["message"]
        metrics = await (await http.get(srv.url + "/metrics")).text()
        assert _sample(metrics, "dra_capacity_webhook_requests_total", outcome="timeout") == 1
        await asyncio.to_thread(handler.finished.wait, 10)


async def test_invalid_timeout_parameter_is_400_json(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        resp = await http.post(srv.url + "/validate?timeout=soon", json=review())
        assert resp.status == 400
        assert "query parameter timeout" in (await resp.json())["error"]


# --- what the server holds ----------------------------------------------------------------------------------


async def test_reviews_beyond_the_byte_budget_get_429_with_retry_after(tls_dir: Path) -> None:
    handler = SlowDouble(1.0)
    limits = ServerLimits(in_flight_bytes=1000)
    async with running_server(tls_dir, handler, limits=limits) as srv, session(tls_dir) as http:
        slow = asyncio.create_task(http.post(srv.url + "/validate", json=review("a", device_class("slow"))))
        await asyncio.sleep(0.3)
        resp = await http.post(srv.url + "/validate", json=review("b"))
        assert resp.status == 429 and resp.headers["Retry-After"] == "1"
        assert (await resp.json())["error"].startswith("webhook busy: ")
        assert (await slow).status == 200


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd", "deflate", "gzip, identity", "x-unknown"])
async def test_any_content_coding_but_identity_is_415_json(tls_dir: Path, coding: str) -> None:
    body = gzip.compress(json.dumps(review()).encode())
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        headers = {**ADMISSION_JSON, "Content-Encoding": coding}
        resp = await http.post(srv.url + "/validate", data=body, headers=headers)
        assert resp.status == 415 and resp.content_type == "application/json"
        assert "unsupported content encoding" in (await resp.json())["error"]


async def test_identity_content_coding_is_accepted(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        headers = {**ADMISSION_JSON, "Content-Encoding": "identity"}
        resp = await http.post(srv.url + "/validate", data=json.dumps(review()), headers=headers)
        assert resp.status == 200


async def _raw(port: int, tls_dir: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    ctx: ssl.SSLContext = client_context(tls_dir)
    return await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="localhost")


async def test_client_gone_mid_body_is_counted_and_logged_without_traceback(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        _, writer = await _raw(srv.server.port, tls_dir)
        writer.write(
            b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"apiVersion": '
        )
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.transport.abort()
        await asyncio.sleep(0.3)
        metrics = await (await http.get(srv.url + "/metrics")).text()
        assert _sample(metrics, "dra_capacity_webhook_client_disconnects_total", stage="body") == 1
        assert "Traceback" not in srv.log.getvalue()


async def test_body_that_does_not_arrive_in_time_is_408(tls_dir: Path) -> None:
    async with running_server(tls_dir, limits=ServerLimits(body_timeout=0.3)) as srv:
        reader, writer = await _raw(srv.server.port, tls_dir)
        writer.write(
            b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readline(), 5)
        assert head.startswith(b"HTTP/1.1 408")
        writer.close()


async def test_404_and_405_are_counted(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        assert (await http.get(srv.url + "/nowhere")).status == 404
        assert (await http.get(srv.url + "/validate")).status == 405
        metrics = await (await http.get(srv.url + "/metrics")).text()
        assert _sample(metrics, "dra_capacity_webhook_unrouted_requests_total", code="404") == 1
        assert _sample(metrics, "dra_capacity_webhook_unrouted_requests_total", code="405") == 1


async def test_server_header_names_no_versions(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        for resp in (await http.get(srv.url + "/healthz"), await http.get(srv.url + "/nowhere")):
            assert resp.headers["Server"] == "dra-capacity"


async def test_connections_beyond_the_cap_are_closed_and_counted(tls_dir: Path) -> None:
    async with running_server(
        tls_dir, limits=ServerLimits(max_connections=3, max_connections_per_source=3)
    ) as srv:
        held = [await _raw(srv.server.port, tls_dir) for _ in range(3)]
        # One more is closed on arrival, before any TLS handshake (which would cost the loop for nothing).
        with pytest.raises(OSError):  # ConnectionResetError, or ssl.SSLError: EOF in the handshake
            await asyncio.wait_for(_raw(srv.server.port, tls_dir), 5)
        assert srv.metrics.refused_connections._value.get() >= 1
        for _, w in held:
            w.close()
        await asyncio.sleep(0.2)
        async with session(tls_dir) as http:
            assert (await http.get(srv.url + "/healthz")).status == 200


async def test_keep_alive_connections_are_reused(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv:
        connector = aiohttp.TCPConnector(ssl=client_context(tls_dir), limit=1)
        async with aiohttp.ClientSession(connector=connector) as http:
            for uid in ("k1", "k2", "k3"):
                resp = await http.post(srv.url + "/validate", json=review(uid))
                assert resp.status == 200
                await resp.read()
            assert len(srv.server.guard) == 1


async def test_graceful_stop_finishes_the_review_in_flight_and_closes_idle_connections(tls_dir: Path) -> None:
    handler = SlowDouble(1.0)
    async with running_server(tls_dir, handler) as srv:
        idle_reader, idle_writer = await _raw(srv.server.port, tls_dir)
        async with session(tls_dir) as http:
            slow = asyncio.create_task(
                http.post(srv.url + "/validate", json=review("g", device_class("slow")))
            )
            await asyncio.sleep(0.3)
            started = time.monotonic()
            await srv.server.stop()
            assert time.monotonic() - started < srv.server.limits.shutdown_timeout
            resp = await slow
            assert resp.status == 200 and (await resp.json())["response"]["uid"] == "g"
        assert await asyncio.wait_for(idle_reader.read(), 5) == b""
        idle_writer.close()


async def test_surrogate_escape_inside_the_annotation_carrier_is_a_field_error(tls_dir: Path) -> None:
    from resourceapi.gates import FeatureGates
    from webhook.deviceclass.admission import DeviceClassAdmission

    carrier = {"dra-capacity.io/extended-resource-capacity-requests": '{"requests": {"shares": "\\ud800"}}'}
    obj = device_class("carrier", extendedResourceName="example.com/gpu")
    obj["metadata"]["annotations"] = carrier
    handler = DeviceClassAdmission(FeatureGates.defaults())
    async with running_server(tls_dir, handler) as srv, session(tls_dir) as http:
        resp = await http.post(srv.url + "/validate", json=review("s", obj))
        assert resp.status == 200
        answer = (await resp.json())["response"]
        assert answer["allowed"] is False and answer["status"]["code"] == 422
        (cause,) = answer["status"]["details"]["causes"]
        assert cause["field"] == "metadata.annotations[dra-capacity.io/extended-resource-capacity-requests]"


def double_in_server_only(server_pid: int) -> AdmissionDouble:
    """Builds the test double in the server process; refuses to in a worker process (as a worker would
    whose process cannot run there)."""
    if os.getpid() != server_pid:
        raise OSError("worker processes are not allowed here")
    return AdmissionDouble()


async def test_reviews_are_judged_on_threads_when_worker_processes_cannot_start(tls_dir: Path) -> None:
    log = io.StringIO()
    logger = logs.configure(stream=log)
    reloader = CertificateReloader(tls_dir, interval=3600)
    reloader.load()
    factory = functools.partial(double_in_server_only, os.getpid())
    server = WebhookServer(None, reloader, Listen("127.0.0.1", 0), logger=logger, worker_factory=factory)
    await server.start()
    try:
        await asyncio.wait_for(server.warmed.wait(), 60)
        assert server.workers is not None and server.workers.kind == "thread"
        assert "worker processes could not start" in log.getvalue()
        async with session(tls_dir) as http:
            resp = await http.post(f"https://127.0.0.1:{server.port}/validate", json=review("t"))
            assert resp.status == 200 and (await resp.json())["response"]["allowed"] is True
    finally:
        await server.stop()
