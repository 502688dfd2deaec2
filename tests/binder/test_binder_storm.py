"""Issue 42's storm on the API double, over real HTTPS: pods pinned by their node selector to a full pool
stay parked while a driver republishes a ResourceSlice of that pool with a changed attribute (no attempt,
counted by the queue), and a freed share, or a device with room whose attribute now matches the class's
selector, retries exactly the pods that may use it: not those a node selector keeps elsewhere."""

from __future__ import annotations

import copy
from typing import Any

from support.binder_harness import bound, check_invariants, running_binder, wait_for
from support.capacity_cluster import allocated_claim
from support.gpu_cluster import DRIVER, device_class, gpu_slice, node, pod

from binder.controller import Binder

HEALTHY = f'device.attributes["{DRIVER}"].healthy == true'
N_A, N_B = 10, 3


def gpu(healthy: bool, version: str = "1") -> dict[str, Any]:
    return {
        "name": "gpu-0",
        "allowMultipleAllocations": True,
        "attributes": {"healthy": {"bool": healthy}, "driverVersion": {"string": version}},
        "capacity": {"shares": {"value": "4"}},
    }


def pool_node(name: str, pool: str) -> dict[str, Any]:
    obj = node(name)
    obj["metadata"]["labels"] = {"kubernetes.io/hostname": name, "pool": pool}
    return obj


def seed(api: Any) -> None:
    cls = device_class()
    cls["spec"]["selectors"] = [{"cel": {"expression": HEALTHY}}]
    api.seed(cls)
    for name, pool in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")):
        api.seed(pool_node(name, pool))
        api.seed(gpu_slice(name, devices=[gpu(healthy=name != "a3")]))
    for name in ("a1", "a2", "b1"):  # every share used; a3's GPU is free but its class does not select it
        api.seed(allocated_claim(f"fill-{name}", name, "gpu-0", shares="4"))
    for i in range(N_A):
        api.seed(pod(f"a-{i}", nodeSelector={"pool": "a"}))
    for i in range(N_B):
        api.seed(pod(f"b-{i}", nodeSelector={"pool": "b"}))


def keys(prefix: str, n: int) -> list[tuple[str, str]]:
    return [("default", f"{prefix}-{i}") for i in range(n)]


def attempts(binder: Binder, ks: list[tuple[str, str]]) -> list[int]:
    with binder.cond:
        return [binder.queue.attempts(k) for k in ks]


def parked(binder: Binder, ks: list[tuple[str, str]]) -> bool:
    with binder.cond:
        return (
            all(binder.queue.state(k) in (None, "unschedulable") for k in ks)
            and not binder.ctx.assume.inflight
        )


def republish(api: Any, name: str, device: dict[str, Any], generation: int) -> None:
    obj = copy.deepcopy(api.get("resourceslices", f"{name}-{DRIVER}", namespace=""))
    obj["spec"]["devices"] = [device]
    obj["spec"]["pool"]["generation"] = generation
    api.update(obj)


def test_a_republished_full_slice_retries_nobody_and_a_freed_share_retries_its_pool(kube_api: Any) -> None:
    seed(kube_api)
    pool_a, pool_b = keys("a", N_A), keys("b", N_B)
    with running_binder(kube_api) as binder:
        wait_for("every pod tried once and parked", lambda: attempts(binder, pool_a + pool_b) == [1] * 13)
        wait_for("parked", lambda: parked(binder, pool_a + pool_b))

        for generation in range(2, 7):  # the storm: a1's full GPU republished with a new driver version
            republish(kube_api, "a1", gpu(True, version=str(generation)), generation)
        wait_for("the republishes seen", lambda: binder.changes["resource-slice-no-room"] == 5)
        assert attempts(binder, pool_a + pool_b) == [1] * 13
        assert binder.queue.moved["resource-slice"] == 0

        kube_api.delete("resourceclaims", "fill-a1")  # four shares free on a1: pool A's pods may use them
        wait_for("four of pool A bound", lambda: len(bound(kube_api)) == 4)
        wait_for("the rest parked again", lambda: parked(binder, pool_a + pool_b))
        assert binder.queue.moved["claim-deleted"] == N_A
        assert binder.queue.skipped["claim-deleted"] == N_B
        assert attempts(binder, pool_b) == [1] * N_B
        assert {p["spec"]["nodeName"] for p in bound(kube_api)} == {"a1"}

        # a3's free GPU now passes the class's selector: a changed attribute on a device with room
        republish(kube_api, "a3", gpu(True), 2)
        wait_for("four more of pool A bound", lambda: len(bound(kube_api)) == 8)
        wait_for("the rest parked again", lambda: parked(binder, pool_a + pool_b))
        assert binder.queue.moved["resource-slice"] == N_A - 4
        assert attempts(binder, pool_b) == [1] * N_B
        assert not any(p["metadata"]["name"].startswith("b-") for p in bound(kube_api))
    check_invariants(kube_api)
