"""A minimal real control plane for the differential: etcd and kube-apiserver v1.37 on loopback, no webhooks,
Kubernetes 1.37's default feature gates, a static token in `system:masters`.

The binaries come from `scripts/controlplane.py` (`~/.cache/dra-capacity/controlplane/<version>/`, or
`$DRA_CAPACITY_CONTROLPLANE_DIR`). `ControlPlane` starts both in a temporary directory and stops them (by
their own process ids) on `stop()`; `client()` is a `kubernetes` ApiClient for it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from kubernetes import client as k8s

VERSION = "v1.37.2"


def bin_dir() -> Path:
    override = os.environ.get("DRA_CAPACITY_CONTROLPLANE_DIR")
    if override:
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "dra-capacity" / "controlplane" / VERSION


def available() -> str:
    """ "" when etcd and kube-apiserver are built, else what is missing."""
    missing = [name for name in ("etcd", "kube-apiserver") if not (bin_dir() / name).is_file()]
    return f"missing {', '.join(missing)} in {bin_dir()} (run `make controlplane`)" if missing else ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ControlPlane:
    """etcd + kube-apiserver, started by `start()`, stopped by `stop()` (also on a failed start)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="dra-differential-"))
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> ControlPlane:
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        bins = bin_dir()
        client_port, peer_port = _free_port(), _free_port()
        etcd_log = (self.dir / "etcd.log").open("wb")
        self.procs.append(
            subprocess.Popen(
                [
                    "nice",
                    "-n",
                    "10",
                    str(bins / "etcd"),
                    "--data-dir",
                    str(self.dir / "etcd"),
                    "--listen-client-urls",
                    f"http://127.0.0.1:{client_port}",
                    "--advertise-client-urls",
                    f"http://127.0.0.1:{client_port}",
                    "--listen-peer-urls",
                    f"http://127.0.0.1:{peer_port}",
                    "--initial-advertise-peer-urls",
                    f"http://127.0.0.1:{peer_port}",
                    "--initial-cluster",
                    f"default=http://127.0.0.1:{peer_port}",
                    "--unsafe-no-fsync",
                    "--log-level",
                    "warn",
                ],
                stdout=etcd_log,
                stderr=subprocess.STDOUT,
            )
        )
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        sa_key = self.dir / "sa.key"
        sa_key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        tokens = self.dir / "tokens.csv"
        tokens.write_text(f'{self.token},admin,admin,"system:masters"\n')
        api_log = (self.dir / "kube-apiserver.log").open("wb")
        self.procs.append(
            subprocess.Popen(
                [
                    "nice",
                    "-n",
                    "10",
                    str(bins / "kube-apiserver"),
                    f"--etcd-servers=http://127.0.0.1:{client_port}",
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",
                    f"--secure-port={self.port}",
                    f"--cert-dir={self.dir / 'certs'}",
                    f"--token-auth-file={tokens}",
                    "--authorization-mode=RBAC",
                    f"--service-account-key-file={sa_key}",
                    f"--service-account-signing-key-file={sa_key}",
                    "--service-account-issuer=https://kubernetes.default.svc",
                    "--service-cluster-ip-range=10.0.0.0/24",
                    "--enable-priority-and-fairness=false",
                    "--endpoint-reconciler-type=none",
                    "--v=0",
                ],
                stdout=api_log,
                stderr=subprocess.STDOUT,
            )
        )
        deadline = time.monotonic() + timeout
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        while True:
            for proc in self.procs:
                if proc.poll() is not None:
                    name = Path(str(proc.args[3])).name
                    tail = (self.dir / f"{name}.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{name} exited {proc.returncode}:\n{tail}")
            try:
                request = urllib.request.Request(
                    f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.token}"}
                )
                with urllib.request.urlopen(request, context=context, timeout=5) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"kube-apiserver not ready after {timeout}s; logs in {self.dir}")
            time.sleep(0.5)

    def configuration(self) -> k8s.Configuration:
        config = k8s.Configuration()
        config.host = self.url
        config.verify_ssl = True
        config.ssl_ca_cert = str(self.dir / "certs" / "apiserver.crt")
        config.assert_hostname = False
        config.api_key = {"BearerToken": self.token}
        config.api_key_prefix = {"BearerToken": "Bearer"}
        return config

    def client(self) -> k8s.ApiClient:
        return k8s.ApiClient(self.configuration())

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
