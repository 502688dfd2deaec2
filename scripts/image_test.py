"""`make image-test`: run the built image as the chart runs it and check that it serves.

* read-only root filesystem, UID/GID 65532, every capability dropped, no privilege escalation;
* the TLS files mounted the way the kubelet mounts a Secret volume: a timestamped directory, a `..data`
  symlink to it, and `tls.crt`/`tls.key`/`ca.crt` symlinks through `..data`;
* `/readyz` over TLS verified against the CA, an allowed and a rejected DeviceClass AdmissionReview;
* a certificate rotation done as the kubelet does it (a new timestamped directory, `..data` swapped in one
  rename), picked up without a restart;
* the image's size, the time to ready and the server's resident memory, printed.

Traffic goes to 127.0.0.1 only (the container shares the host's network namespace). `make test` runs it last.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from certs.authority import generate_ca, issue_serving_certificate  # noqa: E402

PODMAN = ["podman", "--storage-driver", "vfs"]
RUN = [*PODMAN, "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
MOUNT = "/etc/dra-capacity/tls"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kubelet_secret_dir(root: Path, files: dict[str, bytes]) -> None:
    """Lay out `files` as kubelet's AtomicWriter does: ..<timestamp>/ holds them, ..data points at it."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("..%Y_%m_%d_%H_%M_%S.%f")
    payload = root / stamp
    payload.mkdir(mode=0o755)
    for name, data in files.items():
        (payload / name).write_bytes(data)
        (payload / name).chmod(0o444)  # defaultMode 0644 plus fsGroup in a pod; world-readable here
    tmp_link = root / "..data_tmp"
    tmp_link.symlink_to(stamp)
    old = os.readlink(root / "..data") if (root / "..data").is_symlink() else None
    os.replace(tmp_link, root / "..data")
    for name in files:
        if not (root / name).is_symlink():
            (root / name).symlink_to(f"..data/{name}")
    if old is not None:
        for child in (root / old).iterdir():
            child.unlink()
        (root / old).rmdir()


def tls_files(ca: Any) -> dict[str, bytes]:
    leaf = issue_serving_certificate(ca, ("dra-capacity-webhook.dra-capacity.svc",))
    return {"tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem, "ca.crt": ca.cert_pem}


def review(name: str, spec: dict[str, Any]) -> bytes:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": f"uid-{name}",
                "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"},
                "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "deviceclasses"},
                "name": name,
                "operation": "CREATE",
                "userInfo": {"username": "image-test"},
                "object": obj,
                "oldObject": None,
                "dryRun": False,
            },
        }
    ).encode()


def post(url: str, body: bytes, ctx: ssl.SSLContext) -> dict[str, Any]:
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
        result: dict[str, Any] = json.loads(resp.read())
        return result


