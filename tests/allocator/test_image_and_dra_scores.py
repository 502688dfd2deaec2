"""ImageLocality (allocator/scheduling/imagelocality.py) and DynamicResources' score (drascore.py) against
upstream's own test tables (v1.37.2 pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go
`TestImageLocalityPriority`, `TestNormalizedImageName`; dynamicresources/dynamicresources_test.go
`Test_computesScore`), and the placer following each score under every strategy."""

from __future__ import annotations

from typing import Any

import pytest
from support.placing import _placer
from support.workloads import GPU_SHARED, container, gpu_slice, node, pod

from allocator.scheduling.drascore import claims_score, tells_apart
from allocator.scheduling.imagelocality import (
    MB,
    ImageStates,
    calculate_priority,
    normalized_image_name,
    pod_images,
)
from allocator.scheduling.placement import STRATEGIES, Strategy
from allocator.scheduling.scoring import DEFAULT_WEIGHTS, DYNAMIC_RESOURCES, IMAGE_LOCALITY
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice

# --- ImageLocality: upstream's table ------------------------------------------------------------------------

IMAGES: dict[str, list[tuple[list[str], int]]] = {
    "403002000": [
        (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
        (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
        (["gcr.io/2000:latest"], 2000),
    ],
    "25010": [(["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10)],
    "60040900": [(["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900)],
    "300600900": [(["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900)],
    "400030": [(["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30)],
    "203040": [(["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40)],
    "none": [],
    "vllm": [(["vllm/vllm-openai:v0.6.3"], 8 * 1024)],
}


def _image_node(name: str, images: str) -> Node:
    built = node(name)
    assert built.status is not None
    status = built.status.to_api()
    status["images"] = [{"names": n, "sizeBytes": size * MB} for n, size in IMAGES[images]]
    return Node.model_validate({**built.to_api(), "status": status})


def _image_pod(
    *images: str,
    init: tuple[str, ...] = (),
    volumes: tuple[str, ...] = (),
    requests: dict[str, Any] | None = None,
) -> Pod:
    containers = [{**container(f"c{i}", requests or {}), "image": image} for i, image in enumerate(images)]
    spec: dict[str, Any] = {}
    if init:
        spec["init"] = [{**container(f"i{i}", {}), "image": image} for i, image in enumerate(init)]
    if volumes:
        spec["volumes"] = [{"name": f"v{i}", "image": {"reference": r}} for i, r in enumerate(volumes)]
    return pod("p", containers=containers, **spec)


@pytest.mark.parametrize(
    ("images", "nodes", "expected"),
    [
        # two images spread on two nodes, prefer the larger image one
        ((("gcr.io/40", "gcr.io/250"), (), ()), ["403002000", "25010"], [0, 5]),
        # two images on one node, prefer this node
        ((("gcr.io/40", "gcr.io/300"), (), ()), ["403002000", "25010"], [7, 0]),
        # if exceed limit, use limit
        ((("gcr.io/10", "gcr.io/4000"), (), ()), ["400030", "25010"], [100, 0]),
        # if exceed limit, use limit (with node which has no images present)
        ((("gcr.io/10", "gcr.io/4000"), (), ()), ["400030", "25010", "none"], [66, 0, 0]),
        # pod with multiple large images, node2 is preferred
        (
            (("gcr.io/300", "gcr.io/600", "gcr.io/900"), (), ()),
            ["60040900", "300600900", "none"],
            [32, 36, 0],
        ),
        # pod with multiple small images
        ((("gcr.io/30", "gcr.io/40"), (), ()), ["203040", "400030"], [1, 0]),
        # pod with ImageVolume
        ((("gcr.io/30",), (), ("gcr.io/300",)), ["300600900", "400030"], [6, 0]),
        # same images as ImageVolume pod but as regular container images
        ((("gcr.io/30", "gcr.io/300"), (), ()), ["300600900", "400030"], [6, 0]),
        # include InitContainers
        ((("gcr.io/30",), ("gcr.io/300",), ()), ["403002000", "203040"], [6, 0]),
    ],
)
def test_image_locality_matches_upstreams_table(
    images: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], nodes: list[str], expected: list[int]
) -> None:
    containers, init, volumes = images
    built = [_image_node(f"node{i + 1}", n) for i, n in enumerate(nodes)]
    states = ImageStates.of(built)
    wanted = pod_images(_image_pod(*containers, init=init, volumes=volumes))
    assert [states.score(wanted, n.name, len(built)) for n in built] == expected


def test_normalized_image_name_matches_upstreams_table() -> None:
    digest = "sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2"
    assert normalized_image_name("root") == "root:latest"
    assert normalized_image_name("gcr.io:5000/root") == "gcr.io:5000/root:latest"
    assert normalized_image_name("root:tag") == "root:tag"
    assert normalized_image_name(f"root@{digest}") == f"root@{digest}"


def test_calculate_priority_clamps_as_upstream() -> None:
    """100 * (sum - 23 MiB) / (1000 MiB * n - 23 MiB), the sum clamped to that range."""
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(10**12, 2) == 100
    assert calculate_priority(150 * MB, 2) == 100 * (150 * MB - 23 * MB) // (2000 * MB - 23 * MB)


def test_a_node_dropping_an_image_no_longer_counts_it() -> None:
    states = ImageStates.of([_image_node("a", "400030"), _image_node("b", "400030")])
    assert states.holders["gcr.io/4000:latest"] == {"a", "b"}
    states.set_node(_image_node("b", "none"))
    assert states.holders["gcr.io/4000:latest"] == {"a"}
    states.remove_node("a")
    assert "gcr.io/4000:latest" not in states.holders


def test_weights_include_both_plugins() -> None:
    """default_plugins.go: ImageLocality weight 1; applyDynamicResources adds DynamicResources weight 2."""
    assert DEFAULT_WEIGHTS[IMAGE_LOCALITY] == 1 and DEFAULT_WEIGHTS[DYNAMIC_RESOURCES] == 2


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_pod_goes_where_its_large_image_is(strategy: Strategy) -> None:
    """Without images every strategy takes `a` (binpack: the fuller; the others: the emptier); once `b`
    reports the pod's 8 GiB image, it alone scores 100 there (weight 1), and wins."""
    nodes = [_image_node("a", "none"), _image_node("b", "none")]
    running = [pod("r", {"cpu": "8"}, nodeName="a" if strategy == "binpack" else "b")]
    placer = _placer(nodes, [gpu_slice("a", 2), gpu_slice("b", 2)], strategy=strategy, running=running)
    vllm = _image_pod("vllm/vllm-openai:v0.6.3", requests={GPU_SHARED: 1})
    assert placer.place(vllm).node == "a"
    placer.node_changed(_image_node("b", "vllm"))
    assert placer.place(vllm).node == "b"


# --- DynamicResources: upstream's table ---------------------------------------------------------------------


def _prioritized(*requests: tuple[str, int]) -> ResourceClaim:
    """A claim with one firstAvailable request per (name, number of subrequests `subreq-1`...)."""
    reqs = [
        {
            "name": name,
            "firstAvailable": [{"name": f"subreq-{i + 1}", "deviceClassName": "c"} for i in range(n)],
        }
        for name, n in requests
    ]
    return ResourceClaim.model_validate({"metadata": {"name": "c"}, "spec": {"devices": {"requests": reqs}}})


@pytest.mark.parametrize(
    ("claims", "allocated", "expected"),
    [
        ([[("req-1", 1)]], [["req-1/subreq-1"]], 8),  # single-request-only-subrequest-allocated
        ([[("req-1", 8)]], [["req-1/subreq-8"]], 1),  # single-request-last-subrequest-allocated
        ([[("req-1", 4), ("req-2", 5)]], [["req-1/subreq-4", "req-2/subreq-5"]], 9),  # middle subrequests
        ([[("req-1", 8), ("req-2", 1)]], [["req-1/subreq-8", "req-2/subreq-1"]], 9),  # top subrequests
        ([[("req-1", 8)], [("req-2", 8)]], [["req-1/subreq-8"], ["req-2/subreq-8"]], 2),  # two claims, last
        ([[("req-1", 1)], [("req-2", 1)]], [["req-1/subreq-1"], ["req-2/subreq-1"]], 16),  # two claims, top
    ],
)
def test_dra_score_matches_upstreams_table(
    claims: list[list[tuple[str, int]]], allocated: list[list[str]], expected: int
) -> None:
    assert claims_score([_prioritized(*c) for c in claims], allocated) == expected


def test_exactly_requests_score_nothing_and_tell_no_nodes_apart() -> None:
    exact = ResourceClaim.model_validate(
        {
            "metadata": {"name": "x"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
        }
    )
    assert claims_score([exact], [["r"]]) == 0
    assert not tells_apart([exact]) and not tells_apart([_prioritized(("r", 1))])
    assert tells_apart([_prioritized(("r", 2))])


def _driver_slice(node_name: str, driver: str) -> ResourceSlice:
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": f"{node_name}-{driver}"},
            "spec": {
                "driver": driver,
                "nodeName": node_name,
                "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "d0"}],
            },
        }
    )


def _driver_class(name: str) -> DeviceClass:
    expression = f'device.driver == "{name}.example.com"'
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}
    )


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("naive", [False, True])
def test_a_pod_goes_where_its_preferred_subrequest_fits(strategy: Strategy, naive: bool) -> None:
    """`a` has only a small device, `b` a big one; the claim prefers big: b scores 8, a 7, normalized 100 and
    87 (weight 2), so b wins where the equal nodes' tie would give a. Preferring small, a wins."""
    nodes = [node("a"), node("b")]
    slices = [_driver_slice("a", "small.example.com"), _driver_slice("b", "big.example.com")]
    classes = [_driver_class("big"), _driver_class("small")]
    placer = _placer(nodes, slices, classes=classes, strategy=strategy, naive=naive)

    def wanting(*order: str) -> tuple[Pod, ResourceClaim]:
        claim = ResourceClaim.model_validate(
            {
                "metadata": {"name": "want", "namespace": "default"},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "r",
                                "firstAvailable": [{"name": c, "deviceClassName": c} for c in order],
                            }
                        ]
                    }
                },
            }
        )
        return pod("p", {}, resourceClaims=[{"name": "c", "resourceClaimName": "want"}]), claim

    p, claim = wanting("big", "small")
    assert placer.place(p, [claim]).node == "b"
    p, claim = wanting("small", "big")
    assert placer.place(p, [claim]).node == "a"
