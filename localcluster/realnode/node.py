"""One real node beside a local cluster's kwok nodes: containerd (with Debian's runc and CNI bridge), a
kubelet of the control plane's release, and the DRA test plugin (tests/realnode/k8s/draplugin) publishing
GPUs of the kwok nodes' driver and `shares` capacity (localcluster/nodes.py). Built by `make realnode-bins`
(scripts/realnode.py).

    with RealNode.start(cluster, workdir) as node:   # Ready, its ResourceSlice published
        node.plugin_calls("NodePrepareResources")
    # stopped: pods deleted, every process killed by PID, mounts, cgroups, bridge removed, sysctls restored

Needs root, and one node per machine (host.machine_lock). Logs go to `workdir/logs/{containerd,kubelet,
draplugin}.log`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from certs.authority import Issued

from .. import nodes as nodes_mod
from .. import objects, pki
from ..cluster import Cluster, ClusterError, _die_with_parent, _kubeconfig, _write_yaml, kubernetes_version
from . import configs, host

BINARIES = ("kubelet", "draplugin", "containerd", "ctr", "containerd-shim-runc-v2")
NODE_NAME = "real-node-0"
NODE_LABELS = {"type": "real", "nvidia.com/gpu.present": "true"}
# The API server reaches the kubelet (logs, exec) at the node's InternalIP (host.NODE_IP); a Hostname address
# first would be the node's name, which resolves nowhere. Give this to ClusterConfig.apiserver_args.
APISERVER_ARGS = ("--kubelet-preferred-address-types=InternalIP",)
CALL_MARK = "dra-test-plugin call"
STOPPING_TAINT = "realnode.dra-capacity.io/stopping"


def bin_dir() -> Path:
    """Where `make realnode-bins` put the binaries and images (the same rule as scripts/realnode.py)."""
    override = os.environ.get("DRA_CAPACITY_REALNODE_DIR")
    if override:
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "dra-capacity" / "realnode" / kubernetes_version()


def check_usable() -> Path:
    """The binaries' directory, or `RealNodeUnavailable` saying what is missing."""
    if os.geteuid() != 0:
        raise host.RealNodeUnavailable(
            "a real node needs root: containerd and the kubelet mount filesystems, create cgroups and "
            "network namespaces, and the kubelet changes host sysctls. Run as root, or use the kwok nodes"
        )
    binaries = bin_dir()
    missing = [
        b for b in (*BINARIES, "pause.tar", "workload.tar", "images.json") if not (binaries / b).is_file()
    ]
    if missing:
        raise host.RealNodeUnavailable(
            f"{', '.join(missing)} not in {binaries}: run `make realnode-bins` (scripts/realnode.py build; "
            "a first build takes a few minutes once the control plane is built)"
        )
    tools = {
        "runc": "/usr/sbin/runc",
        "CNI bridge": "/usr/lib/cni/bridge",
        "CNI host-local": "/usr/lib/cni/host-local",
    }
    absent = [f"{k} ({v})" for k, v in tools.items() if not os.access(v, os.X_OK)]
    if absent or shutil.which("ip") is None:
        raise host.RealNodeUnavailable(
            f"missing {', '.join(absent) or 'ip'}: `apt-get install runc containernetworking-plugins "
            "iproute2` (`make realnode-bins` does, as root)"
        )
    return binaries


@dataclass
class RealNodeConfig:
    name: str = NODE_NAME
    gpus: int = 2
    shares: int | None = 4
    driver: str = nodes_mod.DRIVER
    # The kubelet's resync of pods and their Secret/ConfigMap volumes.
    sync_frequency: str = "10s"
    # The NoSchedule taint that keeps pods not meant for the node off it (configs.REAL_NODE_TAINT).
    taint: bool = True
    ready_timeout: float = 60.0


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


