"""Endpoints are objects registered once (webhook/server/endpoints.py): a second registration of a path
raises, as controller-runtime's `Register` panics, and each registered endpoint is served at its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.server_harness import AdmissionDouble, DoubleOutcome, review, running_server, session

from webhook.podrouting.pod_routing import POD_ENDPOINT, PodRouter
from webhook.podrouting.routing_cache import RoutingCache
from webhook.server.app import create_app
from webhook.server.endpoints import DuplicateEndpoint, Endpoint, EndpointLimits, Endpoints
from webhook.server.limits import ServerLimits


def _allow(request: dict[str, Any]) -> DoubleOutcome:
    return DoubleOutcome({"uid": request["uid"], "allowed": True})


def _endpoint(path: str) -> Endpoint:
    return Endpoint(path, _allow, EndpointLimits(max_body=4096, inline_max_body=4096))


def test_a_path_registered_twice_raises() -> None:
    endpoints = Endpoints()
    endpoints.register(_endpoint("extra"))
    with pytest.raises(DuplicateEndpoint, match="/extra is already registered"):
        endpoints.register(_endpoint("extra"))
    assert [e.path for e in endpoints] == ["extra"]


def test_a_path_is_a_name_without_its_slash() -> None:
    with pytest.raises(ValueError, match="without the leading slash"):
        Endpoints().register(_endpoint("/extra"))


def test_the_app_refuses_an_endpoint_that_shadows_another() -> None:
    with pytest.raises(DuplicateEndpoint, match="/validate"):
        create_app(AdmissionDouble(), endpoints=[_endpoint("validate")])
    router = PodRouter(RoutingCache())
    with pytest.raises(DuplicateEndpoint, match=f"/{POD_ENDPOINT}"):
        create_app(AdmissionDouble(), pod_router=router, inline_routes={POD_ENDPOINT: _allow})


def test_the_pod_router_registers_its_own_endpoint_and_limits() -> None:
    limits = ServerLimits(pod_max_body=4096, pod_inline_max_body=1024)
    endpoint = PodRouter(RoutingCache()).endpoint(limits)
    assert endpoint.path == POD_ENDPOINT
    assert endpoint.limits == EndpointLimits(max_body=4096, inline_max_body=1024)
    assert endpoint.offload is not None and endpoint.counted is not None and not endpoint.estimated


async def test_an_added_endpoint_is_served_at_its_path(tls_dir: Path) -> None:
    async with (
        running_server(tls_dir, AdmissionDouble(), endpoints=[_endpoint("extra")]) as srv,
        session(tls_dir) as http,
    ):
        resp = await http.post(srv.url + "/extra", json=review("x"))
        assert resp.status == 200 and (await resp.json())["response"] == {"uid": "x", "allowed": True}
