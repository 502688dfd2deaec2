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
import random
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
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
# Where the connection attacks come from (`--attacker-source`, `--attacker-sources`): other loopback
# addresses, so per-source fairness can tell them from the legitimate client on 127.0.0.1. Empty: the
# system's choice (127.0.0.1), as before the source dimension.
ATTACKER_SOURCES: list[str] = []
# attack_idle's spread when no attacker source is set: 500 connections from one address would only measure
# the per-source share, not what 500 open connections cost.
IDLE_SOURCES = [f"127.0.2.{i}" for i in range(1, 9)]


def attacker_addr(i: int, spread: list[str] | None = None) -> tuple[str, int] | None:
    """The local address of the attack's `i`-th connection (round-robin over the attacker sources)."""
    sources = ATTACKER_SOURCES or spread or []
    return (sources[i % len(sources)], 0) if sources else None


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
    health_port: int = 0

    @property
    def health_url(self) -> str:
        """The plain-HTTP health listener (`--health-listen`), which the chart's kubelet probes use."""
        return f"http://{self.host}:{self.health_port}"

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
        port, health = free_port(), free_port()
        cli = str(Path(sys.executable).parent / "dra-capacity")
        argv = [cli, "serve", "--self-signed", "--listen", f"127.0.0.1:{port}", "--tls-dir", str(tls_dir)]
        argv += ["--health-listen", f"127.0.0.1:{health}"]
        stderr = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115
        proc = subprocess.Popen([*argv, *extra_args], stderr=stderr)
        server = Server(proc, f"https://127.0.0.1:{port}", tls_dir / "ca.crt", "127.0.0.1", port, health)
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
                with urllib.request.urlopen(server.health_url + "/readyz", timeout=2) as resp:
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
    legit_busy: int = 0  # 429s among them
    rss_peak: int = 0

    @property
    def healthz_max_ms(self) -> float:
        return max(self.healthz_ms, default=float("nan"))


def _session(server: Server, limit: int = 4) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=server.ssl_context(), limit=limit))


# The prober runs in a process of its own: the attack's own work in this process (encrypting 19 MB bodies,
# say) must not be counted against the server's probes.
PROBER = r"""
import select, sys, time, urllib.request
url, interval, timeout = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
while True:
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            resp.read()
            ok = resp.status == 200
    except Exception:
        ok = False
    print(int(ok), round((time.perf_counter() - start) * 1000, 2), flush=True)
    if select.select([sys.stdin], [], [], interval)[0]:
        break
"""


