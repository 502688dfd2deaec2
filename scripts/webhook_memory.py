"""Peak memory of `dra-capacity serve` under concurrent large AdmissionReviews: the figure behind the chart's
webhook memory limit (charts/dra-capacity/values.yaml, webhook.resources).

Runs the real server on 127.0.0.1 with a self-signed CA, sends UPDATE reviews of about 2.8 MB (object and
oldObject near the API server's 3 MiB request limit) at rising concurrency, and prints the process's RSS and
high-water mark. Run: .venv/bin/python scripts/webhook_memory.py
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from certs.authority import generate_self_signed  # noqa: E402
from certs.files import write_bundle  # noqa: E402


def review(size: int) -> bytes:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "big", "annotations": {"x": "a" * size}},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
    }
    request = {
        "uid": "u",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "deviceclasses"},
        "name": "big",
        "operation": "UPDATE",
        "userInfo": {"username": "a"},
        "object": obj,
        "oldObject": obj,
        "dryRun": False,
    }
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


def mib(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return float("nan")


async def drive(port: int, ca: Path, pid: int) -> None:
    ctx = ssl.create_default_context(cafile=str(ca))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=64)) as s:
        for _ in range(300):
            try:
                async with s.get(f"https://127.0.0.1:{port}/readyz") as r:
                    if r.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
        print(f"ready: RSS {mib(pid, 'VmRSS:'):.1f} MiB")
        body = review(1_400_000)
        print(f"review body: {len(body) / 1e6:.1f} MB")
        for concurrency in (1, 8, 16, 32):

            async def one() -> int:
                async with s.post(
                    f"https://127.0.0.1:{port}/validate",
                    data=body,
                    headers={"Content-Type": "application/json"},
                ) as r:
                    await r.read()
                    return r.status

            started = time.monotonic()
            codes = await asyncio.gather(*[one() for _ in range(concurrency * 3)])
            print(
                f"concurrency {concurrency:2d}: HTTP {sorted(set(codes))}, high-water RSS "
                f"{mib(pid, 'VmHWM:'):.1f} MiB ({time.monotonic() - started:.1f} s)"
            )


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tls = Path(tmp)
        write_bundle(tls, generate_self_signed(()))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "dra-capacity"),
                "serve",
                f"--listen=127.0.0.1:{port}",
                f"--tls-dir={tls}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            asyncio.run(drive(port, tls / "ca.crt", proc.pid))
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
