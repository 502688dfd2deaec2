"""Webhook throughput and latency over TLS: `/validate` on a realistic DeviceClass vs an allow-all baseline.

The server (bench/webhook_baseline.py: `dra-capacity serve` plus a bench-only allow-all `/bench/allow`) is
pinned to one core and the load generator to the other (taskset). Load: wrk (Debian package `wrk`) with a Lua
script POSTing the review, 16 keep-alive connections; without wrk, an aiohttp client in this process. The
baseline route runs the same envelope checks, body reading, JSON parsing and wrapping, metrics and decision
log as /validate, with no admission logic and no worker, so the ratio is the cost of the rules themselves
(and of the hand-off to a worker, for a review that is not cheap). Targets: validate >= 70% of baseline
throughput, p99 <= 5 ms. Each run also reports the server's CPU time per request (its process and its worker
processes, from /proc): on a busy machine the throughput measures the neighbours as much as the server, the
CPU time per request much less so.

    .venv/bin/python bench/webhook_bench.py [--duration 10] [--connections 16] [--python-client]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "bench" / "fixtures" / "deviceclass-realistic.json"
OUT = Path(os.environ.get("BENCH_OUT", ROOT / "bench" / "out"))  # where webhook_bench.json goes
TARGET_RATIO = 0.70
BASELINE = "/bench/allow"  # allow-all, mounted by bench/webhook_baseline.py only
TARGET_P99_MS = 5.0

LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
wrk.body = f:read("*a")
f:close()
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, "errors": %d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""


@dataclass
class Result:
    endpoint: str
    tool: str
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_us: float = 0.0  # server CPU (process tree, user + system) per request, microseconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid` and its live descendants (the server and its workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as fh:
                    todo.extend(int(child) for child in fh.read().split())
        except (OSError, ValueError, IndexError):
            continue
    return total


def judged_where(url: str, cafile: Path) -> dict[str, float]:
    """How the server judged /validate reviews: {"inline": n, "worker": m}, from its /metrics."""
    ctx = ssl.create_default_context(cafile=str(cafile))
    with urllib.request.urlopen(url + "/metrics", context=ctx, timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith('dra_capacity_webhook_judged_reviews_total{endpoint="validate"'):
            where = line.split('where="', 1)[1].split('"', 1)[0]
            out[where] = float(line.rsplit(" ", 1)[1])
    return out


def pinned(cpu: int | None, argv: list[str]) -> list[str]:
    if cpu is None or shutil.which("taskset") is None:
        return argv
    return ["taskset", "-c", str(cpu), *argv]


def wait_ready(url: str, cafile: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode} before becoming ready")
        try:
            ctx = ssl.create_default_context(cafile=str(cafile)) if cafile.exists() else None
            if ctx is not None:
                with urllib.request.urlopen(url + "/readyz", context=ctx, timeout=2) as resp:
                    if resp.status == 200:
                        return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("server never became ready")


def run_wrk(url: str, body: Path, duration: int, connections: int, cpu: int | None, lua: Path) -> Result:
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "-s", str(lua), url]
    out = subprocess.run(
        pinned(cpu, argv),
        capture_output=True,
        text=True,
        env={**os.environ, "BENCH_BODY": str(body)},
        check=True,
    ).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("BENCH "))
    data = json.loads(line[len("BENCH ") :])
    seconds = data["duration_us"] / 1e6
    return Result(
        endpoint=url.rsplit("/", 1)[-1],
        tool="wrk",
        requests=data["requests"],
        seconds=seconds,
        rps=data["requests"] / seconds,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        errors=data["errors"],
    )


async def _python_load(url: str, body: bytes, duration: float, connections: int, cafile: Path) -> Result:
    import aiohttp

    latencies: list[float] = []
    errors = 0
    ctx = ssl.create_default_context(cafile=str(cafile))
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=connections)) as http:
        end = time.perf_counter() + duration

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < end:
                start = time.perf_counter()
                try:
                    async with http.post(url, data=body, headers=headers) as resp:
                        await resp.read()
                        if resp.status != 200:
                            errors += 1
                except aiohttp.ClientError:
                    errors += 1
                latencies.append(time.perf_counter() - start)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        seconds = time.perf_counter() - started
    latencies.sort()
    return Result(
        endpoint=url.rsplit("/", 1)[-1],
        tool="python-aiohttp",
        requests=len(latencies),
        seconds=seconds,
        rps=len(latencies) / seconds,
        p50_ms=statistics.median(latencies) * 1000,
        p99_ms=latencies[int(len(latencies) * 0.99) - 1] * 1000,
        errors=errors,
    )


@dataclass
class Load:
    """Load on one running server: wrk (or the aiohttp client) on the client CPU, and the server process
    tree's CPU per request."""

    proc: subprocess.Popen[bytes]
    base: str
    cafile: Path
    body: bytes
    connections: int
    use_wrk: bool
    client_cpu: int | None

    def rounds(self, workdir: Path, paths: list[str], duration: int, rounds: int) -> dict[str, list[Result]]:
        """A 2 s warm-up of each path (connections, caches, CPU frequency), then `rounds` alternating runs."""
        lua = workdir / "post.lua"
        lua.write_text(LUA)
        body_file = workdir / "body.json"
        body_file.write_bytes(self.body)
        if self.client_cpu is not None and not self.use_wrk:
            os.sched_setaffinity(0, {self.client_cpu})

        def measure(path: str, seconds: int) -> Result:
            cpu_before = tree_cpu_seconds(self.proc.pid)
            if self.use_wrk:
                result = run_wrk(self.base + path, body_file, seconds, self.connections, self.client_cpu, lua)
            else:
                result = asyncio.run(
                    _python_load(self.base + path, self.body, seconds, self.connections, self.cafile)
                )
            used = tree_cpu_seconds(self.proc.pid) - cpu_before
            result.cpu_us = used / max(result.requests, 1) * 1e6
            return result

        for path in paths:
            measure(path, 2)
        runs: dict[str, list[Result]] = {path: [] for path in paths}
        for _ in range(rounds):
            for path in paths:
                runs[path].append(measure(path, duration))
        return runs


