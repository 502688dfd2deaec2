"""Hostile clients against `dra-capacity serve`: what each attack costs legitimate traffic, probes and memory.

Starts the real server (`dra-capacity serve --self-signed`, its own process, so its RSS is its own), measures
quiet `/validate` latency with a realistic DeviceClass, then runs each attack while a prober polls `/healthz`
and a legitimate client keeps POSTing the realistic review. For each attack it prints the attack's HTTP status
and answer size, the worst `/healthz` latency, legitimate `/validate` latency under attack next to the quiet
latency of the same run, and memory before, at peak, and after (with the seconds it took to come back within
20% of its value before the attack, waiting at most `--settle` seconds). Memory is the PSS of the server and
its worker processes, summed (what the pod's memory limit counts; "RSS" below).

    .venv/bin/python bench/hostile.py [--settle 60] [--only labels_100k,idle_500]

tests/webhook/test_hostile.py runs the same attacks with generous assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "bench" / "fixtures" / "deviceclass-realistic.json"
JSON_HEADERS = {"Content-Type": "application/json"}
# The server's costliest configuration for these attacks: every finding on native fields becomes a cause of a
# denial (with the default `--native-rules warn`, they become a few capped warnings instead).
WORST_CASE_FLAGS = ("--native-rules", "deny")
DEADLINE = "?timeout=10s"


# ---------------------------------------------------------------------------------------------------------
# Bodies


def review(obj: dict[str, Any], uid: str = "hostile-1", dry_run: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"},
            "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "deviceclasses"},
            "name": obj.get("metadata", {}).get("name", ""),
            "operation": "CREATE",
            "userInfo": {"username": "hostile"},
            "object": obj,
            "oldObject": None,
            "dryRun": dry_run,
        },
    }


def device_class(name: str = "hostile", **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
    }
    for key, value in extra.items():
        if key in ("labels", "annotations", "generateName"):
            obj["metadata"][key] = value
        else:
            obj["spec"][key] = value
    return obj


def labels_body(count: int = 100_000) -> bytes:
    """A DeviceClass with `count` invalid labels (keys may not start with '-'): about 1.9 MB."""
    labels = {f"-bad-{i:06d}": "x" for i in range(count)}
    return json.dumps(review(device_class(labels=labels))).encode()


def annotation_carrier_body(count: int = 20_000) -> bytes:
    """The KEP-6406 annotation carrier with `count` invalid capacity names."""
    requests = {f"-bad-{i:05d}": "0" for i in range(count)}
    annotation = json.dumps({"requests": requests})
    obj = device_class(annotations={"dra-capacity.io/extended-resource-capacity-requests": annotation})
    return json.dumps(review(obj)).encode()


def selector_expression(nonce: str, size: int = 10 * 1024) -> str:
    """A valid CEL selector just under `size` bytes, unique by `nonce` (so no cache ever holds it)."""
    out, i = "", 0
    while True:
        term = f'device.attributes["gpu.example.com"].model == "{nonce}-{i:05d}"'
        if len(out) + len(term) + 4 > size:
            return out
        out = term if not out else f"{out} || {term}"
        i += 1


def selectors_body(nonce: str, count: int = 32) -> bytes:
    """A dry-run review with `count` unique, valid 10 KiB selectors."""
    selectors = [{"cel": {"expression": selector_expression(f"{nonce}s{k}")}} for k in range(count)]
    return json.dumps(review(device_class(selectors=selectors), uid=f"sel-{nonce}", dry_run=True)).encode()


def surrogate_bodies() -> dict[str, bytes]:
    """Lone UTF-16 surrogates (json.dumps writes them as `\\ud800`), which kube-apiserver never sends."""
    lone = "\ud800"
    return {
        "cel": json.dumps(
            review(device_class(selectors=[{"cel": {"expression": f'device.driver == "{lone}"'}}]))
        ).encode(),
        "label value": json.dumps(review(device_class(labels={"a": lone}))).encode(),
        "generateName": json.dumps(review(device_class(name="", generateName=f"x{lone}-"))).encode(),
    }


# ---------------------------------------------------------------------------------------------------------
# The server under test


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out.extend(int(c) for c in fh.read().split())
    return out


def rss_bytes(pid: int) -> int:
    """Memory of `pid` and all its descendants (the server's worker processes): the sum of their PSS
    (proportional set size, /proc/PID/smaps_rollup), so pages they share are counted once, as the pod's
    memory limit counts them. Where PSS is not available, the sum of their RSS (an upper bound)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += _pss(current)
        todo.extend(_children(current))
    return total


def _pss(pid: int) -> int:
    for path, key in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        with contextlib.suppress(OSError), open(path) as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    return 0


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    cafile: Path
    host: str
    port: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss(self) -> int:
        return rss_bytes(self.pid)

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cafile))


