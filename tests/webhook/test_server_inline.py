"""Which reviews the server judges on its event loop (webhook/server/server.py, the inline budget of
webhook/server/limits.py, the allowance of webhook/server/inline.py) and which it hands to a worker; both give
one answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from support.server_harness import AdmissionDouble, device_class, review, running_server, session

from localcluster.objects import GpuSlices
from resourceapi.api.resource_v1 import ResourceSlice
from resourceapi.gates import FeatureGates
from webhook.clusterview.cluster_view import ClusterView
from webhook.deviceclass.admission import DeviceClassAdmission
from webhook.deviceclass.costing import FREE, Cost
from webhook.deviceclass.native_rules import NativeRules
from webhook.server.inline import InlineAllowance
from webhook.server.limits import ServerLimits
from webhook.server.metrics import WebhookMetrics

GATES = FeatureGates.defaults()
FIXTURE = Path(__file__).resolve().parents[2] / "bench" / "fixtures" / "deviceclass-realistic.json"


def _judged(metrics: WebhookMetrics, where: str, endpoint: str = "validate") -> float:
    value = metrics.registry.get_sample_value(
        "dra_capacity_webhook_judged_reviews_total", {"endpoint": endpoint, "where": where}
    )
    return value or 0.0


def _handler(cluster: ClusterView | None = None) -> DeviceClassAdmission:
    handler = DeviceClassAdmission(
        GATES, NativeRules.WARN, cluster=(lambda: cluster) if cluster is not None else None
    )
    handler.warm_up()
    return handler


def _unique_selectors(nonce: str, count: int, size: int) -> list[dict[str, Any]]:
    """`count` valid selectors of about `size` bytes each, no cache has seen them."""
    out = []
    for k in range(count):
        terms, i = "", 0
        while len(terms) < size:
            term = f'device.attributes["gpu.example.com"].model == "{nonce}-{k}-{i}"'
            terms = term if not terms else f"{terms} || {term}"
            i += 1
        out.append({"cel": {"expression": terms}})
    return out


def _stored(obj: dict[str, Any]) -> ResourceSlice:
    """The slice as the cluster view holds it: a model, with a resourceVersion."""
    return ResourceSlice.model_validate({**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}})


def _h100(i: int, node: str, shares: int | None) -> dict[str, Any]:
    return {"name": f"gpu-{i}", "attributes": {"productName": {"string": "NVIDIA H100"}}}


_gpu_slice = GpuSlices(_h100, gpus=8, shares=None, driver="gpu.nvidia.com", suffix="gpus", into=_stored)


def _gpu_slices(nodes: int) -> list[ResourceSlice]:
    return [_gpu_slice(f"node-{n}") for n in range(nodes)]


# --- the server ---------------------------------------------------------------------------------------------


async def test_everyday_review_is_judged_on_the_event_loop(tls_dir: Path) -> None:
    body = FIXTURE.read_bytes()
    async with running_server(tls_dir, _handler()) as srv, session(tls_dir) as http:
        for _ in range(3):
            resp = await http.post(
                srv.url + "/validate", data=body, headers={"Content-Type": "application/json"}
            )
            assert resp.status == 200 and (await resp.json())["response"]["allowed"] is True
        assert _judged(srv.metrics, "inline") == 3 and _judged(srv.metrics, "worker") == 0


async def test_inline_and_worker_answers_are_the_same(tls_dir: Path) -> None:
    bad = review("same", device_class("x", selectors=[{"cel": {"expression": "device.nope"}}]))
    bad["request"]["object"]["metadata"]["labels"] = {"-bad": "x"}  # a warning (--native-rules warn)
    bad["request"]["object"]["spec"]["extendedResourceCapacityRequests"] = {"requests": {"shares": "0"}}
    answers = []
    for limits in (ServerLimits(), ServerLimits(inline_max_body=0)):
        async with running_server(tls_dir, _handler(), limits=limits) as srv, session(tls_dir) as http:
            resp = await http.post(srv.url + "/validate", json=bad)
            answers.append(await resp.read())
            where = "inline" if limits.inline_max_body else "worker"
            assert _judged(srv.metrics, where) == 1
    assert answers[0] == answers[1]
    assert json.loads(answers[0])["response"]["allowed"] is False


async def test_review_with_much_cel_to_compile_goes_to_a_worker(tls_dir: Path) -> None:
    obj = device_class("fresh", selectors=_unique_selectors("w", 3, 600))
    async with running_server(tls_dir, _handler()) as srv, session(tls_dir) as http:
        resp = await http.post(srv.url + "/validate", json=review("fresh", obj))
        assert resp.status == 200 and (await resp.json())["response"]["allowed"] is True
        assert _judged(srv.metrics, "worker") == 1 and _judged(srv.metrics, "inline") == 0


async def test_little_new_cel_is_compiled_inline_once(tls_dir: Path) -> None:
    obj = device_class("small", selectors=_unique_selectors("s", 2, 200))
    async with running_server(tls_dir, _handler()) as srv, session(tls_dir) as http:
        for uid in ("a", "b"):
            resp = await http.post(srv.url + "/validate", json=review(uid, obj))
            assert (await resp.json())["response"]["allowed"] is True
        assert _judged(srv.metrics, "inline") == 2


async def test_large_body_goes_to_a_worker(tls_dir: Path) -> None:
    obj = device_class("big")
    obj["metadata"]["labels"] = {f"l{i:05d}": "v" * 40 for i in range(400)}
    async with running_server(tls_dir, _handler()) as srv, session(tls_dir) as http:
        body = json.dumps(review("big", obj)).encode()
        assert len(body) > ServerLimits().inline_max_body
        resp = await http.post(srv.url + "/validate", data=body, headers={"Content-Type": "application/json"})
        assert (await resp.json())["response"]["allowed"] is True
        assert _judged(srv.metrics, "worker") == 1


async def test_handler_that_cannot_tell_its_cost_is_judged_by_workers(tls_dir: Path) -> None:
    async with running_server(tls_dir, AdmissionDouble()) as srv, session(tls_dir) as http:
        resp = await http.post(srv.url + "/validate", json=review())
        assert resp.status == 200
        assert _judged(srv.metrics, "worker") == 1 and _judged(srv.metrics, "inline") == 0


class _BrokenEstimate(AdmissionDouble):
    """TEST DOUBLE: a handler whose cost estimate has a bug."""

    def cost(self, endpoint: str, request: dict[str, Any]) -> Cost:
        raise RuntimeError("estimate bug")

    def prepare(self, endpoint: str, request: dict[str, Any], evaluations: int) -> None:
        raise RuntimeError("estimate bug")


async def test_a_bug_in_the_cost_estimate_leaves_the_review_to_a_worker(tls_dir: Path) -> None:
    async with running_server(tls_dir, _BrokenEstimate()) as srv, session(tls_dir) as http:
        resp = await http.post(srv.url + "/validate", json=review("est"))
        assert resp.status == 200 and (await resp.json())["response"]["allowed"] is True
        assert _judged(srv.metrics, "worker") == 1
        assert "estimating a review's cost failed" in srv.log.getvalue()


async def test_malformed_small_body_is_refused_inline_with_400(tls_dir: Path) -> None:
    async with running_server(tls_dir, _handler()) as srv, session(tls_dir) as http:
        resp = await http.post(
            srv.url + "/validate", data=b'{"kind": 1}', headers={"Content-Type": "application/json"}
        )
        assert resp.status == 400 and "expected apiVersion" in (await resp.json())["error"]


async def test_spent_allowance_sends_reviews_to_workers(tls_dir: Path) -> None:
    limits = ServerLimits(inline_slow_seconds_per_second=1e-9, inline_free_seconds=0.0)
    async with running_server(tls_dir, _handler(), limits=limits) as srv, session(tls_dir) as http:
        for uid in ("a", "b", "c"):
            resp = await http.post(srv.url + "/validate", json=review(uid))
            assert (await resp.json())["response"]["allowed"] is True
        assert _judged(srv.metrics, "inline") == 1 and _judged(srv.metrics, "worker") == 2


async def test_flood_of_reviews_with_new_cel_moves_to_workers_and_probes_stay_quick(tls_dir: Path) -> None:
    """Each review carries 900 bytes of CEL no cache holds: within the per-review budget, so the loop would
    compile every one; the allowance sends the flood to the workers after the first tens of milliseconds."""
    worst = 0.0
    async with running_server(tls_dir, _handler()) as srv, session(tls_dir) as http:
        stop = time.monotonic() + 2.0

        async def flood(k: int) -> None:
            n = 0
            while time.monotonic() < stop:
                obj = device_class(f"f{k}", selectors=_unique_selectors(f"f{k}-{n}", 1, 900))
                resp = await http.post(srv.url + "/validate", json=review(f"f{k}-{n}", obj))
                assert resp.status == 200
                n += 1

        async def probe() -> None:
            nonlocal worst
            async with session(tls_dir) as prober:
                while time.monotonic() < stop:
                    started = time.monotonic()
                    assert (await prober.get(srv.url + "/healthz")).status == 200
                    worst = max(worst, time.monotonic() - started)
                    await asyncio.sleep(0.05)

        await asyncio.gather(probe(), *(flood(k) for k in range(8)))
        # the flood goes to the workers once the loop's share (50 ms a second) is spent: most are theirs
        assert _judged(srv.metrics, "worker") > _judged(srv.metrics, "inline")
    # every probe was answered during the flood (asserted in probe()); how quickly is bench/hostile.py's
    # figure: a wall-clock bound here failed on a machine at load average 15 (the standards: no timed tests)
    assert worst > 0


# --- the pieces ---------------------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_allowance_charges_only_time_beyond_the_free_share() -> None:
    clock = _Clock()
    allowance = InlineAllowance(rate=0.05, free=0.001, clock=clock)
    for _ in range(1000):
        allowance.charge(0.0009)
    assert allowance.open() and allowance.remaining == 0.05


def test_allowance_closes_when_spent_and_refills_with_time() -> None:
    clock = _Clock()
    allowance = InlineAllowance(rate=0.05, free=0.001, clock=clock)
    allowance.charge(0.031)
    assert allowance.open()
    allowance.charge(0.031)
    assert not allowance.open()
    clock.now += 0.5  # 25 ms back
    assert allowance.open()
    clock.now += 100.0
    assert allowance.remaining == 0.05  # at most one second's worth


def test_cost_counts_cel_not_compiled_yet() -> None:
    handler = _handler()
    request = review("c", device_class("c", selectors=_unique_selectors("c", 2, 100)))["request"]
    expressions = [s["cel"]["expression"] for s in request["object"]["spec"]["selectors"]]
    assert handler.cost("validate", request) == Cost(compile_bytes=sum(len(e) for e in expressions))
    handler.validate(request)
    assert handler.cost("validate", request) == FREE


def test_mutate_and_foreign_reviews_cost_nothing() -> None:
    handler = _handler()
    request = review("m", device_class("m", selectors=_unique_selectors("m", 2, 500)))["request"]
    assert handler.cost("mutate", request) == FREE
    assert handler.cost("validate", {"uid": "x", "object": "not an object"}) == FREE


def test_cost_counts_selector_evaluations_on_a_cold_cluster_view() -> None:
    view = ClusterView(_gpu_slices(4), [])
    handler = _handler(view)
    expression = 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA")'
    request = review("e", device_class("e", selectors=[{"cel": {"expression": expression}}]))["request"]
    assert handler.cost("validate", request).evaluations == 32  # 4 slices of 8 devices
    handler.validate(request)
    assert handler.cost("validate", request) == FREE


def test_prepare_warms_a_cold_view_in_bounded_steps() -> None:
    view = ClusterView(_gpu_slices(4), [])
    handler = _handler(view)
    expression = 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA")'
    request = review("p", device_class("p", selectors=[{"cel": {"expression": expression}}]))["request"]
    assert view.pending(expression) == 32
    handler.prepare("validate", request, 16)
    assert view.pending(expression) == 16
    handler.prepare("validate", request, 16)
    assert view.pending(expression) == 0 and handler.cost("validate", request).evaluations == 0
    answer = handler.validate(request).response
    assert answer["allowed"] is True