class RealNode:
    """A started real node. `RealNode.start(...)` is a context manager; `stop()` returns what was left."""

    def __init__(self, cluster: Cluster, workdir: Path, config: RealNodeConfig, binaries: Path) -> None:
        self.cluster = cluster
        self.workdir = workdir
        self.config = config
        self.binaries = binaries
        self.paths = configs.Paths()
        self.procs: dict[str, _Proc] = {}
        self.images = json.loads((binaries / "images.json").read_text())
        self.sysctls_before: dict[str, str] = {}
        self.startup_seconds = 0.0
        self._lock = contextlib.ExitStack()
        self.devices_file = workdir / "devices.json"
        self.kubeconfig = workdir / "kubeconfigs" / "kubelet.kubeconfig"

    @property
    def name(self) -> str:
        return self.config.name

    # ---- lifecycle -----------------------------------------------------------------------------------------

    @classmethod
    @contextlib.contextmanager
    def start(
        cls,
        cluster: Cluster,
        workdir: Path,
        config: RealNodeConfig | None = None,
        purpose: str = "a real node",
    ) -> Iterator[RealNode]:
        node = cls.launch(cluster, workdir, config, purpose)
        try:
            yield node
        finally:
            node.stop()

    @classmethod
    def launch(
        cls,
        cluster: Cluster,
        workdir: Path,
        config: RealNodeConfig | None = None,
        purpose: str = "a real node",
    ) -> RealNode:
        binaries = check_usable()
        started = time.monotonic()
        node = cls(cluster, workdir.resolve(), config or RealNodeConfig(), binaries)
        node._lock.enter_context(host.machine_lock(f"{purpose}, node {node.name}"))
        try:
            node._launch()
        except BaseException:
            node.stop()
            raise
        node.startup_seconds = time.monotonic() - started
        return node

    def _launch(self) -> None:
        # A crashed run's leftovers first (its sysctls are restored by save_sysctls).
        self._clean_host()
        self.sysctls_before = host.save_sysctls()
        p = self.paths
        for d in (
            p.state,
            p.run,
            p.cdi,
            p.cni_conf,
            p.ipam,
            p.pod_logs,
            p.kubelet_root,
            self.workdir / "logs",
        ):
            d.mkdir(parents=True, exist_ok=True)
        self._make_cgroup_root()
        host.make_bridge()
        (p.cni_conf / "10-dra-capacity.conflist").write_text(json.dumps(configs.cni_config(p), indent=2))
        (p.state / "containerd.toml").write_text(
            configs.containerd_config(p, self.binaries, self.images["pause"])
        )
        _write_yaml(
            p.state / "kubelet.yaml", configs.kubelet_config(p, self.config.sync_frequency, self.config.taint)
        )
        self._write_kubeconfig()
        gpus = range(self.config.gpus)
        self.write_devices([objects.nvidia_gpu(i, self.name, self.config.shares) for i in gpus])

        self.start_containerd()
        for image in ("pause.tar", "workload.tar"):
            self.ctr("images", "import", str(self.binaries / image))
        self.start_kubelet()
        self.wait_ready()
        self.start_plugin()

    def _write_kubeconfig(self) -> None:
        pki_dir = self.cluster.workdir / "pki"
        ca = Issued(
            x509.load_pem_x509_certificate((pki_dir / "ca.crt").read_bytes()),
            _ec_key((pki_dir / "ca.key").read_bytes()),
        )
        issued = pki.issue_client_certificate(ca, f"system:node:{self.name}", ("system:nodes",))
        cert, key = pki.write_pair(issued, self.workdir / "pki", "kubelet-client")
        _write_yaml(self.kubeconfig, _kubeconfig(self.cluster.url, ca.cert_pem, cert, key, "realnode"))

    def _make_cgroup_root(self) -> None:
        """The kubelet's cgroupRoot must exist in every hierarchy; cpuset children start empty on v1."""
        for hierarchy in host.CGROUP_FS.iterdir():
            if not (hierarchy / "cgroup.procs").exists():
                continue
            root = hierarchy / host.CGROUP_ROOT
            root.mkdir(exist_ok=True)
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if (hierarchy / knob).exists() and not (root / knob).read_text().strip():
                    (root / knob).write_text((hierarchy / knob).read_text())

    def _spawn(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> _Proc:
        log = self.workdir / "logs" / f"{name}.log"
        with open(log, "ab") as out:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env={**os.environ, **(env or {})},
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        proc = _Proc(name, popen, log)
        self.procs[name] = proc
        return proc

    def _stop_proc(self, name: str, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.popen.poll() is not None:
            return
        proc.popen.send_signal(sig)
        try:
            proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            proc.popen.wait(5)

    def start_containerd(self) -> None:
        self._spawn(
            "containerd",
            [str(self.binaries / "containerd"), "--config", str(self.paths.state / "containerd.toml")],
            # The shim is found on PATH, beside containerd.
            env={"PATH": f"{self.binaries}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"},
        )
        self.wait_for("containerd's socket", lambda: self.ctr("version", check=False).returncode == 0, 30)

    def start_kubelet(self) -> None:
        self._spawn(
            "kubelet",
            [
                str(self.binaries / "kubelet"),
                f"--config={self.paths.state / 'kubelet.yaml'}",
                f"--kubeconfig={self.kubeconfig}",
                f"--root-dir={self.paths.kubelet_root}",
                f"--cert-dir={self.paths.kubelet_root / 'pki'}",
                f"--hostname-override={self.name}",
                f"--node-ip={host.NODE_IP}",
                f"--node-labels={','.join(f'{k}={v}' for k, v in NODE_LABELS.items())}",
            ],
        )

    def start_plugin(self) -> None:
        driver = self.config.driver
        registered = self.registrations()
        self._spawn(
            "draplugin",
            [
                str(self.binaries / "draplugin"),
                f"--kubeconfig={self.cluster.kubeconfig_path}",
                f"--node-name={self.name}",
                f"--driver={driver}",
                f"--devices={self.devices_file}",
                f"--cdi-dir={self.paths.cdi}",
                f"--registrar-dir={self.paths.registry}",
                f"--data-dir={self.paths.plugin_data(driver)}",
                "-v=2",
            ],
        )
        self.wait_for("the DRA plugin's ResourceSlice", lambda: bool(self.slices()), 30)
        self.wait_for(
            "the kubelet's registration of the plugin", lambda: self.registrations() > registered, 30
        )

    def registrations(self) -> int:
        """How many times the kubelet told the plugin it registered it (its NotifyRegistrationStatus)."""
        return sum("plugin_registered:true" in line for line in self.plugin_calls("NotifyRegistrationStatus"))

    def restart(self, name: str, sig: int = signal.SIGTERM) -> None:
        """Stop one of containerd, kubelet, draplugin (by its PID, `sig`) and start it again."""
        self._stop_proc(name, sig)
        {"containerd": self.start_containerd, "kubelet": self.start_kubelet, "draplugin": self.start_plugin}[
            name
        ]()

    def stop(self) -> host.Leftovers:
        """Delete the node's pods (the kubelet stops them and their sandboxes), stop the plugin, the kubelet
        and containerd by PID, remove what is left (host.clean), delete the Node, restore the sysctls,
        release the lock. Returns what is still left (empty when all went well)."""
        try:
            if "kubelet" in self.procs and "containerd" in self.procs:
                self._drain()
            for name in ("draplugin", "kubelet", "containerd"):
                self._stop_proc(name)
            self._clean_host()
            with contextlib.suppress(ClusterError, OSError):
                self.cluster.request("DELETE", f"/api/v1/nodes/{self.name}")
                self.cluster.request(
                    "DELETE",
                    f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D{self.name}",
                )
            restored = host.restore_sysctls()
            if not host.our_mounts():  # the configs too, once nothing is mounted there
                shutil.rmtree(self.paths.state, ignore_errors=True)
            left = host.leftovers(self.binary_paths(), restored or self.sysctls_before)
        finally:
            self._lock.close()
        return left

    def binary_paths(self) -> list[Path]:
        return [self.binaries / b for b in BINARIES]

    def _clean_host(self) -> None:
        host.clean(self.binary_paths())
        for link in Path("/var/log/containers").glob("*.log") if Path("/var/log/containers").is_dir() else []:
            with contextlib.suppress(OSError):
                if os.readlink(link).startswith(str(self.paths.pod_logs)):
                    link.unlink()
        for d in (self.paths.state / "containerd", self.paths.kubelet_root, self.paths.run, self.paths.cdi):
            shutil.rmtree(d, ignore_errors=True)
        for d in (self.paths.ipam, self.paths.pod_logs):
            shutil.rmtree(d, ignore_errors=True)

    def cordon(self, taint: bool = False) -> None:
        """Mark the node unschedulable; with `taint`, also NoExecute-taint it (the kubelet then refuses any
        pod that a controller recreates and binds here anyway)."""
        spec: dict[str, Any] = {"unschedulable": True}
        if taint:
            spec["taints"] = [{"key": STOPPING_TAINT, "effect": "NoExecute"}]
        status, body = self.cluster.request(
            "PATCH",
            f"/api/v1/nodes/{self.name}",
            {"spec": spec},
            content_type="application/merge-patch+json",
        )
        if status != 200:
            raise ClusterError(f"cordon {self.name}: {status} {body}")

    def _drain(self, timeout: float = 30.0) -> None:
        """Delete every pod bound here and wait until the kubelet has stopped their sandboxes."""
        with contextlib.suppress(ClusterError, OSError):
            self.cordon(taint=True)
        for pod in self.pods():
            meta = pod["metadata"]
            with contextlib.suppress(ClusterError, OSError):
                self.cluster.request(
                    "DELETE",
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    {"gracePeriodSeconds": 1},
                )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(ClusterError, OSError):
                live = [
                    p for p in self.pods() if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                ]
                if not live and not host.netns_names():
                    return
            time.sleep(0.3)

    # ---- looking -------------------------------------------------------------------------------------------

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float, interval: float = 0.2) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError, KeyError, ClusterError):
                value = check()
                if value:
                    return value
            for proc in self.procs.values():
                if proc.popen.poll() is not None:
                    tail = "\n".join(proc.log.read_text(errors="replace").splitlines()[-30:])
                    raise ClusterError(
                        f"{proc.name} exited {proc.popen.returncode}; the end of {proc.log}:\n{tail}"
                    )
            time.sleep(interval)
        raise ClusterError(
            f"timed out after {timeout:.0f} s waiting for {what} (logs in {self.workdir / 'logs'})"
        )

    def node(self) -> dict[str, Any] | None:
        status, body = self.cluster.request("GET", f"/api/v1/nodes/{self.name}")
        return dict(body) if status == 200 else None

    def ready(self) -> bool:
        node = self.node()
        if node is None:
            return False
        conditions = node.get("status", {}).get("conditions", [])
        taints = node.get("spec", {}).get("taints", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) and not any(
            t["key"].startswith("node.kubernetes.io/") for t in taints
        )

    def wait_ready(self) -> None:
        self.wait_for(f"node {self.name} Ready (the kubelet's report)", self.ready, self.config.ready_timeout)

    def pods(self) -> list[dict[str, Any]]:
        status, body = self.cluster.request("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{self.name}")
        if status != 200:
            raise ClusterError(f"list pods on {self.name}: {status} {body}")
        return list(body["items"])

    def slices(self) -> list[dict[str, Any]]:
        status, body = self.cluster.request(
            "GET", f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D{self.name}"
        )
        return list(body["items"]) if status == 200 else []

    def published_devices(self) -> list[dict[str, Any]]:
        """The devices the plugin was last told to publish."""
        return list(json.loads(self.devices_file.read_text()))

    def write_devices(self, devices: list[dict[str, Any]]) -> None:
        """The devices the plugin publishes; a running plugin republishes on SIGHUP."""
        self.devices_file.write_text(json.dumps(devices))
        proc = self.procs.get("draplugin")
        if proc is not None and proc.popen.poll() is None:
            proc.popen.send_signal(signal.SIGHUP)

    def plugin_calls(self, method: str) -> list[str]:
        """The plugin's log lines for each gRPC call to `method` (NodePrepareResources...), all runs."""
        log = self.workdir / "logs" / "draplugin.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return [line for line in text.splitlines() if CALL_MARK in line and f'/{method}"' in line]

    def route_cluster_ip(self, cluster_ip: str = "10.96.0.1", port: int = 443) -> None:
        """Pods reach the API server through the `kubernetes` Service's ClusterIP: one DNAT rule to the API
        server's address, standing in for kube-proxy (host.add_dnat)."""
        parsed = urllib.parse.urlsplit(self.cluster.url)
        host.add_dnat(cluster_ip, port, f"{parsed.hostname}:{parsed.port}")

    def import_image(self, archive: Path, name: str) -> None:
        """Load an OCI archive (`podman save --format oci-archive`) into the node's containerd as `name`,
        for imagePullPolicy Never or IfNotPresent."""
        self.ctr("images", "import", str(archive))
        if name not in self.ctr("images", "ls", "-q").stdout.split():
            raise ClusterError(f"{archive} holds no image named {name}")

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [
                str(self.binaries / "ctr"),
                "--address",
                str(self.paths.containerd_socket),
                "-n",
                "k8s.io",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise ClusterError(f"ctr {' '.join(args)} exited {done.returncode}: {done.stderr}{done.stdout}")
        return done

    def logs(self, tail: int = 40) -> str:
        out = []
        for path in sorted((self.workdir / "logs").glob("*.log")):
            lines = path.read_text(errors="replace").splitlines()
            out.append(f"==== {path} (last {min(tail, len(lines))} of {len(lines)} lines)")
            out.extend(lines[-tail:])
        return "\n".join(out)


def _ec_key(pem: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ClusterError("the cluster CA's key is not an EC key")
    return key


def workload_image() -> str:
    """The image that prints its environment (scripts/realnode.py WORKLOAD_IMAGE)."""
    return str(json.loads((bin_dir() / "images.json").read_text())["workload"])