@contextlib.contextmanager
def serve(extra_args: tuple[str, ...] = (), log: Path | None = None) -> Iterator[Server]:
    """`dra-capacity serve --self-signed` on a free loopback port, ready; stopped with SIGTERM afterwards."""
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        tls_dir = Path(tmp) / "tls"
        port = free_port()
        cli = str(Path(sys.executable).parent / "dra-capacity")
        argv = [cli, "serve", "--self-signed", "--listen", f"127.0.0.1:{port}", "--tls-dir", str(tls_dir)]
        stderr = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115
        proc = subprocess.Popen([*argv, *extra_args], stderr=stderr)
        server = Server(proc, f"https://127.0.0.1:{port}", tls_dir / "ca.crt", "127.0.0.1", port)
        try:
            _wait_ready(server)
            yield server
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if log is not None:
                stderr.close()  # type: ignore[union-attr]


def _wait_ready(server: Server, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"server exited with {server.proc.returncode} before becoming ready")
        try:
            if server.cafile.exists():
                ctx = server.ssl_context()
                with urllib.request.urlopen(server.url + "/readyz", context=ctx, timeout=2) as resp:
                    if resp.status == 200:
                        return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("server never became ready")


# ---------------------------------------------------------------------------------------------------------
# Watchers: /healthz prober, legitimate traffic, RSS sampler


@dataclass
class Watch:
    healthz_ms: list[float] = field(default_factory=list)
    healthz_failures: int = 0
    legit_ms: list[float] = field(default_factory=list)
    legit_failures: int = 0
    rss_peak: int = 0

    @property
    def healthz_max_ms(self) -> float:
        return max(self.healthz_ms, default=float("nan"))


def _session(server: Server, limit: int = 4) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=server.ssl_context(), limit=limit))


async def _prober(
    server: Server, watch: Watch, stop: asyncio.Event, interval: float, timeout_s: float = 1.0
) -> None:
    """A kubelet-like probe: one GET /healthz every `interval`, 1 s timeout, fresh connection each time."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    while not stop.is_set():
        async with _session(server) as http:
            start = time.perf_counter()
            try:
                async with http.get(server.url + "/healthz", timeout=timeout) as resp:
                    await resp.read()
                    if resp.status != 200:
                        watch.healthz_failures += 1
                watch.healthz_ms.append((time.perf_counter() - start) * 1000)
            except (aiohttp.ClientError, TimeoutError):
                watch.healthz_failures += 1
                watch.healthz_ms.append((time.perf_counter() - start) * 1000)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)


async def _legit(server: Server, body: bytes, watch: Watch, stop: asyncio.Event) -> None:
    """The apiserver's everyday traffic: one realistic review at a time over a keep-alive connection."""
    async with _session(server, limit=1) as http:
        while not stop.is_set():
            start = time.perf_counter()
            try:
                async with http.post(
                    server.url + "/validate" + DEADLINE, data=body, headers=JSON_HEADERS
                ) as r:
                    answer = await r.read()
                    ok = r.status == 200 and json.loads(answer)["response"]["allowed"] is True
            except (aiohttp.ClientError, TimeoutError, ValueError, KeyError):
                ok = False
            watch.legit_ms.append((time.perf_counter() - start) * 1000)
            if not ok:
                watch.legit_failures += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.02)


async def _rss_sampler(server: Server, watch: Watch, stop: asyncio.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(OSError):
            watch.rss_peak = max(watch.rss_peak, server.rss())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.05)


@contextlib.asynccontextmanager
async def watching(
    server: Server, legit_body: bytes | None = None, probe_interval: float = 0.1, probe_timeout: float = 1.0
) -> AsyncIterator[Watch]:
    watch = Watch(rss_peak=server.rss())
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(_prober(server, watch, stop, probe_interval, probe_timeout)),
        asyncio.create_task(_rss_sampler(server, watch, stop)),
    ]
    if legit_body is not None:
        tasks.append(asyncio.create_task(_legit(server, legit_body, watch, stop)))
    try:
        await asyncio.sleep(0.05)
        yield watch
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)


