"""The HTTP envelope over real HTTPS: every malformed call gets its 4xx and a one-line JSON error body; every
well-formed AdmissionReview gets HTTP 200 with its uid echoed. The handler here is the labelled test double.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from support.server_harness import (
    ADMISSION_JSON,
    Running,
    device_class,
    review,
    running_server,
    session,
)

from webhook.server.envelope import MAX_BODY_BYTES


@pytest.fixture
async def srv(tls_dir: Path) -> AsyncIterator[Running]:
    async with running_server(tls_dir) as running:
        yield running


@pytest.fixture
async def http(tls_dir: Path) -> AsyncIterator[aiohttp.ClientSession]:
    async with session(tls_dir) as client:
        yield client


def _with(path: str, value: Any) -> bytes:
    """A valid review with one field (dotted path) replaced; `...` deletes it."""
    doc = review()
    *parents, leaf = path.split(".")
    target = doc
    for p in parents:
        target = target[p]
    if value is ...:
        del target[leaf]
    else:
        target[leaf] = value
    return json.dumps(doc).encode()


BAD_REQUESTS = [
    # (case, body, status, message fragment)
    ("empty body", b"", 400, "request body is empty"),
    ("not JSON", b"{nope", 400, "not valid JSON"),
    ("not UTF-8", b'{"a": "\xff"}', 400, "not UTF-8"),
    ("NaN literal", b'{"apiVersion": NaN}', 400, "NaN is not valid JSON"),
    ("nested too deeply", b"[" * 100_000 + b"]" * 100_000, 400, "nested too deeply"),
    ("array", b"[]", 400, "must be a JSON object (AdmissionReview), not array"),
    ("string", b'"x"', 400, "not string"),
    ("wrong apiVersion", _with("apiVersion", "admission.k8s.io/v1beta1"), 400, '"admission.k8s.io/v1beta1"'),
    ("missing apiVersion", _with("apiVersion", ...), 400, "got apiVersion none"),
    ("wrong kind", _with("kind", "Pod"), 400, 'kind "Pod"'),
    ("missing request", _with("request", ...), 400, "request is required"),
    ("null request", _with("request", None), 400, "request is required"),
    ("request not an object", _with("request", [1]), 400, "request must be an object, not array"),
    ("missing uid", _with("request.uid", ...), 400, "request.uid is required"),
    ("empty uid", _with("request.uid", ""), 400, "request.uid is required"),
    ("uid not a string", _with("request.uid", 7), 400, "request.uid must be a string"),
    ("operation not a string", _with("request.operation", 1), 400, "request.operation must be a string"),
    (
        "object not an object",
        _with("request.object", "x"),
        400,
        "request.object must be an object, not string",
    ),
    ("kind not an object", _with("request.kind", "DeviceClass"), 400, "request.kind must be an object"),
    ("dryRun not a boolean", _with("request.dryRun", "yes"), 400, "request.dryRun must be a boolean"),
    (
        "kind.version not a string",
        _with("request.kind.version", []),
        400,
        "request.kind.version must be a string",
    ),
    (
        "resource not a GVR",
        _with("request.resource.resource", 1),
        400,
        "request.resource.resource must be a string",
    ),
    (
        "groups not strings",
        _with("request.userInfo.groups", [1]),
        400,
        "request.userInfo.groups must be an array",
    ),
]


async def _assert_json_error(resp: aiohttp.ClientResponse, status: int, fragment: str) -> None:
    text = await resp.text()
    assert resp.status == status, text
    assert resp.content_type == "application/json"
    assert text.endswith("\n") and "\n" not in text[:-1], "one line"
    assert fragment in json.loads(text)["error"]


@pytest.mark.parametrize(
    ("case", "body", "status", "fragment"), BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS]
)
async def test_malformed_review_gets_4xx_json(
    srv: Running, http: aiohttp.ClientSession, case: str, body: bytes, status: int, fragment: str
) -> None:
    resp = await http.post(srv.url + "/validate", data=body, headers=ADMISSION_JSON)
    await _assert_json_error(resp, status, fragment)


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/yaml", "application/x-www-form-urlencoded"]
)
async def test_wrong_content_type_gets_415(
    srv: Running, http: aiohttp.ClientSession, content_type: str
) -> None:
    resp = await http.post(
        srv.url + "/mutate", data=json.dumps(review()), headers={"Content-Type": content_type}
    )
    await _assert_json_error(resp, 415, "expected application/json")


async def test_missing_content_type_gets_415(srv: Running, http: aiohttp.ClientSession) -> None:
    resp = await http.post(
        srv.url + "/validate", data=json.dumps(review()).encode(), skip_auto_headers=["Content-Type"]
    )
    await _assert_json_error(resp, 415, 'unsupported content type "none"')


async def test_content_type_parameters_are_accepted(srv: Running, http: aiohttp.ClientSession) -> None:
    headers = {"Content-Type": "application/json; charset=utf-8"}
    resp = await http.post(srv.url + "/validate", data=json.dumps(review()), headers=headers)
    assert resp.status == 200


async def test_declared_length_over_limit_gets_413(srv: Running, tls_dir: Path) -> None:
    async with session(tls_dir) as http:
        oversized = b" " * (MAX_BODY_BYTES + 1)
        resp = await http.post(srv.url + "/validate", data=oversized, headers=ADMISSION_JSON)
        await _assert_json_error(resp, 413, f"larger than the limit of {MAX_BODY_BYTES} bytes")
        assert resp.headers["Connection"] == "close"


async def test_chunked_body_over_limit_gets_413(srv: Running, http: aiohttp.ClientSession) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b" " * 65536

    resp = await http.post(srv.url + "/validate", data=chunks(), headers=ADMISSION_JSON)
    await _assert_json_error(resp, 413, "larger than the limit")


def _maximal_device_class(name: str) -> dict[str, Any]:
    """32 selectors of 10 KiB and 32 configs of 10 KiB parameters: the largest DeviceClass upstream admits."""
    expression = "<" * 10240
    parameters = {"v": "<" * (10240 - len('{"v":""}'))}
    return device_class(
        name,
        selectors=[{"cel": {"expression": expression}}] * 32,
        config=[{"opaque": {"driver": "d" * 63, "parameters": parameters}}] * 32,
    )


def _go_escaped(doc: dict[str, Any]) -> bytes:
    """What Go's encoding/json sends: `<`, `>` and `&` as \\u003c, \\u003e, \\u0026 (6 bytes each)."""
    text = json.dumps(doc, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


async def test_review_with_two_maximal_device_classes_fits_the_limit(
    srv: Running, http: aiohttp.ClientSession
) -> None:
    doc = review("big", _maximal_device_class("new"), operation="UPDATE")
    doc["request"]["oldObject"] = _maximal_device_class("old")
    body = _go_escaped(doc)
    assert len(body) > 7_800_000, "the escaping worst case is what is measured"
    resp = await http.post(srv.url + "/validate", data=body, headers=ADMISSION_JSON)
    assert resp.status == 200
    assert (await resp.json())["response"]["uid"] == "big"


async def test_well_formed_review_gets_200_with_uid_echoed(srv: Running, http: aiohttp.ClientSession) -> None:
    resp = await http.post(srv.url + "/validate", json=review("7d3a"))
    body = await resp.json()
    assert resp.status == 200
    assert body == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "7d3a", "allowed": True},
    }