def served_serial(port: int) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    from cryptography import x509

    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def rss_kib(container: str) -> int | None:
    pid = subprocess.run(
        [*PODMAN, "inspect", "--format", "{{.State.Pid}}", container], capture_output=True, text=True
    ).stdout.strip()
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def container_pss_kib(container: str) -> tuple[int, int] | None:
    """Proportional set size of every process in the container (the server, its workers, multiprocessing's
    forkserver and resource tracker; shared pages counted once), and how many processes: the container's
    init process and all its descendants, found through /proc."""
    pid = subprocess.run(
        [*PODMAN, "inspect", "--format", "{{.State.Pid}}", container], capture_output=True, text=True
    ).stdout.strip()
    if not pid.isdigit():
        return None
    children: dict[str, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(fields[1], []).append(stat.parent.name)
    members, todo = [], [pid]
    while todo:
        p = todo.pop()
        members.append(p)
        todo += children.get(p, [])
    total = 0
    for p in members:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total, len(members)


def check(condition: bool, what: str) -> None:
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        raise SystemExit(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="localhost/dra-capacity:dev")
    args = parser.parse_args()

    inspect = json.loads(
        subprocess.run(
            [*PODMAN, "image", "inspect", args.image], capture_output=True, text=True, check=True
        ).stdout
    )[0]
    config = inspect.get("Config", {})
    check(config.get("User") == "65532:65532", f"image user is 65532:65532 ({config.get('User')})")
    check(config.get("Entrypoint") == ["dra-capacity"], f"entrypoint is exec-form {config.get('Entrypoint')}")

    ca = generate_ca()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="dra-capacity-image-test-") as tmp:
        secret = Path(tmp) / "secret"
        secret.mkdir()
        secret.chmod(0o755)
        os.chmod(tmp, 0o755)
        kubelet_secret_dir(secret, tls_files(ca))
        started = time.monotonic()
        container = subprocess.run(
            [
                *RUN,
                "run",
                "--detach",
                "--read-only",
                "--user",
                "65532:65532",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                # podman's default rlimits exceed what this sandbox lets runc set; a kubelet sets none.
                "--ulimit",
                "nofile=4096:4096",
                "--ulimit",
                "nproc=4096:4096",
                "--network",
                "host",
                "--volume",
                f"{secret}:{MOUNT}:ro",
                args.image,
                "serve",
                f"--listen=127.0.0.1:{port}",
                f"--tls-dir={MOUNT}",
            ],
            capture_output=True,
            text=True,
        )
        check(container.returncode == 0, f"container started {container.stderr.strip()}")
        cid = container.stdout.strip()
        try:
            ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
            ctx.check_hostname = False  # the leaf names the Service and 127.0.0.1; the chain is what matters
            base = f"https://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/readyz", context=ctx, timeout=2) as resp:
                        if resp.status == 200:
                            break
                except (OSError, urllib.error.URLError):
                    pass
                state = subprocess.run(
                    [*PODMAN, "inspect", "--format", "{{.State.Running}}", cid],
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                if state != "true" or time.monotonic() > deadline:
                    logs = subprocess.run([*PODMAN, "logs", cid], capture_output=True, text=True)
                    print(logs.stdout + logs.stderr)
                    check(False, "the webhook became ready")
                time.sleep(0.2)
            ready_after = time.monotonic() - started
            check(True, f"/readyz answered 200 over TLS after {ready_after:.1f} s")
            rss_idle = rss_kib(cid)
            pss_idle = container_pss_kib(cid)

            ok = post(
                f"{base}/validate",
                review(
                    "gpu", {"extendedResourceCapacityRequests": {"requests": {"gpu.example.com/shares": "1"}}}
                ),
                ctx,
            )
            check(ok["response"]["allowed"] is True, "a valid DeviceClass is allowed")
            bad = post(
                f"{base}/validate",
                review(
                    "gpu-bad",
                    {"extendedResourceCapacityRequests": {"requests": {"gpu.example.com/shares": "0"}}},
                ),
                ctx,
            )
            status = bad["response"].get("status", {})
            check(
                bad["response"]["allowed"] is False and status.get("code") == 422,
                f"an invalid DeviceClass is rejected: {status.get('message', '')[:100]}",
            )

            before = served_serial(port)
            kubelet_secret_dir(secret, tls_files(ca))
            deadline = time.monotonic() + 30
            while served_serial(port) == before and time.monotonic() < deadline:
                time.sleep(0.2)
            check(served_serial(port) != before, "a ..data symlink swap is served without a restart")
            for i in range(200):
                post(f"{base}/validate", review(f"gpu-{i}", {}), ctx)
            rss_busy = rss_kib(cid)
            pss_busy = container_pss_kib(cid)

            size = int(
                subprocess.run(
                    [*PODMAN, "image", "inspect", "--format", "{{.Size}}", args.image],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
            )
            print(f"image {args.image}: {size / 1e6:.1f} MB")
            print(f"time to ready: {ready_after:.1f} s")
            if rss_idle is not None and rss_busy is not None:
                print(
                    f"server RSS: {rss_idle / 1024:.1f} MiB when ready, {rss_busy / 1024:.1f} MiB after "
                    "200 reviews"
                )
            if pss_idle is not None and pss_busy is not None:
                print(
                    f"container PSS ({pss_idle[1]} processes): {pss_idle[0] / 1024:.1f} MiB when ready, "
                    f"{pss_busy[0] / 1024:.1f} MiB after 200 reviews"
                )
        finally:
            subprocess.run([*PODMAN, "rm", "--force", "--time", "5", cid], capture_output=True)
    print("image-test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