# ---------------------------------------------------------------------------------------------------------
# Attacks: each returns what the attacker got back


@dataclass
class Hit:
    status: int
    size: int
    body: bytes
    content_type: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body)


async def post(
    server: Server,
    body: bytes,
    path: str = "/validate" + DEADLINE,
    headers: dict[str, str] | None = None,
    timeout: float = 35.0,
) -> Hit:
    async with (
        _session(server, limit=1) as http,
        http.post(
            server.url + path,
            data=body,
            headers=headers or JSON_HEADERS,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as resp,
    ):
        answer = await resp.read()
        content_type = resp.headers.get("Content-Type", "")
        return Hit(resp.status, len(answer), answer, content_type, dict(resp.headers))


# Bodies are built before an attack starts (`prepare`): building them while the prober runs in this process
# would delay the prober and be counted against the server.


def prepare_labels() -> list[bytes]:
    return [labels_body()]


def prepare_annotation_carrier() -> list[bytes]:
    return [annotation_carrier_body()]


def prepare_selectors(reviews: int = 1) -> list[bytes]:
    nonce = f"{os.getpid()}x{time.monotonic_ns()}"
    return [selectors_body(f"{nonce}r{r}") for r in range(reviews)]


def prepare_encodings() -> list[bytes]:
    return [b"\x1f\x8b\x08garbage-not-compressed" * 10]


def prepare_surrogates() -> list[bytes]:
    return list(surrogate_bodies().values())


def prepare_nothing() -> list[bytes]:
    return []


async def attack_bodies(server: Server, bodies: list[bytes], path: str = "/validate" + DEADLINE) -> list[Hit]:
    """POST every body at once (the attacker does not wait for one answer before sending the next)."""
    return list(await asyncio.gather(*(post(server, b, path) for b in bodies)))


async def attack_idle(server: Server, count: int = 500, hold: float = 3.0, tls: bool = True) -> list[Hit]:
    """`count` connections that never send a request (TLS handshake done when `tls`), held `hold` seconds.
    The Hit's `size` is the RSS growth per connection while they were all open."""
    before = server.rss()
    writers: list[asyncio.StreamWriter] = []
    ctx = server.ssl_context() if tls else None
    for _ in range(count):
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection(server.host, server.port, ssl=ctx)
            writers.append(writer)
    await asyncio.sleep(hold)
    during = server.rss()
    for writer in writers:
        writer.close()
    for writer in writers:
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    per = (during - before) // max(len(writers), 1)
    return [Hit(200 if len(writers) == count else 0, per, b"")]


async def attack_encodings(server: Server, bodies: list[bytes]) -> list[Hit]:
    hits = []
    for coding in ("gzip", "br", "zstd", "deflate", "x-unknown"):
        headers = {**JSON_HEADERS, "Content-Encoding": coding}
        hits.extend([await post(server, body, headers=headers) for body in bodies])
    return hits


async def attack_idle_tls(server: Server, _: list[bytes]) -> list[Hit]:
    return await attack_idle(server)


async def attack_idle_tcp(server: Server, _: list[bytes]) -> list[Hit]:
    return await attack_idle(server, tls=False)


@dataclass(frozen=True)
class Attack:
    label: str
    prepare: Callable[[], list[bytes]]
    run: Callable[[Server, list[bytes]], Awaitable[list[Hit]]]


ATTACKS: dict[str, Attack] = {
    "labels_100k": Attack("100,000 invalid labels (1.9 MB)", prepare_labels, attack_bodies),
    "annotations_20k": Attack(
        "annotation carrier, 20,000 entries", prepare_annotation_carrier, attack_bodies
    ),
    "selectors_8x32": Attack(
        "8 dry-run reviews x 32 unique 10 KiB selectors", lambda: prepare_selectors(8), attack_bodies
    ),
    "idle_500": Attack("500 idle TLS connections", prepare_nothing, attack_idle_tls),
    "idle_500_tcp": Attack("500 idle bare TCP connections", prepare_nothing, attack_idle_tcp),
    "encodings": Attack("gzip/br/zstd/deflate/unknown garbage bodies", prepare_encodings, attack_encodings),
    "surrogates": Attack(
        "lone surrogate in CEL, label value, generateName", prepare_surrogates, attack_bodies
    ),
}


# ---------------------------------------------------------------------------------------------------------
# The benchmark


async def _quiet(server: Server, body: bytes, seconds: float) -> list[float]:
    watch = Watch()
    stop = asyncio.Event()
    task = asyncio.create_task(_legit(server, body, watch, stop))
    await asyncio.sleep(seconds)
    stop.set()
    await task
    return watch.legit_ms


async def _settle(server: Server, before: int, limit: float) -> tuple[int, float | None]:
    """Wait until RSS is within 20% of `before` (at most `limit` s); return RSS then and the seconds taken."""
    start = time.monotonic()
    while True:
        rss = server.rss()
        if rss <= before * 1.2:
            return rss, time.monotonic() - start
        if time.monotonic() - start >= limit:
            return rss, None
        await asyncio.sleep(0.5)


def _p(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)]


