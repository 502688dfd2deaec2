"""The second hardening round (issue 28): no slow client, large pod or connection flood stalls admission.

* a body is charged to the in-flight budget as its bytes arrive and must keep a minimum rate after a grace
  (408), so clients declaring large bodies and trickling them cannot squat the budget;
* many connections from one address at normal load are never throttled (kube-apiserver pools connections);
* `/mutate-pods` has its own body cap, and a large pod review is judged by a worker, off the event loop;
* a TLS handshake and a request's headers have their own short timeouts;
* huge or too many header fields get the documented JSON 431 and one log line, never a traceback.

bench/hostile.py measures the timed targets (latency ratios, probes under attack, memory coming back).
"""

from __future__ import annotations

import asyncio
import json
import pickle
import ssl
import time
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry
from support.server_harness import (
    POD_KIND,
    PODS,
    admission_review,
    client_context,
    review,
    running_server,
    session,
)
from support.server_harness import metric_sample as _sample

from webhook.podrouting.pod_routing import PodRouter, PodRoutingMetrics
from webhook.podrouting.routing_cache import RoutingCache
from webhook.server.envelope import APISERVER_MAX_REQUEST_BYTES, ENVELOPE_ALLOWANCE, WORST_ESCAPE_FACTOR
from webhook.server.limits import ServerLimits

RESOURCE = "example.com/gpu.shared"
OPTED_NS = "inference"


async def _raw(port: int, tls_dir: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    ctx: ssl.SSLContext = client_context(tls_dir)
    return await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="localhost")


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """What the server sent before closing the connection; fails when it stays open past `seconds`."""
    return await asyncio.wait_for(reader.read(), seconds)


# --- the byte budget ----------------------------------------------------------------------------------------


async def _squat(port: int, tls_dir: Path, chunked: bool, stop: asyncio.Event) -> bytes:
    """Declare an 8 MiB body (or a chunked one), then send one byte every 100 ms until answered."""
    reader, writer = await _raw(port, tls_dir)
    length = b"Transfer-Encoding: chunked\r\n" if chunked else b"Content-Length: 8388608\r\n"
    writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + length)
    writer.write(b"\r\n")
    answer = asyncio.create_task(reader.read())
    while not answer.done() and not stop.is_set():
        writer.write(b"1\r\n{\r\n" if chunked else b"{")
        await writer.drain()
        await asyncio.sleep(0.1)
    writer.close()
    return await asyncio.wait_for(answer, 5)


async def test_squatters_trickling_declared_bodies_get_408_and_normal_reviews_never_429(
    tls_dir: Path,
) -> None:
    """Four connections declaring 8 MiB bodies (one chunked) and sending 10 bytes a second: before, their
    declared lengths held the whole budget and normal reviews got 429. Now they hold the bytes they sent,
    and get 408 once the grace is over."""
    limits = ServerLimits(in_flight_bytes=64 * 1024, body_grace=0.5)
    async with running_server(tls_dir, limits=limits) as srv, session(tls_dir) as http:
        stop = asyncio.Event()
        started = time.perf_counter()
        squatters = [
            asyncio.create_task(_squat(srv.server.port, tls_dir, chunked=i == 3, stop=stop)) for i in range(4)
        ]
        await asyncio.sleep(0.2)
        statuses = []
        for i in range(10):
            resp = await http.post(srv.url + "/validate", json=review(f"n-{i}"))
            statuses.append(resp.status)
        answers = await asyncio.gather(*squatters)
        stop.set()
        elapsed = time.perf_counter() - started
    assert statuses == [200] * 10
    assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers
    assert elapsed < 5.0
    assert b"request body did not arrive in time" in answers[0]


