"""`procrt.manager.Manager` in-process: the start and stop order, the listener and its checks, the lease
released on a clean stop and the writers killed on a lost one."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from procrt import manager as manager_module
from procrt.identity import identity
from procrt.manager import Manager


class Recorder:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def start(self) -> None:
        self.log.append(f"start {self.name}")

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")


class FakeElector:
    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.on_started: Callable[[], None] | None = None
        self.on_lost: Callable[[], None] | None = None
        self.leading = False

    def start(self) -> None:
        self.log.append("start elector")

    def stop(self, release: bool = True) -> None:
        self.log.append(f"stop elector release={release}")

    def is_leader(self) -> bool:
        return self.leading


def _manager(log: list[str], **kw: Any) -> Manager:
    m = Manager(logging.getLogger("test.manager"), name="test", **kw)
    m.add(Recorder("a", log))
    m.add(Recorder("b", log), kill=lambda: log.append("kill b"))
    m.add_closer(lambda: log.append("close"))
    return m


def test_runnables_start_in_order_and_stop_in_reverse_then_the_lease_is_released() -> None:
    log: list[str] = []
    m = _manager(log)
    elector = FakeElector(log)
    m.elect(elector)
    m.start()
    assert m.run(lambda: 3) == 3
    assert log == [
        "start a",
        "start b",
        "start elector",
        "stop b",
        "stop a",
        "stop elector release=True",
        "close",
    ]


def test_a_process_not_elected_is_always_the_leader_and_an_elected_one_asks_its_elector() -> None:
    log: list[str] = []
    assert _manager(log).is_leader()
    m = _manager(log)
    elector = FakeElector(log)
    m.elect(elector)
    assert not m.is_leader()
    elector.leading = True
    assert m.is_leader()


def test_on_elected_callbacks_run_when_the_elector_takes_the_lease() -> None:
    log: list[str] = []
    m = _manager(log)
    elector = FakeElector(log)
    m.elect(elector)
    m.on_elected(lambda: log.append("elected"))
    assert elector.on_started is not None
    elector.on_started()
    assert log == ["elected"]


def test_a_lost_lease_kills_the_writers_and_keeps_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    m = _manager(log)
    elector = FakeElector(log)
    m.elect(elector)

    def exit_after_lost_lease(logger: Any, stop_writes: Callable[[], None]) -> None:
        stop_writes()
        log.append("exit 1")

    monkeypatch.setattr(manager_module, "exit_after_lost_lease", exit_after_lost_lease)
    monkeypatch.setattr(manager_module, "on_stop", lambda callback: None)
    m.start()
    assert elector.on_lost is not None
    threading.Timer(0.05, elector.on_lost).start()
    m.run()
    assert log[3:] == ["kill b", "exit 1", "stop b", "stop a", "stop elector release=False", "close"]


def test_the_listener_serves_the_checks_added() -> None:
    m = Manager(
        logging.getLogger("test.manager"),
        name="test",
        health=("127.0.0.1", 0),
        metrics=lambda: b"up 1\n",
    )
    ready: list[str | None] = ["warming up"]
    m.add_readyz_check(lambda: ready[0])
    m.start()
    try:
        base = f"http://127.0.0.1:{m.health_port}"
        with pytest.raises(urllib.error.HTTPError) as not_ready:
            urllib.request.urlopen(f"{base}/readyz", timeout=2)
        assert not_ready.value.code == 503
        ready[0] = None
        with urllib.request.urlopen(f"{base}/readyz", timeout=2) as resp:
            assert resp.status == 200
        with urllib.request.urlopen(f"{base}/metrics", timeout=2) as resp:
            assert resp.read() == b"up 1\n"
    finally:
        m.stop()


def test_identity_is_the_flag_else_a_unique_name(monkeypatch: pytest.MonkeyPatch) -> None:
    assert identity("pod-0") == "pod-0"
    monkeypatch.setenv("POD_NAME", "binder-7")
    first, second = identity(), identity()
    assert first.startswith("binder-7_") and second.startswith("binder-7_") and first != second


def test_run_async_runs_main_on_a_loop_and_stops_everything_after(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    m = _manager(log)

    async def main(stop: asyncio.Event) -> int:
        await m.start_async()
        asyncio.get_running_loop().call_later(0.05, stop.set)  # as SIGTERM would
        await stop.wait()
        log.append("main done")
        return 0

    assert m.run_async(main) == 0
    assert log == ["start a", "start b", "main done", "stop b", "stop a", "close"]


def test_a_lost_lease_wakes_an_async_main_then_exits_one(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    m = _manager(log)
    elector = FakeElector(log)
    m.elect(elector)
    monkeypatch.setattr(manager_module, "exit_after_lost_lease", lambda logger, kill: log.append("exit 1"))

    async def main(stop: asyncio.Event) -> int:
        await m.start_async()
        assert elector.on_lost is not None
        threading.Timer(0.05, elector.on_lost).start()
        await stop.wait()
        return 0

    m.run_async(main)
    assert log[3:] == ["exit 1", "stop b", "stop a", "stop elector release=False", "close"]


def test_a_listener_that_cannot_bind_is_named_before_anything_starts() -> None:
    log: list[str] = []
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        m = _manager(log, metrics_listen=("127.0.0.1", port), health=("127.0.0.1", 0))
        with pytest.raises(manager_module.ListenError) as failed:
            m.start()
        assert failed.value.address == ("127.0.0.1", port)
        assert failed.value.errno == errno.EADDRINUSE
        assert log == []
        m.stop()
    finally:
        taken.close()
