"""`/mutate-pods` (pod routing) against the allow-all baseline in the same server, over TLS, same run.

The server is `dra-capacity serve --kubeconfig ...` as bench/webhook_baseline.py runs it (its `/bench/allow`
admits everything unjudged: the baseline), its routing cache fed by the kube-apiserver test double (a process)
holding a DeviceClass with capacity requests (annotation carrier) and an opted-in namespace, so every review
takes the routed path (resource lookup, opt-in check, JSONPatch). Server and load generator are pinned to
different cores; load: wrk if installed, else an aiohttp client (see webhook_bench.py).
Targets: >= 80% of the baseline's throughput, p99 within 1 ms of the baseline's.

    .venv/bin/python bench/mutate_pods_bench.py [--duration 10] [--connections 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from binder_bench import Double  # noqa: E402
from support.gpu_cluster import device_class, pod  # noqa: E402
from webhook_bench import (  # noqa: E402
    BASELINE,  # allow-all, mounted by bench/webhook_baseline.py only
    Load,
    free_port,
    pinned,
    print_table,
    wait_ready,
)

from kubeio.kube import DEVICE_CLASSES, NAMESPACES, Kube, load_configuration  # noqa: E402

TARGET_RATIO = 0.80
TARGET_P99_DELTA_MS = 1.0


def review() -> dict[str, object]:
    obj = pod("web-0", "inference", scheduler=None)
    obj["metadata"]["generateName"] = "web-"
    obj["spec"]["containers"][0]["resources"]["limits"].update({"cpu": "2", "memory": "8Gi"})
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "bench-1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "inference",
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
        },
    }


def start_double(tmp: Path) -> Double:
    """The API double holding the KEP-6406 DeviceClass (annotation carrier) and the opted-in namespace."""
    double = Double(tmp, cpu=None)
    kube = Kube(load_configuration(str(double.kubeconfig)))
    kube.request("POST", DEVICE_CLASSES.path(), body=device_class(carrier="annotation"))
    namespace = {"metadata": {"name": "inference", "labels": {"dra-capacity.io/pod-routing": "enabled"}}}
    kube.request("POST", NAMESPACES.path(), body={"apiVersion": "v1", "kind": "Namespace", **namespace})
    kube.close()
    return double


def wait_routed(url: str, cafile: Path, body: bytes, timeout: float = 30) -> None:
    ctx = ssl.create_default_context(cafile=str(cafile))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=ctx, timeout=2) as resp:
            if "patch" in json.loads(resp.read())["response"]:
                return
        time.sleep(0.1)
    raise SystemExit("the routing cache never warmed up")


def handler_cost(n: int = 20000) -> float:
    """Microseconds per review of the routing logic alone (no HTTP, no TLS), on a warm cache."""
    sys.path.insert(0, str(ROOT))
    from webhook.podrouting.pod_routing import PodRouter
    from webhook.podrouting.routing_cache import RoutingCache

    cache = RoutingCache()
    cache.set_classes([device_class(carrier="annotation")])
    cache.set_namespaces(
        [{"metadata": {"name": "inference", "labels": {"dra-capacity.io/pod-routing": "enabled"}}}]
    )
    router = PodRouter(cache)
    request = review()["request"]
    assert isinstance(request, dict)
    assert "patch" in router.mutate(request).response
    started = time.perf_counter()
    for _ in range(n):
        router.mutate(request)
    return (time.perf_counter() - started) / n * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--python-client", action="store_true")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu, client_cpu = (cpus[0], cpus[1]) if len(cpus) >= 2 else (None, None)
    use_wrk = shutil.which("wrk") is not None and not args.python_client
    body = json.dumps(review()).encode()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mutate-pods-bench-") as tmp_name:
        tmp = Path(tmp_name)
        double = start_double(tmp)
        kubeconfig = double.kubeconfig
        tls_dir = tmp / "tls"
        port = free_port()
        base = f"https://127.0.0.1:{port}"
        baseline_server = str(ROOT / "bench" / "webhook_baseline.py")
        argv = [sys.executable, baseline_server, "--self-signed", "--listen", f"127.0.0.1:{port}"]
        argv += ["--tls-dir", str(tls_dir), "--kubeconfig", str(kubeconfig)]
        proc = subprocess.Popen(pinned(server_cpu, argv), stderr=subprocess.DEVNULL)
        try:
            wait_ready(base, tls_dir / "ca.crt", proc)
            wait_routed(base + "/mutate-pods", tls_dir / "ca.crt", body)
            load = Load(proc, base, tls_dir / "ca.crt", body, args.connections, use_wrk, client_cpu)
            runs = load.rounds(tmp, [BASELINE, "/mutate-pods"], args.duration, args.rounds)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            double.stop(30)
    best = {path: max(results, key=lambda r: r.rps) for path, results in runs.items()}
    baseline, routed = best[BASELINE], best["/mutate-pods"]
    ratio = routed.rps / baseline.rps
    delta = routed.p99_ms - baseline.p99_ms
    tool = "wrk" if use_wrk else "python aiohttp client"
    print(f"/mutate-pods benchmark: TLS, {args.connections} keep-alive connections, {tool}")
    print(f"load average (1 min) before/after: {load_before:.2f}/{os.getloadavg()[0]:.2f}")
    print_table([("baseline (allow-all)", baseline), ("/mutate-pods (routed)", routed)], runs, args.rounds)
    verdict = "PASS" if ratio >= TARGET_RATIO else "FAIL"
    print(f"throughput ratio mutate-pods/baseline: {ratio:.2f} (target >= {TARGET_RATIO:.2f}) {verdict}")
    verdict = "PASS" if delta <= TARGET_P99_DELTA_MS else "FAIL"
    print(f"p99 mutate-pods - baseline: {delta:+.2f} ms (target <= {TARGET_P99_DELTA_MS:.0f} ms) {verdict}")
    print(f"routing logic alone: {handler_cost():.1f} us per review (what /mutate-pods adds to allow-all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
