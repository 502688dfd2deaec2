"""Readiness, Prometheus metrics and decision logs of the running HTTPS webhook (handler: the test double)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from support.server_harness import (
    ADMISSION_JSON,
    AdmissionDouble,
    device_class,
    review,
    running_server,
    session,
)
from support.server_harness import metric_sample as _sample

from webhook.server.server import Listen


def _decisions(log: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.splitlines()]
    return [line for line in lines if line["msg"] == "admission decision"]


async def test_healthz_is_200_while_warming_up(tls_dir: Path) -> None:
    handler = AdmissionDouble(hold=True)
    async with running_server(tls_dir, handler, wait_ready=False) as srv, session(tls_dir) as http:
        resp = await http.get(srv.url + "/healthz")
        assert resp.status == 200
        handler.release.set()


async def test_readyz_is_503_until_warm_up_finishes_then_200(tls_dir: Path) -> None:
    handler = AdmissionDouble(hold=True)
    async with running_server(tls_dir, handler, wait_ready=False) as srv, session(tls_dir) as http:
        resp = await http.get(srv.url + "/readyz")
        assert resp.status == 503
        assert (await resp.json()) == {"error": "not ready: admission handler warming up"}
        handler.release.set()
        await asyncio.wait_for(srv.server.warmed.wait(), 10)
        assert (await http.get(srv.url + "/readyz")).status == 200


async def test_review_sent_during_warm_up_is_answered_after_it(tls_dir: Path) -> None:
    handler = AdmissionDouble(hold=True)
    async with running_server(tls_dir, handler, wait_ready=False) as srv, session(tls_dir) as http:
        pending = asyncio.ensure_future(http.post(srv.url + "/validate", json=review("early")))
        await asyncio.sleep(0.1)
        assert not pending.done() and handler.calls == 0
        handler.release.set()
        resp = await asyncio.wait_for(pending, 10)
        assert (await resp.json())["response"]["uid"] == "early"


class FailingWarmUp(AdmissionDouble):
    def warm_up(self) -> None:
        raise RuntimeError("CEL environment broken")


async def test_failed_warm_up_keeps_readyz_503_with_the_reason(tls_dir: Path) -> None:
    async with running_server(tls_dir, FailingWarmUp(), wait_ready=False) as srv, session(tls_dir) as http:
        for _ in range(100):
            if srv.server.readiness.warm_up_error:
                break
            await asyncio.sleep(0.02)
        resp = await http.get(srv.url + "/readyz")
        assert resp.status == 503
        assert (
            "admission warm-up failed: RuntimeError: CEL environment broken" in (await resp.json())["error"]
        )


async def test_metrics_count_requests_by_endpoint_operation_outcome_and_code(tls_dir: Path) -> None:
    pod = {"kind": "Pod", "metadata": {"name": "p"}}
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        await http.post(srv.url + "/validate", json=review("a", operation="CREATE"))
        await http.post(srv.url + "/validate", json=review("b", device_class("deny-me"), operation="UPDATE"))
        await http.post(srv.url + "/mutate", json=review("c", pod))
        await http.post(srv.url + "/mutate", data=b"{", headers=ADMISSION_JSON)
        text = await (await http.get(srv.url + "/metrics")).text()
    requests = "dra_capacity_webhook_requests_total"
    assert (
        _sample(text, requests, endpoint="validate", operation="CREATE", outcome="allowed", code="200") == 1
    )
    assert _sample(text, requests, endpoint="validate", operation="UPDATE", outcome="denied", code="200") == 1
    assert _sample(text, requests, endpoint="mutate", operation="CREATE", outcome="foreign", code="200") == 1
    assert _sample(text, requests, endpoint="mutate", operation="unknown", outcome="error", code="400") == 1


async def test_metrics_have_a_millisecond_latency_histogram(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        await http.post(srv.url + "/validate", json=review())
        text = await (await http.get(srv.url + "/metrics")).text()
    histogram = "dra_capacity_webhook_request_duration_seconds"
    assert _sample(text, histogram + "_bucket", endpoint="validate", le="0.001") is not None
    assert _sample(text, histogram + "_bucket", endpoint="validate", le="0.005") is not None
    assert _sample(text, histogram + "_count", endpoint="validate", outcome="allowed") == 1


async def test_metrics_count_rejection_causes_by_type(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        await http.post(srv.url + "/validate", json=review("b", device_class("deny-me")))
        text = await (await http.get(srv.url + "/metrics")).text()
    causes = "dra_capacity_webhook_rejection_causes_total"
    assert _sample(text, causes, endpoint="validate", cause_type="FieldValueRequired") == 1


async def test_metrics_show_certificate_loads_and_expiry(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        text = await (await http.get(srv.url + "/metrics")).text()
        expected_expiry = srv.reloader.pair.not_valid_after.timestamp()
    assert _sample(text, "dra_capacity_webhook_certificate_reloads_total", result="success") == 1
    expiry = _sample(text, "dra_capacity_webhook_serving_certificate_expiry_timestamp_seconds")
    assert expiry == pytest.approx(expected_expiry)


async def test_separate_metrics_listener_is_plain_http_and_https_has_no_metrics(tls_dir: Path) -> None:
    async with (
        running_server(tls_dir, metrics_listen=Listen("127.0.0.1", 0)) as srv,
        session(tls_dir) as https,
        aiohttp.ClientSession() as plain,
    ):
        await https.post(srv.url + "/validate", json=review())
        resp = await plain.get(f"http://127.0.0.1:{srv.manager.metrics_port}/metrics")
        assert resp.status == 200
        assert "dra_capacity_webhook_requests_total" in await resp.text()
        assert (await https.get(srv.url + "/metrics")).status == 404


async def test_one_log_line_per_decision_with_its_identifiers(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        doc = review("u-42", device_class("deny-me"), operation="UPDATE")
        doc["request"]["dryRun"] = True
        await http.post(srv.url + "/validate", json=doc)
    (line,) = _decisions(srv.log.getvalue())
    assert line["uid"] == "u-42"
    assert line["name"] == "deny-me"
    assert line["operation"] == "UPDATE"
    assert line["endpoint"] == "validate"
    assert line["allowed"] is False
    assert line["dryRun"] is True
    assert line["level"] == "info"
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0


async def test_foreign_object_is_logged_as_foreign(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        await http.post(srv.url + "/mutate", json=review("f", {"kind": "Pod", "metadata": {"name": "p"}}))
    (line,) = _decisions(srv.log.getvalue())
    assert line["outcome"] == "foreign" and line["allowed"] is True


async def test_logs_never_carry_the_object_body(tls_dir: Path) -> None:
    secret = "opaque-parameter-secret-9f3c"
    obj = device_class(
        "gpu", config=[{"opaque": {"driver": "d.example.com", "parameters": {"token": secret}}}]
    )
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        await http.post(srv.url + "/validate", json=review("s", obj))
        refused = review("", obj)  # refused for its missing uid, object body aboard
        await http.post(srv.url + "/validate", json=refused)
    log = srv.log.getvalue()
    assert len(_decisions(log)) == 1
    assert secret not in log


async def test_unknown_operations_share_one_label(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        for i in range(3):
            await http.post(srv.url + "/validate", json=review(f"o{i}", operation=f"BOGUS{i}"))
        text = await (await http.get(srv.url + "/metrics")).text()
    requests = "dra_capacity_webhook_requests_total"
    assert _sample(text, requests, endpoint="validate", operation="other", outcome="allowed") == 3
    assert "BOGUS" not in text


def _probe(url: str) -> tuple[int, float]:
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    return status, time.perf_counter() - started


async def test_health_listener_answers_probes_while_the_webhook_loop_is_held(tls_dir: Path) -> None:
    """The health listener (`--health-listen`) runs on a thread and loop of its own: a probe never waits for
    the webhook's loop (a slow client, a parse, a connection flood), and it says ready once warmed up."""
    async with running_server(tls_dir, health_listen=Listen("127.0.0.1", 0)) as srv:
        base = f"http://127.0.0.1:{srv.manager.health_port}"
        assert (await asyncio.to_thread(_probe, base + "/readyz"))[0] == 200
        results: list[tuple[int, float]] = []
        prober = threading.Thread(target=lambda: results.extend(_probe(base + "/healthz") for _ in range(5)))
        prober.start()
        time.sleep(1.0)  # hold the webhook's event loop, as a costly parse on it would
        prober.join()
        metrics = await asyncio.to_thread(urllib.request.urlopen, base + "/metrics")
        assert b"dra_capacity_webhook_requests_total" in metrics.read()
    assert [status for status, _ in results] == [200] * 5
    assert max(seconds for _, seconds in results) < 0.5


async def test_health_listener_readyz_is_503_with_the_reason_until_warmed_up(tls_dir: Path) -> None:
    handler = AdmissionDouble(hold=True)
    async with running_server(
        tls_dir, handler, wait_ready=False, health_listen=Listen("127.0.0.1", 0)
    ) as srv:
        base = f"http://127.0.0.1:{srv.manager.health_port}"
        assert (await asyncio.to_thread(_probe, base + "/readyz"))[0] == 503
        assert (await asyncio.to_thread(_probe, base + "/healthz"))[0] == 200
        handler.release.set()
        await asyncio.wait_for(srv.server.warmed.wait(), 10)
        assert (await asyncio.to_thread(_probe, base + "/readyz"))[0] == 200
