"""procrt's health listener: /healthz, /readyz and /metrics on a thread and loop of their own, for every
process (serve, bind, certs controller)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from procrt.health import HealthListener, LoopHeartbeat


def get(port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


@pytest.fixture
def listener() -> object:
    state = {"ready": "informers not synced", "alive": None}
    health = HealthListener(
        "127.0.0.1",
        0,
        live=[lambda: state["alive"]],
        ready=[lambda: state["ready"]],
        metrics=lambda: b"# TYPE up gauge\nup 1\n",
    )
    health.start()
    try:
        yield health, state
    finally:
        health.stop()


def test_healthz_and_readyz_follow_their_checks(listener: tuple[HealthListener, dict[str, object]]) -> None:
    health, state = listener
    assert get(health.port, "/healthz") == (200, "application/json", '{"status":"ok"}')
    assert get(health.port, "/readyz") == (
        503,
        "application/json",
        '{"error":"not ready: informers not synced"}',
    )
    state["ready"] = None
    state["alive"] = "event loop unresponsive for 61 s"
    assert get(health.port, "/readyz")[0] == 200
    status, _, body = get(health.port, "/healthz")
    assert (status, json.loads(body)) == (503, {"error": "not alive: event loop unresponsive for 61 s"})


def test_metrics_and_unknown_paths(listener: tuple[HealthListener, dict[str, object]]) -> None:
    health, _ = listener
    status, content_type, body = get(health.port, "/metrics")
    assert status == 200 and content_type.startswith("text/plain") and "up 1" in body
    assert get(health.port, "/nope") == (404, "application/json", '{"error":"GET /nope: not found"}')


def test_a_check_that_raises_fails_the_probe_and_never_answers_500() -> None:
    def broken() -> str | None:
        raise RuntimeError("boom")

    health = HealthListener("127.0.0.1", 0, ready=[broken])
    health.start()
    try:
        assert get(health.port, "/readyz") == (
            503,
            "application/json",
            '{"error":"not ready: RuntimeError: boom"}',
        )
    finally:
        health.stop()


def test_a_port_in_use_is_an_os_error_at_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            HealthListener("127.0.0.1", port).start()


def test_stop_closes_the_port() -> None:
    health = HealthListener("127.0.0.1", 0)
    port = health.start()
    health.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


async def test_a_wedged_loop_fails_liveness_after_the_stall_limit() -> None:
    heartbeat = LoopHeartbeat(interval=0.01, stall=0.2)
    task = asyncio.create_task(heartbeat.run())
    await asyncio.sleep(0.05)
    assert heartbeat.check() is None
    time.sleep(0.3)  # the loop is held: no beat
    reason = heartbeat.check()
    assert reason is not None and reason.startswith("event loop unresponsive for")
    await asyncio.sleep(0.05)
    assert heartbeat.check() is None
    task.cancel()
