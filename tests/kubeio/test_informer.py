"""The list+watch cache (kubeio/informer.py) against the kube-apiserver test double over HTTPS, with the
official `kubernetes` client's transport. client-go's reflector is the model (kubernetes/kubernetes
staging/src/k8s.io/client-go/tools/cache/reflector.go): list in pages, watch from the list's resourceVersion
with bookmarks, relist on 410 Gone delivering the differences as ADDED / MODIFIED / DELETED, back off on
other failures and resume from the last resourceVersion."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubeapi import KubeAPIServer
from kubeapi.objects import configmap
from support.waiting import wait_for

from kubeio.informer import ADDED, DELETED, MODIFIED, Informer, key_of, resource_version
from kubeio.kube import Kube, Obj, Resource

CONFIGMAPS = Resource("v1", "configmaps", True)
Event = tuple[str, str | None, str | None]  # (type, old name, new name)


class Recorder:
    """An informer's handler and listener calls, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[Event] = []
        self.batches = 0

    def handler(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        with self.lock:
            self.events.append((kind, key_of(old)[1] if old else None, key_of(new)[1] if new else None))

    def listener(self) -> None:
        with self.lock:
            self.batches += 1

    def take(self) -> list[Event]:
        with self.lock:
            out, self.events = self.events, []
            return out


@pytest.fixture
def start(kube_api: KubeAPIServer) -> Iterator[Callable[..., tuple[Informer, Recorder]]]:
    started: list[Informer] = []

    def go(**kw: Any) -> tuple[Informer, Recorder]:
        informer = Informer(Kube.of_client(kube_api.api_client()), CONFIGMAPS, **kw)
        recorder = Recorder()
        informer.handlers.append(recorder.handler)
        informer.listeners.append(recorder.listener)
        informer.start()
        started.append(informer)
        assert informer.synced.wait(10), "not synced"
        return informer, recorder

    yield go
    for informer in started:
        informer.stop()
        informer.join(5)


def names(informer: Informer) -> list[str]:
    return sorted(key_of(o)[1] for o in informer.items())


def test_the_first_list_fills_the_store_and_reaches_the_handlers(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    kube_api.seed(configmap("a"))
    kube_api.seed(configmap("b", namespace="other"))
    informer, recorder = start()
    assert names(informer) == ["a", "b"]
    assert informer.get(("other", "b")) is not None and len(informer) == 2
    assert sorted(recorder.take()) == [(ADDED, None, "a"), (ADDED, None, "b")]
    assert informer.fresh and informer.relists == 1


def test_lists_are_read_in_pages(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    for i in range(5):
        kube_api.seed(configmap(f"cm-{i}"))
    informer, recorder = start(page_size=2)
    assert len(informer) == 5
    lists = [r for r in kube_api.requests_for("list", "configmaps") if "watch" not in r.query]
    assert len(lists) >= 3  # 5 objects, 2 a page
    assert all(r.query.get("limit") == "2" for r in lists)
    assert recorder.batches == 1  # one listener call for the whole list


def test_changes_arrive_as_added_modified_deleted(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    kube_api.seed(configmap("a"))
    informer, recorder = start()
    recorder.take()
    kube_api.seed(configmap("b"))
    stored = kube_api.get("configmaps", "a", namespace="default")
    assert stored is not None
    stored["data"] = {"k": "changed"}
    kube_api.update(stored)
    kube_api.delete("configmaps", "b")
    wait_for("three events", lambda: len(recorder.events) >= 3)
    assert recorder.take() == [(ADDED, None, "b"), (MODIFIED, "a", "a"), (DELETED, "b", None)]
    assert names(informer) == ["a"]
    a = informer.get(("default", "a"))
    assert a is not None and a["data"] == {"k": "changed"}


def test_a_dropped_watch_is_resumed_without_losing_changes(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    kube_api.seed(configmap("a"))
    informer, _ = start()
    kube_api.drop_watches()
    kube_api.seed(configmap("b"))
    wait_for("b", lambda: names(informer) == ["a", "b"])
    assert informer.relists == 1  # resumed from its resourceVersion, not relisted
    watches = kube_api.requests_for("watch", "configmaps")
    assert all(r.query.get("allowWatchBookmarks") == "true" for r in watches)
    assert watches[0].query.get("resourceVersion")


def test_410_gone_relists_and_delivers_the_differences(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    """An expired resourceVersion: the reflector relists (the official client's watch cannot recover)."""
    kube_api.seed(configmap("kept"))
    kube_api.seed(configmap("changed"))
    kube_api.seed(configmap("gone"))
    informer, recorder = start()
    recorder.take()
    with kube_api.paused():  # changes the watch never sees
        kube_api.drop_watches()
        changed = kube_api.get("configmaps", "changed", namespace="default")
        assert changed is not None
        changed["data"] = {"k": "new"}
        kube_api.update(changed)
        kube_api.delete("configmaps", "gone")
        kube_api.seed(configmap("new"))
        kube_api.compact()
    wait_for("the relist", lambda: informer.relists == 2)
    wait_for("the differences", lambda: len(recorder.events) >= 3)
    assert sorted(recorder.take()) == [
        (ADDED, None, "new"),
        (DELETED, "gone", None),
        (MODIFIED, "changed", "changed"),
    ]
    assert names(informer) == ["changed", "kept", "new"]


def test_other_failures_back_off_mark_the_view_stale_and_resume(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    informer, _ = start()
    fault = kube_api.faults.fail("watch", "configmaps", 500, times=3)
    kube_api.drop_watches()
    wait_for("stale", lambda: not informer.fresh)
    kube_api.seed(configmap("after"))
    wait_for("back", lambda: informer.fresh and names(informer) == ["after"])
    assert fault.fired == 3
    assert informer.relists == 1  # resumed from the last resourceVersion
    watches = [r.time for r in kube_api.requests_for("watch", "configmaps")]
    assert watches[-1] - watches[1] >= 0.2  # backed off between attempts


def test_a_run_of_failures_is_logged_once_as_a_warning(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]], caplog: pytest.LogCaptureFixture
) -> None:
    """RBAC or an unreachable server must be visible in the log, without a line per retry."""
    kube_api.faults.fail("list", "configmaps", 403, times=3)
    with caplog.at_level(logging.DEBUG, logger="dra_capacity.kubeio"):
        informer, _ = start()
    failures = [
        r for r in caplog.records if "informer configmaps failed (HTTP 403: injected fault)" in r.getMessage()
    ]
    assert [r.levelno for r in failures] == [logging.WARNING, logging.DEBUG, logging.DEBUG]
    assert informer.fresh


def test_a_failing_handler_does_not_stop_the_informer(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    informer, recorder = start()

    def broken(kind: str, old: Obj | None, new: Obj | None) -> None:
        raise RuntimeError("bug")

    informer.handlers.insert(0, broken)
    kube_api.seed(configmap("a"))
    wait_for("a", lambda: recorder.events)
    assert recorder.take() == [(ADDED, None, "a")]


def test_namespace_and_selectors_scope_the_list_and_the_watch(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    kube_api.seed(configmap("mine", namespace="ns1"))
    kube_api.seed(configmap("other", namespace="ns1"))
    kube_api.seed(configmap("mine", namespace="ns2"))
    informer, _ = start(namespace="ns1", field_selector="metadata.name=mine")
    assert [key_of(o) for o in informer.items()] == [("ns1", "mine")]
    kube_api.seed(configmap("late", namespace="ns1"))
    mine = kube_api.get("configmaps", "mine", namespace="ns1")
    assert mine is not None
    mine["data"] = {"k": "2"}
    kube_api.update(mine)
    wait_for(
        "the update", lambda: (o := informer.get(("ns1", "mine"))) is not None and o["data"] == {"k": "2"}
    )
    assert len(informer) == 1


def test_resync_merges_a_fresh_list_newer_objects_winning(
    kube_api: KubeAPIServer, start: Callable[..., tuple[Informer, Recorder]]
) -> None:
    kube_api.seed(configmap("a"))
    informer, recorder = start()
    recorder.take()
    with kube_api.paused():
        kube_api.drop_watches()
        kube_api.seed(configmap("b"))
    informer.stop()  # no watch: only the resync can show "b"
    informer.join(5)
    informer.resync()
    assert names(informer) == ["a", "b"]
    assert recorder.take() == [(ADDED, None, "b")]
    informer.resync()  # nothing newer: nothing delivered
    assert recorder.take() == []


def test_stop_interrupts_a_blocking_watch(kube_api: KubeAPIServer) -> None:
    informer = Informer(Kube.of_client(kube_api.api_client()), CONFIGMAPS, watch_timeout=300.0)
    informer.start()
    assert informer.synced.wait(10)
    time.sleep(0.2)
    began = time.monotonic()
    informer.stop()
    informer.join(5)
    assert time.monotonic() - began < 2.0


def test_resource_versions_compare_as_numbers() -> None:
    assert resource_version({"metadata": {"resourceVersion": "10"}}) > resource_version(
        {"metadata": {"resourceVersion": "9"}}
    )
    assert resource_version(None) == resource_version({"metadata": {}}) == -1