async def bench(names: list[str], settle: float, flags: tuple[str, ...]) -> int:
    legit = FIXTURE.read_bytes()
    load = os.getloadavg()[0]
    with serve(flags) as server:
        start_memory = server.rss()
        quiet = await _quiet(server, legit, 3.0)
        print("hostile-client benchmark: dra-capacity serve on loopback, TLS, 10 s caller deadline")
        print(f"serve flags: {' '.join(flags) or '(defaults)'}")
        print(f"load average (1 min) at start: {load:.2f} (a busy machine skews latencies; read the ratios)")
        print(
            f"quiet /validate latency (realistic DeviceClass, same run): p50 {_p(quiet, 0.5):.1f} ms, "
            f"p99 {_p(quiet, 0.99):.1f} ms, max {max(quiet):.1f} ms"
        )
        q50 = _p(quiet, 0.5)
        head = (
            f"{'attack':<16}{'status':>12}{'answer B':>10}{'healthz max':>12}{'legit p50':>10}"
            f"{'x quiet':>8}{'legit max':>10}{'fail':>5}{'PSS MB before/peak/after':>26}{'settle s':>9}"
        )
        print(head)
        for name in names:
            attack = ATTACKS[name]
            bodies = attack.prepare()
            before = server.rss()
            async with watching(server, legit) as watch:
                hits = await attack.run(server, bodies)
                await asyncio.sleep(0.3)
            after, took = await _settle(server, before, settle)
            statuses = ",".join(sorted({str(h.status) for h in hits}))
            size = max(h.size for h in hits)
            l50 = _p(watch.legit_ms, 0.5)
            print(
                f"{name:<16}{statuses:>12}{size:>10}{watch.healthz_max_ms:>10.1f}ms{l50:>8.1f}ms"
                f"{l50 / q50:>7.1f}x{max(watch.legit_ms, default=float('nan')):>8.0f}ms"
                f"{watch.legit_failures + watch.healthz_failures:>5}"
                f"{before / 2**20:>10.0f}/{watch.rss_peak / 2**20:.0f}/{after / 2**20:.0f}"
                f"{took if took is not None else float('nan'):>9.1f}"
            )
            print(f"    {attack.label}")
        await asyncio.sleep(15.0)
        print(
            f"memory at start {start_memory / 2**20:.0f} MB, after all attacks and 15 s idle "
            f"{server.rss() / 2**20:.0f} MB (compiled CEL selectors stay cached)"
        )
        print("answer B: the largest answer body (for idle_*: RSS bytes per open connection)")
        print("settle s: seconds until RSS was back within 20% of 'before' (nan: not within --settle)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=60.0, help="seconds to wait for RSS to come back")
    parser.add_argument("--only", default="", help="comma-separated attack names (default: all)")
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=None,
        metavar="ARG",
        help=f"a `serve` flag, repeatable (default: {' '.join(WORST_CASE_FLAGS)}, the costliest here)",
    )
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(ATTACKS)
    unknown = [n for n in names if n not in ATTACKS]
    if unknown:
        parser.error(f"unknown attacks {unknown}; known: {', '.join(ATTACKS)}")
    flags = tuple(args.serve_arg) if args.serve_arg is not None else WORST_CASE_FLAGS
    return asyncio.run(bench(names, args.settle, flags))


if __name__ == "__main__":
    sys.exit(main())