async def test_rejection_is_http_200_with_the_status(srv: Running, http: aiohttp.ClientSession) -> None:
    resp = await http.post(srv.url + "/validate", json=review("r1", device_class("deny-me")))
    body = await resp.json()
    assert resp.status == 200
    assert body["response"]["allowed"] is False
    assert body["response"]["status"]["code"] == 422


async def test_foreign_object_is_allowed(srv: Running, http: aiohttp.ClientSession) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    resp = await http.post(srv.url + "/validate", json=review("f1", pod))
    assert resp.status == 200
    assert (await resp.json())["response"] == {"uid": "f1", "allowed": True}


async def test_review_without_object_reaches_the_handler(srv: Running, http: aiohttp.ClientSession) -> None:
    doc = review("d1", operation="DELETE")
    doc["request"]["object"] = None
    resp = await http.post(srv.url + "/validate", json=doc)
    assert resp.status == 200


async def test_handler_exception_is_500_json_without_traceback(
    srv: Running, http: aiohttp.ClientSession
) -> None:
    resp = await http.post(srv.url + "/validate", json=review("b1", device_class("boom")))
    text = await resp.text()
    assert resp.status == 500
    assert json.loads(text) == {"error": "internal error while admitting request b1; see the webhook log"}
    assert "Traceback" not in text and "secret internal detail" not in text
    assert "secret internal detail" in srv.log.getvalue()


async def test_get_on_admission_endpoint_gets_405_json(srv: Running, http: aiohttp.ClientSession) -> None:
    resp = await http.get(srv.url + "/validate")
    await _assert_json_error(resp, 405, "GET /validate: method not allowed")
    assert resp.headers["Allow"] == "POST"


async def test_unknown_path_gets_404_json(srv: Running, http: aiohttp.ClientSession) -> None:
    resp = await http.post(srv.url + "/admit", json=review())
    await _assert_json_error(resp, 404, "POST /admit: not found")


async def test_mutate_endpoint_wraps_the_handler_response(srv: Running, http: aiohttp.ClientSession) -> None:
    resp = await http.post(srv.url + "/mutate", json=review("m1"))
    assert resp.status == 200
    assert (await resp.json())["response"]["uid"] == "m1"


async def test_the_product_serves_no_benchmark_route(srv: Running, http: aiohttp.ClientSession) -> None:
    resp = await http.post(srv.url + "/bench/allow", json=review("x"))
    await _assert_json_error(resp, 404, "POST /bench/allow: not found")