def print_table(rows: list[tuple[str, Result]], runs: dict[str, list[Result]], rounds: int) -> None:
    head = f"{'endpoint':<22}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}{'CPU us/req':>12}"
    print(f"{head}   (best of {rounds})")
    for label, r in rows:
        print(f"{label:<22}{r.rps:>10.0f}{r.p50_ms:>9.2f}{r.p99_ms:>9.2f}{r.errors:>8}{r.cpu_us:>12.0f}")
    for path, results in runs.items():
        shown = ", ".join(f"{r.rps:.0f} req/s p99 {r.p99_ms:.2f} ms {r.cpu_us:.0f} us CPU" for r in results)
        print(f"  runs {path}: {shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run (default 10)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the best run counts")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="AdmissionReview JSON to POST")
    parser.add_argument(
        "--python-client", action="store_true", help="use the aiohttp client even if wrk exists"
    )
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra `serve` flag for the server, repeatable (e.g. --serve-arg=--worker-kind=thread)",
    )
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu, client_cpu = (cpus[0], cpus[1]) if len(cpus) >= 2 else (None, None)
    use_wrk = shutil.which("wrk") is not None and not args.python_client
    body = args.fixture.read_bytes()
    json.loads(body)  # fail early on a broken fixture

    with tempfile.TemporaryDirectory(prefix="webhook-bench-") as tmp:
        tls_dir = Path(tmp) / "tls"
        port = free_port()
        base = f"https://127.0.0.1:{port}"
        server_argv = [
            sys.executable,
            str(ROOT / "bench" / "webhook_baseline.py"),
            "--self-signed",
            "--listen",
            f"127.0.0.1:{port}",
            "--tls-dir",
            str(tls_dir),
            *args.serve_arg,
        ]
        proc = subprocess.Popen(pinned(server_cpu, server_argv), stderr=subprocess.DEVNULL)
        try:
            wait_ready(base, tls_dir / "ca.crt", proc)
            load = Load(proc, base, tls_dir / "ca.crt", body, args.connections, use_wrk, client_cpu)
            runs = load.rounds(Path(tmp), [BASELINE, "/validate"], args.duration, args.rounds)
            where = judged_where(base, tls_dir / "ca.crt")
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    best = {path: max(results, key=lambda r: r.rps) for path, results in runs.items()}
    baseline, validate = best[BASELINE], best["/validate"]
    ratio = validate.rps / baseline.rps
    tool = "wrk" if use_wrk else "python aiohttp client"
    pinning = (
        f"server on CPU {server_cpu}, load on CPU {client_cpu}" if server_cpu is not None else "not pinned"
    )
    print(f"webhook benchmark: TLS, {args.connections} keep-alive connections, {tool}, {pinning}")
    if args.serve_arg:
        print(f"serve flags: {' '.join(args.serve_arg)}")
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) before/after: {load_before:.2f}/{load_after:.2f} (other load skews p99)")
    print(f"fixture: {args.fixture.relative_to(ROOT) if args.fixture.is_relative_to(ROOT) else args.fixture}")
    print_table([("baseline (allow-all)", baseline), ("/validate", validate)], runs, args.rounds)
    shown = ", ".join(f"{n:.0f} {kind}" for kind, n in sorted(where.items())) or "none counted"
    print(f"/validate reviews judged (whole run, warm-up included): {shown}")
    verdict = "PASS" if ratio >= TARGET_RATIO else "FAIL"
    print(f"throughput ratio validate/baseline: {ratio:.2f} (target >= {TARGET_RATIO:.2f}) {verdict}")
    for label, r in (("baseline", baseline), ("validate", validate)):
        verdict = "PASS" if r.p99_ms <= TARGET_P99_MS else "FAIL"
        print(f"p99 {label}: {r.p99_ms:.2f} ms (target <= {TARGET_P99_MS:.0f} ms) {verdict}")
    OUT.mkdir(parents=True, exist_ok=True)
    report = {"ratio": ratio, "runs": {p: [asdict(r) for r in rs] for p, rs in runs.items()}}
    (OUT / "webhook_bench.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
