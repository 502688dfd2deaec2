"""DynamicResources' PreBind wait for device binding conditions in the binder, against the kube-apiserver
test double (v1.38.0-beta.0 `dynamicresources.go` PreBind, binder/binding_conditions.py): on 1.38 a device
with `bindingConditions` is allocated, the claim is written with `allocationTimestamp`, and the pod is bound
only once the driver reports every binding condition True; a True failure condition or the timeout deletes
the claim (Unreserve) and the pod is retried. 1.36 and 1.37 default the gates on too; with
DRADeviceBindingConditions off (the negative control) such a device is never allocated. The double runs no
DRA driver: `driver_reports` (a stand-in labelled as one) writes the claim's `status.devices` as a driver's
controller would."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from support.binder_harness import FAST, bound, events, extended_claims, kube_for, seed_cluster, wait_for
from support.gpu_cluster import DRIVER, pod

from binder.binding_conditions import REASON_PENDING
from binder.controller import Binder, BinderOptions
from localcluster.objects import device_conditions
from resourceapi.gates import FeatureGates

READY = "dra.example.com/attached"
FAILED = "dra.example.com/attach-failed"
NODE = "gpu-node-1"


@contextlib.contextmanager
def binder_on(api: Any, release: str, gates: str = "", **options: Any) -> Iterator[Binder]:
    """An in-process binder placing by `release`'s gates (with `gates`, `--feature-gates` syntax, over them),
    the double serving that release."""
    api.serve_versions({"1.38": "v1.38.0-beta.0", "1.37": "v1.37.2", "1.36": "v1.36.3"}[release])
    kube = kube_for(api)
    binder = Binder(kube, FeatureGates.parse(gates, release), options=BinderOptions(**{**FAST, **options}))
    binder.start()
    assert binder.wait_synced(20), "informers did not sync"
    try:
        yield binder
    finally:
        binder.stop()
        kube.close()


def _seed(api: Any) -> None:
    """One node whose one GPU has a binding condition and a binding failure condition, and pod `web-0`."""
    seed_cluster(api, nodes=1)
    [slc] = [s for s in api.list("resourceslices", namespace="") if s["spec"].get("nodeName") == NODE]
    for dev in slc["spec"]["devices"]:
        dev["bindingConditions"] = [READY]
        dev["bindingFailureConditions"] = [FAILED]
    api.update(slc)
    api.seed(pod("web-0"))


def driver_reports(api: Any, claim: dict[str, Any], kind: str, reason: str = "Attached") -> None:
    """Stand-in for the device's DRA driver (none runs against the double): condition `kind` True on every
    allocated device, in the claim's `status.devices`."""
    current = api.get("resourceclaims", claim["metadata"]["name"])
    current["status"]["devices"] = device_conditions(current, kind, reason, NODE)
    api.update(current, subresource="status")


def _bc_metrics(binder: Binder, status: str) -> tuple[float | None, float | None]:
    """scheduler_dra_bindingconditions_allocations_total and the wait histogram's count for `status`."""
    labels = {"profile": "dra-capacity", "driver": DRIVER, "status": status}
    registry = binder.metrics.registry
    return (
        registry.get_sample_value("scheduler_dra_bindingconditions_allocations_total", labels),
        registry.get_sample_value("scheduler_dra_bindingconditions_wait_duration_seconds_count", labels),
    )


def _allocated_claim(api: Any) -> dict[str, Any]:
    def one() -> dict[str, Any] | None:
        got = [c for c in extended_claims(api) if (c.get("status") or {}).get("allocation")]
        return got[0] if len(got) == 1 else None

    return wait_for("claim allocated", one)  # type: ignore[no-any-return]


@pytest.mark.parametrize("release", ["1.36", "1.37", "1.38"])
def test_the_pod_is_bound_once_the_driver_reports_the_binding_conditions(kube_api: Any, release: str) -> None:
    _seed(kube_api)
    with binder_on(kube_api, release) as binder:
        claim = _allocated_claim(kube_api)
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["bindingConditions"]) == (DRIVER, [READY])
        assert result["bindingFailureConditions"] == [FAILED]
        assert claim["status"]["allocation"]["allocationTimestamp"]
        wait_for("web-0 waiting", lambda: binder.conditions.pending() == {("default", "web-0")})
        [note] = wait_for("pending event", lambda: events(kube_api, REASON_PENDING))
        assert note["type"] == "Normal"
        assert note["message"] == f"waiting for binding conditions for device on node {NODE}"
        assert bound(kube_api) == []
        driver_reports(kube_api, claim, READY)
        [placed] = wait_for("web-0 bound", lambda: bound(kube_api))
        assert placed["spec"]["nodeName"] == NODE
        assert binder.conditions.pending() == set()
        assert _bc_metrics(binder, "success") == (1.0, 1.0)
        assert _bc_metrics(binder, "failure") == (None, None)