async def _prober(
    server: Server, watch: Watch, stop: asyncio.Event, interval: float, timeout_s: float = 1.0
) -> None:
    """A kubelet-like probe of the health listener: one GET /healthz every `interval`, `timeout_s` timeout,
    a fresh connection each time, from a separate process."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PROBER,
        server.health_url + "/healthz",
        str(interval),
        str(timeout_s),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    await stop.wait()
    proc.stdin.write(b"stop\n")
    proc.stdin.close()
    out = await proc.stdout.read()
    await proc.wait()
    for line in out.decode().splitlines():
        ok, ms = line.split()
        watch.healthz_ms.append(float(ms))
        watch.healthz_failures += ok != "1"


async def _legit(
    server: Server,
    body: bytes,
    watch: Watch,
    stop: asyncio.Event,
    http: aiohttp.ClientSession | None = None,
) -> None:
    """The apiserver's everyday traffic: one realistic review at a time over a keep-alive connection
    (`http`'s, kept from window to window, or a session of its own)."""
    async with contextlib.AsyncExitStack() as stack:
        if http is None:
            http = await stack.enter_async_context(_session(server, limit=1))
        while not stop.is_set():
            start = time.perf_counter()
            try:
                async with http.post(
                    server.url + "/validate" + DEADLINE, data=body, headers=JSON_HEADERS
                ) as r:
                    answer = await r.read()
                    ok = r.status == 200 and json.loads(answer)["response"]["allowed"] is True
                    watch.legit_busy += r.status == 429
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
    for i in range(count):
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection(
                server.host, server.port, ssl=ctx, local_addr=attacker_addr(i, IDLE_SOURCES)
            )
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


async def _raw_tls(
    server: Server, local_addr: tuple[str, int] | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(
        server.host, server.port, ssl=server.ssl_context(), local_addr=local_addr
    )


async def _squatter(server: Server, until: float) -> list[int]:
    """Declare an 8 MiB body, send a byte a second; when refused, come back at once, until `until`."""
    statuses: list[int] = []
    while time.monotonic() < until:
        try:
            reader, writer = await _raw_tls(server)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.write(
            b"POST /validate" + DEADLINE.encode() + b" HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 8388608\r\n\r\n"
        )
        answer = asyncio.ensure_future(reader.readline())
        with contextlib.suppress(OSError, RuntimeError):
            while not answer.done() and time.monotonic() < until:
                writer.write(b"{")
                await writer.drain()
                await asyncio.wait([answer], timeout=max(min(1.0, until - time.monotonic()), 0))
        if answer.done() and not answer.exception():
            line = answer.result().split()
            statuses.append(int(line[1]) if len(line) > 1 else 0)
        else:
            answer.cancel()
        writer.close()
    return statuses


async def attack_squat(server: Server, _: list[bytes], count: int = 4, seconds: float = 10.0) -> list[Hit]:
    """Issue 28's byte-budget squat: `count` connections declaring 8 MiB bodies and trickling them."""
    until = time.monotonic() + seconds
    results = await asyncio.gather(*(_squatter(server, until) for _ in range(count)))
    return [Hit(status, 0, b"") for statuses in results for status in statuses] or [Hit(0, 0, b"")]


async def attack_pool(
    server: Server, bodies: list[bytes], count: int = 64, seconds: float = 5.0
) -> list[Hit]:
    """kube-apiserver's pooled connections: `count` keep-alive connections from one address, each sending
    the realistic review back to back. The Hits are their statuses (a 429 would be a throttled apiserver)."""
    (body,) = bodies
    until = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=count)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def client() -> list[Hit]:
            hits = []
            while time.monotonic() < until:
                async with http.post(
                    server.url + "/validate" + DEADLINE, data=body, headers=JSON_HEADERS
                ) as r:
                    hits.append(Hit(r.status, len(await r.read()), b""))
            return hits

        results = await asyncio.gather(*(client() for _ in range(count)))
    return [h for hits in results for h in hits]


def pod_review_body(size: int) -> bytes:
    """A Pod CREATE review of about `size` bytes (env variables), the largest /mutate-pods accepts."""
    entry = len(json.dumps({"name": "VAR_000000", "value": "x" * 40})) + 1
    env = [{"name": f"VAR_{i:06d}", "value": "x" * 40} for i in range(max(size - 4096, 0) // entry)]
    review_doc = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "big-pod",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE",
            "namespace": "default",
            "object": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "big", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "busybox", "env": env}]},
            },
        },
    }
    return json.dumps(review_doc, separators=(",", ":")).encode()


# The cap of /mutate-pods (webhook/server/envelope.py MAX_POD_BODY_BYTES: 6 x 3 MiB + 1 MiB), less a margin.
MAX_POD_BODY = 19 * 1024 * 1024 - 64 * 1024


def prepare_pods(count: int = 6) -> list[bytes]:
    body = pod_review_body(MAX_POD_BODY)
    return [body] * count


async def attack_pods(server: Server, bodies: list[bytes]) -> list[Hit]:
    """A flood of maximum-size pod reviews, two at a time."""
    hits: list[Hit] = []
    for i in range(0, len(bodies), 2):
        hits += await asyncio.gather(*(post(server, b, "/mutate-pods" + DEADLINE) for b in bodies[i : i + 2]))
    return hits


