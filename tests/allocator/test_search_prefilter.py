"""The search's pre-flight check (`Search.could_fit`, the placer's prefilter): "no fit" without searching
exactly when some request has no device it could take, and "try the search" whenever the search must decide
(a request for all devices, a selector error)."""

from __future__ import annotations

from typing import Any

import pytest

from allocator.structured.cluster import Cluster, NodeInfo
from allocator.structured.errors import AllocationError
from localcluster.objects import make_slice
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates

DRIVER = "gpu.example.com"
NODE = NodeInfo("n1", {"kubernetes.io/hostname": "n1"})
GATES = FeatureGates.defaults()


def gpu(name: str, model: str = "a100", **extra: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"model": {"string": model}}, **extra}


def node_slice(
    *devices: dict[str, Any], node: str = "n1", name: str = "s1", pool: str = "pool1"
) -> ResourceSlice:
    return ResourceSlice.model_validate(
        make_slice(node, DRIVER).name(name).pool(pool).devices(*devices).obj()
    )


GPU_CLASS = DeviceClass.model_validate(
    {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
)


def model_is(model: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]


def claim(*requests: dict[str, Any], name: str = "c0") -> ResourceClaim:
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": list(requests)}},
        }
    )


def exactly(name: str = "r0", selectors: list[dict[str, Any]] | None = None, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": "gpu", **more}
    if selectors:
        body["selectors"] = selectors
    return {"name": name, "exactly": body}


def could_fit(slices: list[ResourceSlice], *claims: ResourceClaim, allocated: tuple[Any, ...] = ()) -> bool:
    return Cluster(GATES, [GPU_CLASS], slices, allocated).plan(NODE, list(claims)).could_fit()


def test_a_free_selectable_device_could_fit() -> None:
    assert could_fit([node_slice(gpu("g0"))], claim(exactly()))


def test_no_selectable_device_is_no_fit_without_a_search() -> None:
    assert not could_fit([node_slice(gpu("g0"))], claim(exactly(selectors=model_is("h100"))))
    assert not could_fit([], claim(exactly()))


def test_every_request_of_every_claim_needs_a_candidate() -> None:
    slices = [node_slice(gpu("g0"), gpu("g1", "h100"))]
    assert could_fit(slices, claim(exactly("a", model_is("a100")), exactly("b", model_is("h100"))))
    assert not could_fit(slices, claim(exactly("a", model_is("a100")), exactly("b", model_is("b200"))))
    assert not could_fit(
        slices, claim(exactly("a", model_is("a100"))), claim(exactly("b", model_is("b200")), name="c1")
    )


def test_a_device_allocated_to_another_claim_is_no_candidate() -> None:
    taken = ResourceClaim.model_validate(
        {
            "metadata": {"name": "other", "namespace": "default", "uid": "uid-other"},
            "spec": {"devices": {"requests": [exactly()]}},
            "status": {
                "allocation": {
                    "devices": {
                        "results": [{"request": "r0", "driver": DRIVER, "pool": "pool1", "device": "g0"}]
                    }
                }
            },
        }
    )
    assert not could_fit([node_slice(gpu("g0"))], claim(exactly()), allocated=(taken,))
    assert could_fit([node_slice(gpu("g0"), gpu("g1"))], claim(exactly()), allocated=(taken,))


def test_a_tainted_device_is_no_candidate_unless_tolerated() -> None:
    tainted = gpu("g0", taints=[{"key": "broken", "value": "yes", "effect": "NoSchedule"}])
    assert not could_fit([node_slice(tainted)], claim(exactly()))
    tolerated = exactly(tolerations=[{"key": "broken", "operator": "Exists", "effect": "NoSchedule"}])
    assert could_fit([node_slice(tainted)], claim(tolerated))


def test_one_subrequest_with_a_candidate_is_enough() -> None:
    def first_available(*models: str) -> dict[str, Any]:
        return {
            "name": "r0",
            "firstAvailable": [
                {"name": f"s{i}", "deviceClassName": "gpu", "selectors": model_is(m)}
                for i, m in enumerate(models)
            ],
        }

    slices = [node_slice(gpu("g0"))]
    assert could_fit(slices, claim(first_available("h100", "a100")))
    assert not could_fit(slices, claim(first_available("h100", "b200")))


def test_a_request_for_all_devices_is_left_to_the_search() -> None:
    everything = exactly(allocationMode="All", selectors=model_is("h100"))
    assert could_fit([node_slice(gpu("g0"))], claim(everything))


def test_a_selector_error_is_left_to_the_search() -> None:
    broken = [{"cel": {"expression": f'device.attributes["{DRIVER}"].missing == "x"'}}]
    assert could_fit([node_slice(gpu("g0"))], claim(exactly(selectors=broken)))


def test_no_fit_with_an_invalid_pool_is_an_error() -> None:
    duplicate = [node_slice(gpu("g0"), gpu("g0"))]
    with pytest.raises(AllocationError, match="invalid resource pools were encountered"):
        could_fit(duplicate, claim(exactly(selectors=model_is("h100"))))