def test_a_failure_condition_deletes_the_claim_and_retries_the_pod(kube_api: Any) -> None:
    _seed(kube_api)
    with binder_on(kube_api, "1.38") as binder:
        first = _allocated_claim(kube_api)
        wait_for("web-0 waiting", lambda: binder.conditions.pending() == {("default", "web-0")})
        driver_reports(kube_api, first, FAILED, reason="NoFabric")
        name = first["metadata"]["name"]

        def failed() -> list[dict[str, Any]]:
            return [
                e for e in events(kube_api, "FailedScheduling") if "device binding failed" in e["message"]
            ]

        [event] = wait_for("failure reported", failed)
        assert (
            f'running PreBind plugin "DynamicResources": device binding failed: claim={name}, '
            f'reason=NoFabric, message="{FAILED} on {NODE}"'
        ) in event["message"]
        # the failed claim is gone (its allocation with it); the retry allocates a new one and waits again
        second = wait_for(
            "a new claim",
            lambda: [
                c
                for c in extended_claims(kube_api)
                if c["metadata"]["name"] != name and (c.get("status") or {}).get("allocation")
            ],
        )[0]
        wait_for("old claim deleted", lambda: kube_api.get("resourceclaims", name) is None)
        assert _bc_metrics(binder, "failure") == (1.0, 1.0)
        wait_for("web-0 waiting again", lambda: binder.conditions.pending() == {("default", "web-0")})
        assert bound(kube_api) == []
        driver_reports(kube_api, second, READY)
        [placed] = wait_for("web-0 bound", lambda: bound(kube_api))
        assert (
            placed["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == second["metadata"]["name"]
        )


def test_the_wait_times_out_and_releases_the_share(kube_api: Any) -> None:
    _seed(kube_api)
    with binder_on(kube_api, "1.38", binding_timeout_seconds=0.5) as binder:
        binder.conditions.waiter.interval = 0.1
        first = _allocated_claim(kube_api)

        def timed_out() -> list[dict[str, Any]]:
            return [
                e for e in events(kube_api, "FailedScheduling") if "device binding timeout" in e["message"]
            ]

        # A loaded machine can time out the retried pod too before this looks: the first report is judged.
        event = wait_for("timeout reported", timed_out)[0]
        assert 'running PreBind plugin "DynamicResources": device binding timeout' in event["message"]
        allocations, waits = _bc_metrics(binder, "timeout")
        assert allocations and waits and allocations == waits >= 1
        assert _bc_metrics(binder, "success") == (None, None)
        wait_for(
            "first claim deleted", lambda: kube_api.get("resourceclaims", first["metadata"]["name"]) is None
        )
        assert bound(kube_api) == []


@pytest.mark.parametrize("release", ["1.36", "1.37", "1.38"])
def test_with_binding_conditions_off_such_a_device_is_never_allocated(kube_api: Any, release: str) -> None:
    """The negative control: `--feature-gates DRADeviceBindingConditions=false` (on 1.38 against its lock, a
    warning) turns DeviceBindingAndStatus off, so the device is skipped and nothing waits."""
    _seed(kube_api)
    with binder_on(kube_api, release, "DRADeviceBindingConditions=false") as binder:
        [event] = wait_for("unschedulable", lambda: events(kube_api, "FailedScheduling"))
        assert event["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims.\n")
        assert (
            "every device on this node has binding conditions (DRADeviceBindingConditions off)"
            in (event["message"])
        )
        assert extended_claims(kube_api) == []
        assert binder.conditions.pending() == set()
        assert bound(kube_api) == []


def test_a_restarted_binder_waits_for_the_conditions_of_the_claim_it_finds(kube_api: Any) -> None:
    _seed(kube_api)
    with binder_on(kube_api, "1.38") as binder:
        claim = _allocated_claim(kube_api)
        wait_for("web-0 waiting", lambda: binder.conditions.pending() == {("default", "web-0")})
    with binder_on(kube_api, "1.38") as binder:
        wait_for("web-0 waiting again", lambda: binder.conditions.pending() == {("default", "web-0")})
        assert bound(kube_api) == []
        driver_reports(kube_api, claim, READY)
        [placed] = wait_for("web-0 bound", lambda: bound(kube_api))
        assert (
            placed["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == claim["metadata"]["name"]
        )