async def attack_slowloris(
    server: Server, _: list[bytes], count: int = 530, seconds: float = 12.0
) -> list[Hit]:
    """`count` TLS connections sending their headers a byte a second for `seconds` (past the 10 s header
    timeout). The Hit says how many the server closed itself (`size`) out of those opened (`status`)."""
    writers: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for i in range(count):
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            writers.append(await asyncio.wait_for(_raw_tls(server, attacker_addr(i)), 2.0))
    until = time.monotonic() + seconds
    line = b"POST /validate HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
    sent = 0
    while time.monotonic() < until:
        for _, writer in writers:
            if not writer.is_closing():
                with contextlib.suppress(OSError, RuntimeError):
                    writer.write(line[sent : sent + 1] if sent < len(line) else b"a")
        sent += 1
        await asyncio.sleep(1.0)
    closed = sum(1 for reader, _ in writers if reader.at_eof())
    for _, writer in writers:
        writer.close()
    return [Hit(len(writers), closed, b"")]


async def attack_half_open(
    server: Server, _: list[bytes], count: int = 600, seconds: float = 7.0
) -> list[Hit]:
    """`count` TCP connections to the TLS port that never send a ClientHello, held `seconds` (past the 5 s
    handshake timeout). The Hit says how many the server closed (`size`) out of those opened (`status`)."""
    conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for i in range(count):
        with contextlib.suppress(OSError):
            conns.append(await asyncio.open_connection(server.host, server.port, local_addr=attacker_addr(i)))
    await asyncio.sleep(seconds)
    closed = 0
    for reader, _ in conns:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(reader.read(1), 0.01)
        closed += reader.at_eof()
    for _, writer in conns:
        writer.close()
    return [Hit(len(conns), closed, b"")]


async def attack_huge_headers(server: Server, _: list[bytes]) -> list[Hit]:
    """One 20 KB header, and 40 header lines: the documented JSON 431."""
    hits = []
    for extra in (b"X-Big: " + b"a" * 20_000 + b"\r\n", b"".join(b"X-H%d: v\r\n" % i for i in range(40))):
        reader, writer = await _raw_tls(server)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + extra + b"\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        status = int(head.split()[1])
        content_type = "application/json" if b"application/json" in head.lower() else ""
        hits.append(Hit(status, len(body), body, content_type))
    return hits


async def fresh_connections(
    server: Server, body: bytes, count: int = 105, interval: float = 0.05, timeout_s: float = 5.0
) -> list[float | None]:
    """`count` reviews from 127.0.0.1, each on a fresh TLS connection (what a restarted apiserver, or one
    more replica, opens), one every `interval` seconds; each one's milliseconds, None for a failure."""

    async def one() -> float | None:
        start = time.perf_counter()
        try:
            async with (
                _session(server, limit=1) as http,
                http.post(
                    server.url + "/validate" + DEADLINE,
                    data=body,
                    headers=JSON_HEADERS,
                    timeout=aiohttp.ClientTimeout(total=timeout_s),
                ) as resp,
            ):
                await resp.read()
                if resp.status != 200:
                    return None
        except (TimeoutError, aiohttp.ClientError, OSError):
            return None
        return (time.perf_counter() - start) * 1000

    tasks = []
    for _ in range(count):
        tasks.append(asyncio.create_task(one()))
        await asyncio.sleep(interval)
    return list(await asyncio.gather(*tasks))


async def attack_flood(server: Server, bodies: list[bytes]) -> list[Hit]:
    """Issue 42: 530 slowloris connections, then 600 half-open handshakes, from the attacker sources; during
    them, 105 fresh connections from 127.0.0.1. A Hit per fresh connection: 200 (size: its ms) or 0."""
    slow = asyncio.create_task(attack_slowloris(server, [], count=530, seconds=12.0))
    await asyncio.sleep(4.0)  # the slowloris connections opened (or refused)
    half = asyncio.create_task(attack_half_open(server, [], count=600, seconds=7.0))
    await asyncio.sleep(2.0)
    fresh = await fresh_connections(server, bodies[0])
    await asyncio.gather(slow, half)
    return [Hit(0, 0, b"") if ms is None else Hit(200, int(ms), b"") for ms in fresh]