async def test_a_body_at_the_minimum_rate_is_read_to_the_end(tls_dir: Path) -> None:
    """Slow but steady is fine: 2 KiB bodies sent in 8 pieces over 0.8 s, against 1 KiB/s after 0.2 s."""
    limits = ServerLimits(min_body_rate=1024, body_grace=0.2)
    body = json.dumps(review("steady")).encode()
    body += b" " * (2048 - len(body))
    async with running_server(tls_dir, limits=limits) as srv:
        reader, writer = await _raw(srv.server.port, tls_dir)
        writer.write(
            b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        for i in range(8):
            writer.write(body[i * 256 : (i + 1) * 256])
            await writer.drain()
            await asyncio.sleep(0.1)
        head = await asyncio.wait_for(reader.readline(), 5)
        writer.close()
    assert head.startswith(b"HTTP/1.1 200")


async def test_one_address_over_64_connections_at_normal_load_gets_no_429(tls_dir: Path) -> None:
    """kube-apiserver pools connections from one or a few addresses; it must never be throttled for that."""
    connector = aiohttp.TCPConnector(ssl=client_context(tls_dir), limit=64)
    async with running_server(tls_dir) as srv, aiohttp.ClientSession(connector=connector) as http:

        async def client(c: int) -> list[int]:
            out = []
            for i in range(4):
                async with http.post(srv.url + "/validate", json=review(f"c{c}-{i}")) as resp:
                    await resp.read()
                    out.append(resp.status)
            return out

        results = await asyncio.gather(*(client(c) for c in range(64)))
    statuses = [s for r in results for s in r]
    assert len(statuses) == 256 and set(statuses) == {200}


# --- /mutate-pods -------------------------------------------------------------------------------------------


def _router(registry: CollectorRegistry | None = None) -> PodRouter:
    cache = RoutingCache()
    cache.set_classes(
        [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "gpu"},
                "spec": {
                    "extendedResourceName": RESOURCE,
                    "extendedResourceCapacityRequests": {"requests": {"shares": "1"}},
                },
            }
        ]
    )
    cache.set_namespaces(
        [{"metadata": {"name": OPTED_NS, "labels": {"dra-capacity.io/pod-routing": "enabled"}}}]
    )
    return PodRouter(cache, metrics=PodRoutingMetrics(registry or CollectorRegistry()))


def _pod_review(padding: int = 0) -> dict[str, Any]:
    env = [{"name": f"VAR_{i}", "value": "x" * 40} for i in range(padding)]
    container = {"name": "c", "image": "i", "env": env, "resources": {"limits": {RESOURCE: "1"}}}
    return admission_review(
        "pod-1",
        POD_KIND,
        PODS,
        operation="CREATE",
        namespace=OPTED_NS,
        object={"metadata": {"name": "p", "namespace": OPTED_NS}, "spec": {"containers": [container]}},
    )


def test_the_pod_body_cap_is_derived_from_the_apiservers_request_limit() -> None:
    assert APISERVER_MAX_REQUEST_BYTES == 3 * 1024 * 1024
    assert ServerLimits().pod_max_body == 3 * 1024 * 1024 * WORST_ESCAPE_FACTOR + ENVELOPE_ALLOWANCE


async def test_a_pod_review_over_its_cap_is_413_json(tls_dir: Path) -> None:
    limits = ServerLimits(pod_max_body=4096)
    async with (
        running_server(tls_dir, limits=limits, pod_router=_router()) as srv,
        session(tls_dir) as http,
    ):
        resp = await http.post(srv.url + "/mutate-pods", json=_pod_review(padding=200))
        assert resp.status == 413 and resp.content_type == "application/json"
        assert (await resp.json())["error"] == "request body is larger than the limit of 4096 bytes"
        # The DeviceClass endpoints keep their own, larger, limit.
        assert (await http.post(srv.url + "/validate", json=review())).status == 200


async def test_a_large_pod_review_is_judged_by_a_worker_and_its_routing_counted(tls_dir: Path) -> None:
    limits = ServerLimits(pod_inline_max_body=1024)
    registry = CollectorRegistry()
    async with (
        running_server(tls_dir, limits=limits, pod_router=_router(registry)) as srv,
        session(tls_dir) as http,
    ):
        small = await http.post(srv.url + "/mutate-pods", json=_pod_review())
        large = await http.post(srv.url + "/mutate-pods", json=_pod_review(padding=100))
        metrics = await (await http.get(srv.url + "/metrics")).text()
        small_body, large_body = await small.json(), await large.json()
    assert small_body["response"]["patchType"] == large_body["response"]["patchType"] == "JSONPatch"
    assert (
        _sample(metrics, "dra_capacity_webhook_judged_reviews_total", endpoint="mutate-pods", where="worker")
        == 1
    )
    assert registry.get_sample_value("dra_capacity_webhook_pod_routing_total", {"verdict": "route"}) == 2


