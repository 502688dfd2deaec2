"""What the cluster-aware warnings add to `/validate`, against 2,000 published devices (no HTTP).

    .venv/bin/python bench/cluster_warnings.py [--seconds 2] [--devices 2000] [--http [--duration 10]]

Builds a ClusterView of NVIDIA-shaped devices (250 slices x 8 GPUs: productName, architecture,
driverVersion, uuid; capacity memory and shares), then times `DeviceClassAdmission.validate` on a
capacity-requesting class without a cluster view, with a warm view (selector results cached per expression
and slice generation: the steady state), and the first evaluation against a new view (a slice changed).

`--http` measures the same end to end: it starts the kube-apiserver test double (tests/kubeapi) as a process
seeded with the devices, then runs bench/webhook_bench.py with `serve --kubeconfig` on it, so `/validate`
computes the cluster-aware warnings for every review; the target is the webhook's (>= 70% of the allow-all
baseline's throughput, p99 within 1 ms of it, same run).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resourceapi.api.resource_v1 import ResourceSlice
from resourceapi.gates import FeatureGates
from webhook.clusterview.cluster_view import ClusterView, ViewCache
from webhook.deviceclass.admission import DeviceClassAdmission

DRIVER = "gpu.nvidia.com"
PRODUCT_SELECTOR = 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA")'


def slices(devices: int) -> list[ResourceSlice]:
    out = []
    for n in range(devices // 8):
        out.append(
            ResourceSlice.model_validate(
                {
                    "metadata": {"name": f"node-{n}-gpus", "resourceVersion": str(n + 1)},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": f"node-{n}",
                        "pool": {"name": f"node-{n}", "generation": 1, "resourceSliceCount": 1},
                        "devices": [
                            {
                                "name": f"gpu-{i}",
                                "allowMultipleAllocations": True,
                                "attributes": {
                                    "productName": {"string": "NVIDIA H100 80GB HBM3"},
                                    "architecture": {"string": "Hopper"},
                                    "driverVersion": {"version": "550.54.15"},
                                    "uuid": {"string": f"GPU-{n:04d}{i:04d}-0000-0000-0000-000000000000"},
                                },
                                "capacity": {"memory": {"value": "80Gi"}, "shares": {"value": "4"}},
                            }
                            for i in range(8)
                        ],
                    },
                }
            )
        )
    return out


def request() -> dict[str, Any]:
    return {
        "uid": "bench",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "deviceclasses"},
        "operation": "CREATE",
        "object": {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu-shared"},
            "spec": {
                "selectors": [
                    {"cel": {"expression": f'device.driver == "{DRIVER}"'}},
                    {"cel": {"expression": PRODUCT_SELECTOR}},
                ],
                "extendedResourceName": "nvidia.com/gpu.shared",
                "extendedResourceCapacityRequests": {"requests": {"shares": "1"}},
            },
        },
    }


def per_call(fn: Callable[[], Any], seconds: float) -> float:
    for _ in range(20):
        fn()
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(50):
            fn()
        n += 50
    return elapsed / n


ROOT = Path(__file__).resolve().parents[1]


def http(devices: int, duration: int) -> int:
    """End to end through `serve --kubeconfig` against the API double holding `devices` devices."""
    with tempfile.TemporaryDirectory(prefix="cluster-warnings-") as tmp:
        seed = Path(tmp) / "slices.json"
        items = [s.to_api() for s in slices(devices)]
        for item in items:  # the double assigns resourceVersions itself
            item["metadata"].pop("resourceVersion", None)
        seed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        review = Path(tmp) / "review.json"
        review.write_text(
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request()})
        )
        # binder_bench imported here, not above: the in-process timings run without the binder's modules
        from binder_bench import Double

        double = Double(Path(tmp), seeds=[seed], cpu=None)
        kubeconfig = double.kubeconfig
        try:
            print(f"API double seeded with {devices} devices; serve reads it with --kubeconfig")
            bench = [str(ROOT / "bench" / "webhook_bench.py"), "--duration", str(duration), "--fixture"]
            return subprocess.call(
                [sys.executable, *bench, str(review), f"--serve-arg=--kubeconfig={kubeconfig}"]
            )
        finally:
            double.stop(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--devices", type=int, default=2000)
    parser.add_argument("--http", action="store_true", help="end to end over HTTPS (see the module doc)")
    parser.add_argument("--duration", type=int, default=10, help="--http: seconds per measured run")
    args = parser.parse_args()
    if args.http:
        raise SystemExit(http(args.devices, args.duration))
    gates = FeatureGates.defaults()
    published = slices(args.devices)
    cache = ViewCache()
    view = ClusterView(published, [], cache=cache)
    req = request()
    plain = DeviceClassAdmission(gates)
    warned = DeviceClassAdmission(gates, cluster=lambda: view)
    assert "warnings" not in warned.validate(req).response, "the bench class must be sound"
    base = per_call(lambda: plain.validate(req), args.seconds)
    warm = per_call(lambda: warned.validate(req), args.seconds)
    start = time.perf_counter()
    ClusterView(published, [], generation=2)
    build = time.perf_counter() - start
    fresh = ClusterView(published, [], generation=2)
    first = DeviceClassAdmission(gates, cluster=lambda: fresh)
    start = time.perf_counter()
    first.validate(req)
    cold_eval = time.perf_counter() - start
    republished = published[0].model_copy(deep=True)
    republished.metadata.resource_version = "republished"
    start = time.perf_counter()
    changed = ClusterView([republished, *published[1:]], [], generation=3, cache=cache)
    rebuild = time.perf_counter() - start
    after = DeviceClassAdmission(gates, cluster=lambda: changed)
    start = time.perf_counter()
    after.validate(req)
    one_slice_eval = time.perf_counter() - start
    print(f"devices published                  {len(view.devices):9d}")
    print(f"validate, no cluster view          {base * 1e6:9.1f} us/call")
    print(f"validate, warm cluster view        {warm * 1e6:9.1f} us/call   ({warm / base:.2f}x)")
    print(f"first validate, all-new view       {cold_eval * 1e3:9.2f} ms       (2 selectors x all devices)")
    print(f"building the view (informer side)  {build * 1e3:9.2f} ms       (off the admission path)")
    print(f"one slice republished: rebuild     {rebuild * 1e3:9.2f} ms       (other slices' records reused)")
    print(
        f"one slice republished: validate    {one_slice_eval * 1e3:9.2f} ms       (its 8 devices evaluated)"
    )


if __name__ == "__main__":
    main()