def fresh_summary(hits: list[Hit]) -> str:
    """Failures and percentiles of attack_flood's fresh connections."""
    ok = [float(h.size) for h in hits if h.status == 200]
    return (
        f"fresh connections from 127.0.0.1 during the flood: {len(hits) - len(ok)} of {len(hits)} failed, "
        f"p50 {_p(ok, 0.5):.0f} ms, p99 {_p(ok, 0.99):.0f} ms, max {max(ok, default=float('nan')):.0f} ms"
    )


def prepare_legit() -> list[bytes]:
    return [FIXTURE.read_bytes()]


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
    # Issue 28's attacks.
    "squat_4": Attack(
        "4 connections declaring 8 MiB bodies, sending 1 byte/s (statuses: what the squatters got)",
        prepare_nothing,
        attack_squat,
    ),
    "pool_64": Attack(
        "64 keep-alive connections from one address at normal load (statuses: no 429 wanted)",
        prepare_legit,
        attack_pool,
    ),
    "pods_max": Attack(
        "6 maximum-size (19 MB) pod reviews to /mutate-pods, 2 at a time", prepare_pods, attack_pods
    ),
    "slowloris_530": Attack(
        "530 TLS connections sending headers at 1 byte/s for 12 s (status: opened, B: closed by server)",
        prepare_nothing,
        attack_slowloris,
    ),
    "half_open_600": Attack(
        "600 TCP connections never starting TLS, 7 s (status: opened, B: closed by server)",
        prepare_nothing,
        attack_half_open,
    ),
    "huge_headers": Attack("a 20 KB header; 40 header lines", prepare_nothing, attack_huge_headers),
    # Issue 42's attack: run with --attacker-source or --attacker-sources, else it comes from 127.0.0.1 too.
    "flood_fresh": Attack(
        "530 slowloris + 600 half-open from the attacker sources; 105 fresh connections from 127.0.0.1",
        prepare_legit,
        attack_flood,
    ),
}


# ---------------------------------------------------------------------------------------------------------
# The benchmark