def test_a_large_pod_reviews_job_can_go_to_a_worker_process() -> None:
    """The job carries the body and a snapshot of the routing cache: it pickles, and judges the same."""
    body = json.dumps(_pod_review(padding=10)).encode()
    job = pickle.loads(pickle.dumps(_router().offload(body)))
    verdict = job()
    assert verdict.routing == "route" and b'"patchType":"JSONPatch"' in verdict.payload


# --- connection timeouts ------------------------------------------------------------------------------------


async def test_headers_not_complete_in_time_close_the_connection(tls_dir: Path) -> None:
    limits = ServerLimits(header_timeout=0.5)
    async with running_server(tls_dir, limits=limits) as srv, session(tls_dir) as http:
        reader, writer = await _raw(srv.server.port, tls_dir)
        writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\n")  # and never the rest
        await writer.drain()
        started = time.perf_counter()
        assert await _closed_within(reader, 5) == b""
        assert time.perf_counter() - started < 2.0
        silent_reader, _ = await _raw(srv.server.port, tls_dir)  # connects, never sends a byte
        assert await _closed_within(silent_reader, 5) == b""
        metrics = await (await http.get(srv.url + "/metrics")).text()
    assert _sample(metrics, "dra_capacity_webhook_header_timeouts_total") == 2


async def test_an_idle_keep_alive_connection_outlives_the_header_timeout(tls_dir: Path) -> None:
    """The header timeout starts with a request's first byte: an idle pooled connection is kept."""
    limits = ServerLimits(header_timeout=0.3)
    async with running_server(tls_dir, limits=limits) as srv:
        reader, writer = await _raw(srv.server.port, tls_dir)
        body = json.dumps(review()).encode()
        request = (
            b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        for _ in range(2):
            writer.write(request)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            assert head.startswith(b"HTTP/1.1 200")
            await asyncio.sleep(0.8)  # idle, well past the header timeout
        writer.close()


async def test_a_tls_handshake_that_never_finishes_is_closed(tls_dir: Path) -> None:
    limits = ServerLimits(handshake_timeout=0.5)
    async with running_server(tls_dir, limits=limits) as srv:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.server.port)  # plain TCP: no hello
        started = time.perf_counter()
        assert await _closed_within(reader, 5) == b""
        assert time.perf_counter() - started < 3.0
        writer.close()


# --- huge headers -------------------------------------------------------------------------------------------


async def _headers(port: int, tls_dir: Path, extra: bytes) -> tuple[bytes, bytes]:
    reader, writer = await _raw(port, tls_dir)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + extra + b"\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


async def test_huge_or_too_many_headers_get_a_json_431_and_one_log_line(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv:
        huge_head, huge_body = await _headers(srv.server.port, tls_dir, b"X-Big: " + b"a" * 20_000 + b"\r\n")
        many = b"".join(f"X-H{i}: v\r\n".encode() for i in range(40))
        many_head, many_body = await _headers(srv.server.port, tls_dir, many)
        log = srv.log.getvalue()
    for head, body in ((huge_head, huge_body), (many_head, many_body)):
        assert head.split(b" ", 2)[1] == b"431"  # HTTP/1.0: the request's own version was never read
        assert b"application/json" in head.lower() and b"server: dra-capacity\r\n" in head.lower() + b"\r\n"
        assert json.loads(body)["error"].startswith("request header fields too large")
    refused = [json.loads(line) for line in log.splitlines() if "malformed request refused" in line]
    assert [(line["level"], line["code"]) for line in refused] == [("warning", 431), ("warning", 431)]
    assert "Traceback" not in log and "exception" not in log


async def test_a_malformed_request_line_is_a_json_400(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv:
        reader, writer = await _raw(srv.server.port, tls_dir)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == b"400"
    assert json.loads(body)["error"].startswith("malformed HTTP request")
