"""Fault injection, pausing, dropped watches and the request log of the TEST DOUBLE (no upstream equivalent:
these let tests reproduce what a real API server does under load or failure: 409, 500, 503, timeouts)."""

from __future__ import annotations

import json
import threading
import time

import pytest
import urllib3
from kubernetes import client, watch

from kubeapi import KubeAPIServer
from kubeapi.objects import configmap, pod

pytestmark = pytest.mark.double_only("fault injection, pausing, dropped watches and the request log")


def test_fail_the_nth_call_with_conflict(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """The 2nd create of configmaps answers 409 Conflict; the 1st and 3rd succeed."""
    fault = kube_api.faults.fail("create", "configmaps", 409, nth=2)
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_config_map("default", configmap("one"))
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_config_map("default", configmap("two"))
    assert info.value.status == 409 and json.loads(info.value.body)["reason"] == "Conflict"
    core.create_namespaced_config_map("default", configmap("three"))
    assert kube_api.get("configmaps", "two") is None
    assert (fault.seen, fault.fired) == (2, 1)


@pytest.mark.parametrize(
    ("code", "reason"), [(500, "InternalError"), (503, "ServiceUnavailable"), (504, "Timeout")]
)
def test_fail_with_server_errors(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, code: int, reason: str
) -> None:
    """500, 503 and 504 answer the Status kube-apiserver sends for them."""
    kube_api.faults.fail("get", "pods", code)
    kube_api.seed(pod("p"))
    with pytest.raises(client.ApiException) as info:
        client.CoreV1Api(kube_client).read_namespaced_pod("p", "default")
    assert info.value.status == code and json.loads(info.value.body)["reason"] == reason


def test_fail_after_the_write(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """`after=True`: the write is committed but the client sees the failure (a lost response)."""
    kube_api.seed(pod("p"))
    kube_api.faults.fail("patch", "pods", 500, subresource="status", after=True)
    with pytest.raises(client.ApiException):
        client.CoreV1Api(kube_client).patch_namespaced_pod_status(
            "p", "default", {"status": {"phase": "Running"}}
        )
    stored = kube_api.get("pods", "p")
    assert stored is not None and stored["status"]["phase"] == "Running"


def test_delay_then_serve(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """A delayed call is served after the delay."""
    kube_api.faults.delay("list", "configmaps", 0.3)
    start = time.monotonic()
    client.CoreV1Api(kube_client).list_namespaced_config_map("default")
    assert time.monotonic() - start >= 0.3


def test_hang_makes_the_client_time_out(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """A hung call never answers: the client's own request timeout fires."""
    fault = kube_api.faults.hang("get", "configmaps", seconds=2, times=0)
    kube_api.seed(configmap("h"))
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        client.CoreV1Api(kube_client).read_namespaced_config_map("h", "default", _request_timeout=0.2)
    assert fault.fired >= 1  # urllib3 retried the timed-out read; every try hung


def test_pause_holds_requests_until_resume(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """While paused, a request waits; it is served once resumed."""
    core = client.CoreV1Api(kube_client)
    kube_api.pause()
    done = threading.Event()

    def call() -> None:
        core.list_namespace()
        done.set()

    t = threading.Thread(target=call)
    t.start()
    assert not done.wait(0.3)
    kube_api.resume()
    assert done.wait(5)
    t.join()


def test_drop_watches_ends_the_stream(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """Dropped watches end; the client's stream returns and it must watch again."""
    core = client.CoreV1Api(kube_client)
    rv = core.list_namespaced_pod("default").metadata.resource_version

    dropped: list[float] = []

    def drop_when_open() -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if kube_api.drop_watches("pods"):
                dropped.append(time.monotonic())
                return
            time.sleep(0.02)

    t = threading.Thread(target=drop_when_open)
    t.start()
    start = time.monotonic()
    events = list(
        watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=20)
    )
    ended = time.monotonic()
    t.join()
    assert events == [] and dropped and ended - start < 19


def test_request_log_records_every_request(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """Each request is recorded with verb, resource, namespace, name, body and the status answered."""
    kube_api.clear_requests()
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_config_map("default", configmap("log"))
    with pytest.raises(client.ApiException):
        core.read_namespaced_config_map("missing", "default")
    creates = kube_api.requests_for("create", "configmaps")
    assert len(creates) == 1
    assert creates[0].body["metadata"]["name"] == "log" and creates[0].status == 201
    assert creates[0].user == "kubernetes-admin"
    gets = kube_api.requests_for("get", "configmaps")
    assert (gets[0].name, gets[0].namespace, gets[0].status) == ("missing", "default", 404)


def test_drop_watches_abort_breaks_the_connection(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """`abort=True` resets the watch connection: the client's read fails instead of ending cleanly."""
    core = client.CoreV1Api(kube_client)
    rv = core.list_namespaced_pod("default").metadata.resource_version
    resp = core.list_namespaced_pod(
        "default", watch=True, resource_version=rv, timeout_seconds=20, _preload_content=False
    )
    deadline = time.monotonic() + 15
    while not kube_api.drop_watches("pods", abort=True) and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises((urllib3.exceptions.ProtocolError, urllib3.exceptions.HTTPError)):
        for _chunk in resp.stream(1024):
            pass
    resp.release_conn()
