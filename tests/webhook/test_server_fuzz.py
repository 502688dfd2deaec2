"""Property: whatever arrives at /validate or /mutate (random bytes, random JSON, valid reviews with random
mutations), the answer is a 4xx with a one-line JSON error body or a 200 AdmissionReview echoing the uid;
never a 5xx, never a dropped connection. Runs against the real DeviceClass admission over real HTTPS.
"""

from __future__ import annotations

import asyncio
import copy
import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.server_harness import client_context, make_tls_dir, running_server

from resourceapi.gates import FeatureGates
from webhook.deviceclass.admission import DeviceClassAdmission

# Waits on purpose (timeouts, floods, lease expiries): `make quick` leaves these out (docs/testing.md).
pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).resolve().parents[2] / "bench" / "fixtures" / "deviceclass-realistic.json"
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class ServerThread:
    """The webhook on its own event loop in a thread, so hypothesis can drive it with a blocking client."""

    def __init__(self, tls_dir: Path) -> None:
        self.tls_dir = tls_dir
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with running_server(self.tls_dir, DeviceClassAdmission(FeatureGates.defaults())) as srv:
            self.port = srv.server.port
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        assert self._ready.wait(60), "server did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


class Client:
    """One keep-alive HTTPS connection that verifies the server against the generated CA."""

    def __init__(self, port: int, tls_dir: Path) -> None:
        self.port, self.context = port, client_context(tls_dir)
        self.conn: http.client.HTTPSConnection | None = None

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(
                    "127.0.0.1", self.port, context=self.context, timeout=30
                )
            try:
                self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.conn.close()
                self.conn = None  # the server closed an idle keep-alive connection: retry once on a fresh one
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    tls_dir = tmp_path_factory.mktemp("fuzz") / "tls"
    make_tls_dir(tls_dir)
    with ServerThread(tls_dir) as server:
        yield Client(server.port, tls_dir)


def assert_well_answered(status: int, body: bytes, uid: Any = None) -> None:
    assert status < 500, body
    if status == 200:
        doc = json.loads(body)
        assert doc["apiVersion"] == "admission.k8s.io/v1" and doc["kind"] == "AdmissionReview"
        assert isinstance(doc["response"]["allowed"], bool)
        if uid is not None:
            assert doc["response"]["uid"] == uid
    else:
        assert 400 <= status < 500
        assert body.endswith(b"\n") and b"\n" not in body[:-1]
        assert isinstance(json.loads(body)["error"], str)


finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)
endpoints = st.sampled_from(["/validate", "/mutate"])


@SETTINGS
@given(endpoint=endpoints, body=st.binary(max_size=2048))
def test_random_bytes_get_a_4xx_json_error_or_a_review(client: Client, endpoint: str, body: bytes) -> None:
    assert_well_answered(*client.post(endpoint, body))


@SETTINGS
@given(endpoint=endpoints, value=json_values)
def test_random_json_gets_a_4xx_json_error_or_a_review(client: Client, endpoint: str, value: Any) -> None:
    assert_well_answered(*client.post(endpoint, json.dumps(value).encode()))


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, (*prefix, i)))
    return out


BASE_REVIEW = json.loads(FIXTURE.read_text())
BASE_PATHS = [p for p in _paths(BASE_REVIEW) if p]


@SETTINGS
@given(
    endpoint=endpoints,
    mutations=st.lists(
        st.tuples(st.sampled_from(BASE_PATHS), st.one_of(st.just(...), json_values)), min_size=1, max_size=4
    ),
)
def test_mutated_valid_reviews_get_a_4xx_json_error_or_a_review(
    client: Client, endpoint: str, mutations: list[tuple[tuple[Any, ...], Any]]
) -> None:
    doc = copy.deepcopy(BASE_REVIEW)
    for path, value in mutations:
        target = doc
        for key in path[:-1]:
            if not isinstance(target, dict | list):
                break
            try:
                target = target[key]
            except (KeyError, IndexError, TypeError):
                break
        else:
            present = (isinstance(target, dict) and path[-1] in target) or (
                isinstance(target, list) and isinstance(path[-1], int) and path[-1] < len(target)
            )
            if present:
                if value is ...:
                    del target[path[-1]]
                else:
                    target[path[-1]] = value
    status, body = client.post(endpoint, json.dumps(doc).encode())
    request = doc.get("request") if isinstance(doc, dict) else None
    uid = request.get("uid") if isinstance(request, dict) else None
    assert_well_answered(status, body, uid if status == 200 else None)


SPEC_FIELDS = st.sampled_from(
    ["selectors", "config", "extendedResourceName", "extendedResourceCapacityRequests"]
)


@SETTINGS
@given(endpoint=endpoints, spec=st.dictionaries(SPEC_FIELDS, json_values, max_size=4))
def test_well_formed_review_of_any_spec_gets_http_200(client: Client, endpoint: str, spec: Any) -> None:
    doc = copy.deepcopy(BASE_REVIEW)
    doc["request"]["object"]["spec"] = spec
    status, body = client.post(endpoint, json.dumps(doc).encode())
    assert status == 200, body
    assert_well_answered(status, body, uid=doc["request"]["uid"])
