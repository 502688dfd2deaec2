"""The search across several claims of one pod: every claim's prioritized list is tried in order, whichever
claim it belongs to."""

from __future__ import annotations

from typing import Any

from allocator.structured.cluster import Cluster, NodeInfo
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates

DRIVER = "gpu.example.com"
NODE = NodeInfo("n1", {"kubernetes.io/hostname": "n1"})
GPU_CLASS = DeviceClass.model_validate(
    {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
)
SLICE = ResourceSlice.model_validate(
    {
        "metadata": {"name": "s1"},
        "spec": {
            "driver": DRIVER,
            "nodeName": "n1",
            "pool": {"name": "pool1", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": "g0", "attributes": {"model": {"string": "a100"}}},
                {"name": "g1", "attributes": {"model": {"string": "h100"}}},
            ],
        },
    }
)


def model_is(model: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]


def claim(name: str, request: dict[str, Any]) -> ResourceClaim:
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": [request]}},
        }
    )


def test_the_prioritized_list_of_a_later_claim_is_tried_in_order() -> None:
    first = claim("c0", {"name": "r0", "exactly": {"deviceClassName": "gpu", "selectors": model_is("a100")}})
    second = claim(
        "c1",
        {
            "name": "r0",
            "firstAvailable": [
                {"name": "b200", "deviceClassName": "gpu", "selectors": model_is("b200")},
                {"name": "h100", "deviceClassName": "gpu", "selectors": model_is("h100")},
            ],
        },
    )
    outcome = Cluster(FeatureGates.defaults(), [GPU_CLASS], [SLICE]).allocate(NODE, [first, second])
    assert outcome.fits and outcome.results is not None
    assert [[(r.request, r.device) for r in a.devices.results] for a in outcome.results] == [
        [("r0", "g0")],
        [("r0/h100", "g1")],
    ]


def test_an_admin_request_skips_a_device_its_own_claim_already_holds() -> None:
    """Admin access may take devices in use, but one claim never gets the same device twice: the second admin
    request moves on to the next device."""
    admin = {"deviceClassName": "gpu", "adminAccess": True}
    both = ResourceClaim.model_validate(
        {
            "metadata": {"name": "c0", "namespace": "default", "uid": "uid-c0"},
            "spec": {
                "devices": {"requests": [{"name": "a", "exactly": admin}, {"name": "b", "exactly": admin}]}
            },
        }
    )
    gates = FeatureGates.defaults().with_overrides(DRAAdminAccess=True)
    outcome = Cluster(gates, [GPU_CLASS], [SLICE]).allocate(NODE, [both])
    assert outcome.fits and outcome.results is not None
    assert [(r.request, r.device) for r in outcome.results[0].devices.results] == [("a", "g0"), ("b", "g1")]