async def _quiet(
    server: Server, body: bytes, seconds: float, http: aiohttp.ClientSession | None = None
) -> list[float]:
    watch = Watch()
    stop = asyncio.Event()
    task = asyncio.create_task(_legit(server, body, watch, stop, http))
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` itself (the event loop's process; workers are not counted)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of `pid`'s main thread (the event loop) and of its other threads (the TLS handshake
    thread, the health listener...), to the nanosecond (/proc/PID/task/TID/schedstat); zeros where the
    kernel keeps no schedstat."""
    loop = other = 0.0
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                seconds = int(fh.read().split()[0]) / 1e9
            if int(task) == pid:
                loop += seconds
            else:
                other += seconds
    return loop, other


async def squat_ab(
    server: Server, legit: bytes, rounds: int, window: float, target: Server | None = None
) -> None:
    """Issue 28's squat target, measured A/B/A': `rounds` rotations of a quiet window, a window with 4
    squatters connected and a second quiet window, legitimate reviews sent throughout; each condition's
    samples pooled, so the machine's load (which drifts over minutes) weighs on all alike. The two quiet
    conditions against each other (A'/A) are the run's own noise floor for the ratio; the server's CPU in
    each condition says what the squatters cost its event loop."""
    quiet: list[list[float]] = []  # per round, for the interval below
    control: list[list[float]] = []
    squatted: list[list[float]] = []
    busy = 0
    refusals = 0
    cpu_quiet = cpu_squat = 0.0
    threads_quiet = [0.0, 0.0]  # the event loop's thread, the others
    threads_squat = [0.0, 0.0]
    # The squatters run in a process of their own, started once (its start-up is not in any window): their
    # TLS handshakes must not slow this process's legitimate client down and be counted against the server.
    squatters = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--run-squatters",
        f"{(target or server).port}:{(target or server).cafile}",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert squatters.stdin is not None and squatters.stdout is not None
    await squatters.stdout.readline()  # started
    # One keep-alive connection throughout, as kube-apiserver pools its own: no window starts with a
    # handshake of the legitimate client's (that would be one slow sample per window, near the p99).
    http = _session(server, limit=1)
    await _quiet(server, legit, 0.5, http)  # its handshake, before any window
    for _ in range(rounds):
        before, threads = cpu_seconds(server.pid), thread_cpu(server.pid)
        quiet.append(await _quiet(server, legit, window, http))
        cpu_quiet += cpu_seconds(server.pid) - before
        for i, now in enumerate(thread_cpu(server.pid)):
            threads_quiet[i] += now - threads[i]
        watch = Watch()
        stop = asyncio.Event()
        task = asyncio.create_task(_legit(server, legit, watch, stop, http))
        before, threads = cpu_seconds(server.pid), thread_cpu(server.pid)
        squatters.stdin.write(f"{window}\n".encode())
        out = await squatters.stdout.readline()
        stop.set()
        await task
        cpu_squat += cpu_seconds(server.pid) - before
        for i, now in enumerate(thread_cpu(server.pid)):
            threads_squat[i] += now - threads[i]
        squatted.append(watch.legit_ms)
        busy += watch.legit_busy
        refusals += sum(1 for s in out.split() if s == b"408")
        assert set(out.split()) <= {b"408", b"0"}, out
        control.append(await _quiet(server, legit, window, http))
    await http.close()
    squatters.stdin.close()
    await squatters.wait()
    q_all, s_all, c_all = (_pooled(rows) for rows in (quiet, squatted, control))
    q99, s99, c99 = _p(q_all, 0.99), _p(s_all, 0.99), _p(c_all, 0.99)
    low, high = _ratio_interval(squatted, quiet)
    c_low, c_high = _ratio_interval(control, quiet)
    print(
        f"squat A/B, {rounds} x {window:g} s windows: quiet p50 {_p(q_all, 0.5):.1f} ms p99 {q99:.1f} ms "
        f"({len(q_all)} reviews); 4 squatters p50 {_p(s_all, 0.5):.1f} ms p99 {s99:.1f} ms "
        f"({len(s_all)} reviews, {busy} got 429); p99 ratio {s99 / q99:.2f} "
        f"(90% interval {low:.2f}-{high:.2f}, rounds resampled)"
    )
    print(
        f"noise floor, the same quiet windows again (A'/A): p99 {c99:.1f} ms ({len(c_all)} reviews), "
        f"ratio {c99 / q99:.2f} (90% interval {c_low:.2f}-{c_high:.2f})"
    )
    seconds = rounds * window
    extra = cpu_squat - cpu_quiet
    print(
        f"server CPU (event-loop process): quiet {cpu_quiet / seconds * 1000:.1f} ms/s, with 4 squatters "
        f"{cpu_squat / seconds * 1000:.1f} ms/s; {refusals} squatter connections refused (408), "
        f"{extra / max(refusals, 1) * 1000:.2f} ms of CPU each (10 ms clock ticks)"
    )
    per = [(threads_squat[i] - threads_quiet[i]) / max(refusals, 1) * 1000 for i in (0, 1)]
    print(
        f"by thread (schedstat): the event loop {threads_quiet[0] / seconds * 1000:.1f} ms/s quiet, "
        f"{threads_squat[0] / seconds * 1000:.1f} ms/s with 4 squatters, {per[0]:.2f} ms per squatter "
        f"connection; the other threads (TLS handshakes) {per[1]:.2f} ms per squatter connection"
    )


def _pooled(rows: Iterable[list[float]]) -> list[float]:
    return [value for row in rows for value in row]


def _ratio_interval(
    test: list[list[float]], base: list[list[float]], draws: int = 2000, seed: int = 6406
) -> tuple[float, float]:
    """A 90% interval for p99(test) / p99(base), by resampling whole rounds with replacement (a round's
    samples share its moment's machine load, so rounds, not single reviews, are the independent units);
    the two conditions of a round are drawn together."""
    rng = random.Random(seed)
    rounds = len(base)
    ratios = []
    for _ in range(draws):
        picks = [rng.randrange(rounds) for _ in range(rounds)]
        t = _p(_pooled(test[i] for i in picks), 0.99)
        b = _p(_pooled(base[i] for i in picks), 0.99)
        ratios.append(t / b)
    ratios.sort()
    return ratios[int(draws * 0.05)], ratios[int(draws * 0.95) - 1]


def _p(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)]


async def bench(
    names: list[str], settle: float, flags: tuple[str, ...], ab_rounds: int = 0, decoy: bool = False
) -> int:
    legit = FIXTURE.read_bytes()
    load = os.getloadavg()[0]
    with serve(flags) as server:
        if ab_rounds:
            print(f"load average (1 min) at start: {load:.2f}")
            if decoy:
                # The control: the squatters hit a second server, so the legitimate client's server does none
                # of their work; what is left of the ratio is the attack's own processes sharing the machine.
                with serve(flags) as other:
                    print("decoy: the squatters hit a second server, not the reviews' server")
                    await squat_ab(server, legit, ab_rounds, 4.0, target=other)
            else:
                await squat_ab(server, legit, ab_rounds, 4.0)
            print(f"load average (1 min) at end: {os.getloadavg()[0]:.2f}")
            return 0
        start_memory = server.rss()
        quiet = await _quiet(server, legit, 6.0)
        print("hostile-client benchmark: dra-capacity serve on loopback, TLS, 10 s caller deadline")
        print(f"serve flags: {' '.join(flags) or '(defaults)'}")
        print(f"load average (1 min) at start: {load:.2f} (a busy machine skews latencies; read the ratios)")
        print(
            f"quiet /validate latency (realistic DeviceClass, same run): p50 {_p(quiet, 0.5):.1f} ms, "
            f"p99 {_p(quiet, 0.99):.1f} ms, max {max(quiet):.1f} ms"
        )
        async with watching(server) as idle:
            await asyncio.sleep(3.0)
        print(
            f"quiet /healthz (health listener): max {idle.healthz_max_ms:.1f} ms, "
            f"{idle.healthz_failures} failed"
        )
        head = (
            f"{'attack':<16}{'status':>12}{'answer B':>10}{'healthz max':>12}{'legit p50':>10}"
            f"{'x quiet':>8}{'legit p99':>10}{'x quiet':>8}{'legit max':>10}{'fail':>5}{'429':>5}"
            f"{'PSS MB before/peak/after':>26}{'settle s':>9}"
        )
        print(head)
        for name in names:
            attack = ATTACKS[name]
            bodies = attack.prepare()
            # The quiet baseline again, right before the attack: on a shared machine the load changes
            # from one minute to the next, so each ratio is to its own adjacent baseline.
            adjacent = await _quiet(server, legit, 8.0)
            q50, q99 = _p(adjacent, 0.5), _p(adjacent, 0.99)
            before = server.rss()
            async with watching(server, legit) as watch:
                hits = await attack.run(server, bodies)
                await asyncio.sleep(0.3)
            after, took = await _settle(server, before, settle)
            statuses = ",".join(sorted({str(h.status) for h in hits}))
            size = max(h.size for h in hits)
            l50, l99 = _p(watch.legit_ms, 0.5), _p(watch.legit_ms, 0.99)
            busy = watch.legit_busy + sum(h.status == 429 for h in hits if name == "pool_64")
            print(
                f"{name:<16}{statuses:>12}{size:>10}{watch.healthz_max_ms:>10.1f}ms{l50:>8.1f}ms"
                f"{l50 / q50:>7.2f}x{l99:>8.1f}ms{l99 / q99:>7.2f}x"
                f"{max(watch.legit_ms, default=float('nan')):>8.0f}ms"
                f"{watch.legit_failures + watch.healthz_failures:>5}{busy:>5}"
                f"{before / 2**20:>10.0f}/{watch.rss_peak / 2**20:.0f}/{after / 2**20:.0f}"
                f"{took if took is not None else float('nan'):>9.1f}"
            )
            print(f"    {attack.label}")
            if name == "flood_fresh":
                print(f"    {fresh_summary(hits)}")
        await asyncio.sleep(15.0)
        print(
            f"memory at start {start_memory / 2**20:.0f} MB, after all attacks and 15 s idle "
            f"{server.rss() / 2**20:.0f} MB (compiled CEL selectors stay cached)"
        )
        print("answer B: the largest answer body (for idle_*: RSS bytes per open connection)")
        print("healthz: GET /healthz on the health listener (--health-listen), fresh connection, 1 s timeout")
        print("fail: failed probes + failed legitimate reviews; 429: legitimate reviews refused as busy")
        print("x quiet: legit latency under the attack / the same percentile in the 8 s just before it")
        print("settle s: seconds until RSS was back within 20% of 'before' (nan: not within --settle)")
    return 0


def run_squatters(spec: str) -> int:
    """`--run-squatters PORT:CAFILE`: for each line `SECONDS` on stdin, 4 squatters against 127.0.0.1:PORT for
    that long; prints their statuses on one line."""
    port, cafile = spec.split(":")
    server = Server(subprocess.Popen(["true"]), "", Path(cafile), "127.0.0.1", int(port))
    print("ready", flush=True)
    for line in sys.stdin:
        hits = asyncio.run(attack_squat(server, [], count=4, seconds=float(line)))
        print(" ".join(str(h.status) for h in hits), flush=True)
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--run-squatters":
        return run_squatters(sys.argv[2])
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
    parser.add_argument(
        "--squat-ab",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="only measure the squat target A/B: ROUNDS rotations of 4 s quiet, 4 s with 4 squatters and 4 s "
        "quiet again (the noise floor)",
    )
    parser.add_argument(
        "--squat-decoy",
        action="store_true",
        help="with --squat-ab: aim the squatters at a second server (the control: the machine's share)",
    )
    parser.add_argument(
        "--attacker-source",
        default="",
        metavar="ADDRESS",
        help="a loopback address the connection attacks come from (e.g. 127.0.0.2; default 127.0.0.1)",
    )
    parser.add_argument(
        "--attacker-sources",
        type=int,
        default=0,
        metavar="N",
        help="spread the connection attacks over N sources, 127.0.1.1 to 127.0.1.N (at most 254)",
    )
    args = parser.parse_args()
    if args.attacker_sources:
        ATTACKER_SOURCES[:] = [f"127.0.1.{i}" for i in range(1, min(args.attacker_sources, 254) + 1)]
    elif args.attacker_source:
        ATTACKER_SOURCES[:] = [args.attacker_source]
    names = [n for n in args.only.split(",") if n] or list(ATTACKS)
    unknown = [n for n in names if n not in ATTACKS]
    if unknown:
        parser.error(f"unknown attacks {unknown}; known: {', '.join(ATTACKS)}")
    flags = tuple(args.serve_arg) if args.serve_arg is not None else WORST_CASE_FLAGS
    return asyncio.run(bench(names, args.settle, flags, args.squat_ab, args.squat_decoy))


if __name__ == "__main__":
    sys.exit(main())
