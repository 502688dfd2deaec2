"""A host runner: the kubelet of one node, `host-runner`, that runs a release's own pods as host processes.

There is no kubelet in the harness, so this stands in for one, for the product's own pods only (the image is
the product's: the worktree's virtualenv, mounted at `/opt/dra-capacity` as the Dockerfile lays it out):

* **Node.** A Node `host-runner` kwok does not manage (no `kwok.x-k8s.io/node` annotation: kwok would report
  its own pod status over ours), kept Ready by a Lease heartbeat and status updates. The fake kwok nodes are
  tainted `realcluster.dra-capacity.io/kwok=true:NoSchedule` by `taint_kwok_nodes`, so a chart installed
  with default values lands here; the test's own workload pods tolerate the taint.
* **Pods.** For each pod bound here: its volumes written under `workdir/pods/<ns>_<name>/volumes` (Secret,
  ConfigMap, projected ServiceAccount token + `kube-root-ca.crt` + namespace, downward API, emptyDir; a
  missing Secret or ConfigMap is retried, as the kubelet retries a mount), then its native sidecars (init
  containers with `restartPolicy: Always`, each started once its predecessor's startupProbe passes), plain
  init containers to completion, then the containers. Each container is `podexec`'s private mount namespace
  inside the cluster's network namespace: command and args from the pod spec (the image's ENTRYPOINT
  `dra-capacity` when no command), env from the spec (value, fieldRef) plus the kubelet's
  `KUBERNETES_SERVICE_HOST/PORT`, volumes at their mount paths.
* **Addresses.** Each pod gets its own address `10.250.<slot>.<n>` (n >= 10) on the namespace end of the
  veth pair; the host routes the slot's /24 into the namespace. The pods share one network namespace, so a
  listen address `0.0.0.0:` in the args is given as the pod's own address (two replicas can then listen on
  the same port).
* **Status.** Phase, podIP, conditions (Ready from the readinessProbe, an HTTP GET to the pod's address),
  container statuses and exit codes go to `pods/status`; the EndpointSlice controller then builds the
  Services' endpoints. `restartPolicy: Always` containers are restarted (backoff 1 to 10 s); a pod with
  `Never` ends Succeeded or Failed. A deleted pod gets its preStop sleep, SIGTERM, SIGKILL after the grace
  period, then is removed from the API (as the kubelet does).
* **Services.** No kube-proxy, no DNS: a DNAT chain in the namespace sends each Service's ClusterIP:port to
  a ready endpoint (kube-proxy's job), and `/etc/hosts` in every container names `<svc>.<ns>.svc` (DNS's).

Not emulated: liveness probes, resource limits, runAsUser (processes run as root), Secret/ConfigMap volume
updates after start, image pulls.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localcluster.cluster import ROOT, Cluster, ClusterError

NODE = "host-runner"
KWOK_TAINT = {"key": "realcluster.dra-capacity.io/kwok", "value": "true", "effect": "NoSchedule"}
KWOK_TOLERATION = {"key": KWOK_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}
IMAGE_ROOT = "/opt/dra-capacity"
IMAGE_PATH = f"{IMAGE_ROOT}/bin:/usr/local/bin:/usr/bin:/bin"
ENTRYPOINT = ["dra-capacity"]
VENV = ROOT / ".venv"


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def taint_kwok_nodes(cluster: Cluster) -> None:
    """Keep the scheduler from placing anything without the toleration on kwok's fake nodes."""
    for node in cluster.node_names:
        cluster.kubectl("taint", "node", node, f"{KWOK_TAINT['key']}=true:NoSchedule", "--overwrite")


class _Container:
    def __init__(self, run: _PodRun, spec: Mapping[str, Any], kind: str) -> None:
        self.run = run
        self.spec = spec
        self.kind = kind  # "sidecar", "init" or "main"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.exit_code: int | None = None
        self.started_at: str | None = None
        self.log = run.dir / "logs" / f"{spec['name']}.log"

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    def start(self) -> None:
        self.exit_code = None
        self.started_at = _now()
        spec_path = self.run.dir / f"{self.name}.exec.json"
        spec_path.write_text(json.dumps(self.run.exec_spec(self.spec)))
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            log.write(f"--- {_now()} start #{self.restarts}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.run.runner.cluster.netns_argv(
                    [
                        "unshare",
                        "--mount",
                        "--uts",
                        "--propagation",
                        "private",
                        "--",
                        sys.executable,
                        "-m",
                        "realcluster.podexec",
                        str(spec_path),
                    ]
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
                env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT / "tests")},
                start_new_session=True,
            )

    def poll(self) -> int | None:
        if self.proc is None:
            return self.exit_code
        code = self.proc.poll()
        if code is not None:
            self.exit_code = code
        return code

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def probe(self, kind: str) -> bool:
        """The container's `kind` probe (httpGet only) against the pod's address; no probe: running."""
        probe = self.spec.get(kind)
        if not self.running():
            return False
        if not probe:
            return True
        get = probe.get("httpGet")
        if not get:
            return True
        port = get["port"]
        if isinstance(port, str) and not port.isdigit():
            port = next(p["containerPort"] for p in self.spec.get("ports", []) if p.get("name") == port)
        url = f"http://{self.run.ip}:{port}{get.get('path', '/')}"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return bool(200 <= resp.status < 400)
        except Exception:
            return False

    def status(self) -> dict[str, Any]:
        code = self.poll()
        state: dict[str, Any]
        if self.proc is None:
            state = {"waiting": {"reason": "PodInitializing"}}
        elif code is None:
            state = {"running": {"startedAt": self.started_at}}
        else:
            state = {
                "terminated": {
                    "exitCode": code,
                    "reason": "Completed" if code == 0 else "Error",
                    "startedAt": self.started_at,
                    "finishedAt": _now(),
                }
            }
        return {
            "name": self.name,
            "image": self.spec.get("image", ""),
            "imageID": "",
            "ready": code is None and self.proc is not None and self.run.ready.get(self.name, False),
            "restartCount": self.restarts,
            "started": code is None and self.proc is not None,
            "state": state,
        }


class _PodRun:
    """One pod's lifecycle on the host, driven by its own thread."""

    def __init__(self, runner: HostRunner, pod: Mapping[str, Any], ip: str) -> None:
        self.runner = runner
        self.pod = pod
        self.ns = pod["metadata"]["namespace"]
        self.name = pod["metadata"]["name"]
        self.uid = pod["metadata"]["uid"]
        self.ip = ip
        self.dir = runner.workdir / "pods" / f"{self.ns}_{self.name}"
        self.dir.mkdir(parents=True, exist_ok=True)
        spec = pod["spec"]
        self.sidecars = [
            _Container(self, c, "sidecar")
            for c in spec.get("initContainers", [])
            if c.get("restartPolicy") == "Always"
        ]
        self.inits = [
            _Container(self, c, "init")
            for c in spec.get("initContainers", [])
            if c.get("restartPolicy") != "Always"
        ]
        self.mains = [_Container(self, c, "main") for c in spec["containers"]]
        self.ready: dict[str, bool] = {}
        self.deleting = threading.Event()
        self.done = threading.Event()
        self.phase = "Pending"
        self.message = ""
        self.thread = threading.Thread(target=self._lifecycle, name=f"pod-{self.name}", daemon=True)

    # ---- volumes ----------------------------------------------------------------------------------

    def _items(
        self, data: Mapping[str, str], items: list[Mapping[str, Any]] | None, b64: bool
    ) -> dict[str, bytes]:
        raw = {k: (base64.b64decode(v) if b64 else v.encode()) for k, v in data.items()}
        if not items:
            return raw
        return {i["path"]: raw[i["key"]] for i in items if i["key"] in raw}

    def _object(self, kind: str, name: str) -> dict[str, Any] | None:
        status, body = self.runner.cluster.request("GET", f"/api/v1/namespaces/{self.ns}/{kind}/{name}")
        return body if status == 200 else None

    def _token(self, audience: str | None, seconds: int) -> str:
        sa = self.pod["spec"].get("serviceAccountName") or "default"
        spec: dict[str, Any] = {
            "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": self.name, "uid": self.uid},
        }
        if audience:
            spec["audiences"] = [audience]
        status, body = self.runner.cluster.request(
            "POST",
            f"/api/v1/namespaces/{self.ns}/serviceaccounts/{sa}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        if status != 201:
            raise ClusterError(f"TokenRequest for pod {self.ns}/{self.name}: {status} {body}")
        return str(body["status"]["token"])

    def _field(self, path: str) -> str:
        meta = self.pod["metadata"]
        if path == "metadata.name":
            return str(meta["name"])
        if path == "metadata.namespace":
            return str(meta["namespace"])
        if path == "metadata.uid":
            return str(meta["uid"])
        if path == "status.podIP":
            return self.ip
        if path == "spec.nodeName":
            return NODE
        if path == "spec.serviceAccountName":
            return str(self.pod["spec"].get("serviceAccountName", "default"))
        found = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
        if found:
            return str(meta.get(found.group(1), {}).get(found.group(2), ""))
        raise ClusterError(f"pod {self.ns}/{self.name}: fieldRef {path} is not emulated")

    def _volume_files(self, volume: Mapping[str, Any]) -> dict[str, bytes] | None:
        """The files of one volume, or None while a Secret or ConfigMap it needs is missing."""
        if "secret" in volume:
            src = volume["secret"]
            obj = self._object("secrets", src["secretName"])
            if obj is None:
                return {} if src.get("optional") else None
            return self._items(obj.get("data") or {}, src.get("items"), True)
        if "configMap" in volume:
            src = volume["configMap"]
            obj = self._object("configmaps", src["name"])
            if obj is None:
                return {} if src.get("optional") else None
            return self._items(obj.get("data") or {}, src.get("items"), False)
        if "projected" in volume:
            files: dict[str, bytes] = {}
            for source in volume["projected"]["sources"]:
                if "serviceAccountToken" in source:
                    tok = source["serviceAccountToken"]
                    files[tok["path"]] = self._token(
                        tok.get("audience"), int(tok.get("expirationSeconds", 3607))
                    ).encode()
                else:
                    part = self._volume_files(source)
                    if part is None:
                        return None
                    files.update(part)
            return files
        if "downwardAPI" in volume:
            return {
                i["path"]: self._field(i["fieldRef"]["fieldPath"]).encode()
                for i in volume["downwardAPI"]["items"]
            }
        if "emptyDir" in volume:
            return {}
        raise ClusterError(f"pod {self.ns}/{self.name}: volume {volume['name']} kind is not emulated")

    def _materialise(self) -> bool:
        root = self.dir / "volumes"
        for volume in self.pod["spec"].get("volumes", []):
            files = self._volume_files(volume)
            if files is None:
                return False
            target = root / volume["name"]
            target.mkdir(parents=True, exist_ok=True)
            for rel, content in files.items():
                path = target / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
        return True

    # ---- exec ---------------------------------------------------------------------------------------

    def exec_spec(self, container: Mapping[str, Any]) -> dict[str, Any]:
        env = {
            "PATH": IMAGE_PATH,
            "HOME": "/tmp",
            "HOSTNAME": self.name,
            "KUBERNETES_SERVICE_HOST": self.runner.kubernetes_service[0],
            "KUBERNETES_SERVICE_PORT": str(self.runner.kubernetes_service[1]),
        }
        for item in container.get("env", []):
            if "value" in item:
                env[item["name"]] = item["value"]
            elif "fieldRef" in item.get("valueFrom", {}):
                env[item["name"]] = self._field(item["valueFrom"]["fieldRef"]["fieldPath"])
            else:
                raise ClusterError(f"pod {self.ns}/{self.name}: env {item['name']} source is not emulated")
        command = list(container.get("command") or ENTRYPOINT)
        args = [a.replace("0.0.0.0:", f"{self.ip}:") for a in container.get("args", [])]
        binds = [[str(VENV), IMAGE_ROOT], [str(self.runner.hosts_file), "/etc/hosts"]]
        for mount in container.get("volumeMounts", []):
            source = self.dir / "volumes" / mount["name"]
            if mount.get("subPath"):
                source = source / mount["subPath"]
            binds.append([str(source), mount["mountPath"]])
        return {
            "root": str(self.dir / "root" / container["name"]),
            "binds": binds,
            "argv": [*command, *args],
            "env": env,
            "cwd": container.get("workingDir") or "/",
            "hostname": self.name,
        }

    # ---- status -------------------------------------------------------------------------------------

    def _report(self) -> None:
        now = _now()
        all_ready = bool(self.mains) and all(self.ready.get(c.name, False) for c in self.mains)
        initialized = all(c.poll() == 0 for c in self.inits) and all(c.running() for c in self.sidecars)
        terminal = self.phase in ("Succeeded", "Failed")

        def cond(kind: str, ok: bool) -> dict[str, Any]:
            return {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": now}

        status: dict[str, Any] = {
            "phase": self.phase,
            "hostIP": self.runner.cluster.listen_host,
            "hostIPs": [{"ip": self.runner.cluster.listen_host}],
            "podIP": self.ip,
            "podIPs": [{"ip": self.ip}],
            "startTime": self.start_time,
            "conditions": [
                cond("PodScheduled", True),
                cond("Initialized", initialized or terminal),
                cond("ContainersReady", all_ready and not terminal),
                cond("Ready", all_ready and not terminal),
            ],
            "containerStatuses": [c.status() for c in self.mains],
        }
        if self.sidecars or self.inits:
            status["initContainerStatuses"] = [c.status() for c in [*self.sidecars, *self.inits]]
        if self.message:
            status["message"] = self.message
        key = json.dumps({k: v for k, v in status.items() if k != "conditions"}, sort_keys=True) + json.dumps(
            [(c["type"], c["status"]) for c in status["conditions"]]
        )
        if key == getattr(self, "_last", None):
            return
        code, body = self.runner.cluster.request(
            "PATCH",
            f"/api/v1/namespaces/{self.ns}/pods/{self.name}/status",
            {"status": status},
            content_type="application/merge-patch+json",
        )
        if code == 200:
            self._last = key
        elif code != 404:
            self.runner.log(f"status of {self.ns}/{self.name}: {code} {body}")

    # ---- lifecycle ----------------------------------------------------------------------------------

    def _wait(self, seconds: float) -> bool:
        """Sleep; True when the pod is being deleted."""
        return self.deleting.wait(seconds)

    def _lifecycle(self) -> None:
        self.start_time = _now()
        try:
            self._run()
        except Exception as exc:  # reported on the pod and in the runner's log
            self.runner.log(f"pod {self.ns}/{self.name}: {type(exc).__name__}: {exc}")
            self.message = f"host runner: {exc}"
            self.phase = "Failed"
            with contextlib.suppress(Exception):
                self._report()
        finally:
            self._stop()
            self.done.set()

    def _run(self) -> None:
        while not self._materialise():
            self._report()
            if self._wait(1.0):
                return
        for sidecar in self.sidecars:
            sidecar.start()
            while not sidecar.probe("startupProbe"):
                self._restart_if_exited(sidecar)
                self._report()
                if self._wait(0.5):
                    return
            self.ready[sidecar.name] = True
        for init in self.inits:
            init.start()
            while init.poll() is None:
                if self._wait(0.3):
                    return
            if init.exit_code != 0:
                self.phase = "Failed"
                self._report()
                return
        for main in self.mains:
            main.start()
        self.phase = "Running"
        never = self.pod["spec"].get("restartPolicy", "Always") == "Never"
        while True:
            for c in self.sidecars:
                self._restart_if_exited(c)
                self.ready[c.name] = c.running()
            exited = [c.poll() for c in self.mains]
            if never and all(code is not None for code in exited):
                self.phase = "Succeeded" if all(code == 0 for code in exited) else "Failed"
                for c in self.mains:
                    self.ready[c.name] = False
                self._report()
                return
            if not never:
                for c in self.mains:
                    self._restart_if_exited(c)
            for c in self.mains:
                self.ready[c.name] = c.probe("readinessProbe")
            self._report()
            if self._wait(0.5):
                return

    def _restart_if_exited(self, container: _Container) -> None:
        if container.poll() is not None and not self.deleting.is_set():
            container.restarts += 1
            time.sleep(min(10.0, float(container.restarts)))
            container.start()

    def _stop(self) -> None:
        grace = float(self.pod["spec"].get("terminationGracePeriodSeconds", 30))
        deadline = time.monotonic() + grace
        running = [c for c in [*self.mains, *self.inits] if c.running()]
        for c in running:  # preStop sleep, then SIGTERM (the kubelet's order)
            sleep = ((c.spec.get("lifecycle") or {}).get("preStop") or {}).get("sleep")
            if sleep and self.deleting.is_set():
                time.sleep(min(float(sleep["seconds"]), grace))
        for group in ([*self.mains, *self.inits], self.sidecars):  # sidecars stop after the containers
            for c in group:
                c.signal(signal.SIGTERM)
            while any(c.running() for c in group) and time.monotonic() < deadline:
                time.sleep(0.1)
            for c in group:
                c.signal(signal.SIGKILL)
                if c.proc is not None:
                    c.proc.wait()


class HostRunner:
    """The kubelet of node `host-runner` (see the module docstring). `start()`, then `stop()`."""

    def __init__(self, cluster: Cluster, workdir: Path | None = None) -> None:
        if cluster.netns is None:
            raise ClusterError("the host runner needs the cluster's network namespace")
        self.cluster = cluster
        self.netns = cluster.netns
        self.workdir = workdir or cluster.workdir / "hostrunner"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.hosts_file = self.workdir / "hosts"
        self.hosts_file.write_text("127.0.0.1 localhost\n")
        self.pods: dict[str, _PodRun] = {}
        self.finished: list[_PodRun] = []
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self._next_ip = 10
        self._rules: list[str] | None = None
        self._log = open(self.workdir / "runner.log", "a")  # noqa: SIM115 (closed in stop)
        self._lock = threading.Lock()
        self.kubernetes_service = ("10.96.0.1", 443)

    def log(self, line: str) -> None:
        with self._lock:
            self._log.write(f"{_now()} {line}\n")
            self._log.flush()

    # ---- node ---------------------------------------------------------------------------------------

    def _node_status(self) -> dict[str, Any]:
        now = _now()
        capacity = {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"}
        return {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [
                # No Hostname address: the API server would look it up in the host's DNS (`kubectl logs`).
                {"type": "InternalIP", "address": self.cluster.listen_host},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "host runner",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                },
                *[
                    {
                        "type": t,
                        "status": "False",
                        "reason": f"No{t}",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                    for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
                ],
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": self.cluster.version,
                "kubeProxyVersion": "",
                "containerRuntimeVersion": "hostrunner://0",
                "kernelVersion": "",
                "osImage": "host",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        }

    def _heartbeat(self) -> None:
        self.cluster.request(
            "PATCH",
            f"/api/v1/nodes/{NODE}/status",
            {"status": self._node_status()},
            content_type="application/merge-patch+json",
        )
        lease = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}"
        status, body = self.cluster.request("GET", lease)
        spec = {"holderIdentity": NODE, "leaseDurationSeconds": 40, "renewTime": _micro_now()}
        if status == 404:
            self.cluster.request(
                "POST",
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                {"metadata": {"name": NODE, "namespace": "kube-node-lease"}, "spec": spec},
            )
        elif status == 200:
            body["spec"].update(spec)
            self.cluster.request("PUT", lease, body)

    def _register(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": NODE,
                "labels": {
                    "kubernetes.io/hostname": NODE,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "host-runner",
                },
            },
        }
        status, body = self.cluster.request("POST", "/api/v1/nodes", node)
        if status not in (201, 409):
            raise ClusterError(f"register node {NODE}: {status} {body}")
        self._heartbeat()

        def schedulable() -> bool:
            _, got = self.cluster.request("GET", f"/api/v1/nodes/{NODE}")
            return not any(t.get("effect") == "NoSchedule" for t in got.get("spec", {}).get("taints", []))

        self.cluster.wait_for(f"node {NODE} Ready and untainted", schedulable, timeout=60)

    # ---- network ------------------------------------------------------------------------------------

    def _ip(self, *args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True)

    def _setup_network(self) -> None:
        ns = self.netns
        prefix = ns.ns_ip.rsplit(".", 1)[0]
        self._ip("route", "replace", f"{prefix}.0/24", "via", ns.ns_ip, "dev", ns.host_link)
        # A route for the ClusterIPs (the DNAT below rewrites them; without a route the connect fails first).
        self._ip("-n", ns.name, "route", "replace", "default", "via", ns.host_ip)
        self._iptables_restore("*nat\n:DRAC-SERVICES - [0:0]\nCOMMIT\n")
        jump = self.cluster.netns_argv(["iptables", "-t", "nat", "-C", "OUTPUT", "-j", "DRAC-SERVICES"])
        if subprocess.run(jump, capture_output=True).returncode != 0:
            self._iptables("-t", "nat", "-A", "OUTPUT", "-j", "DRAC-SERVICES")

    def _iptables(self, *args: str) -> None:
        subprocess.run(
            self.cluster.netns_argv(["iptables", *args]), check=True, capture_output=True, text=True
        )

    def _iptables_restore(self, text: str) -> None:
        argv = self.cluster.netns_argv(["iptables-restore", "--noflush"])
        subprocess.run(argv, input=text, check=True, capture_output=True, text=True)

    def _allocate_ip(self) -> str:
        prefix = self.netns.ns_ip.rsplit(".", 1)[0]
        while True:
            n = self._next_ip
            self._next_ip = 10 if n >= 250 else n + 1
            ip = f"{prefix}.{n}"
            if all(p.ip != ip for p in self.pods.values()):
                break
        link = self.netns.host_link[:-1] + "n"
        subprocess.run(
            ["ip", "-n", self.netns.name, "addr", "add", f"{ip}/32", "dev", link],
            capture_output=True,
            text=True,
        )
        return ip

    def _sync_services(self) -> None:
        """kube-proxy and DNS: a DNAT rule per Service port to one ready endpoint, names in /etc/hosts."""
        _, services = self.cluster.request("GET", "/api/v1/services")
        _, slices = self.cluster.request("GET", "/apis/discovery.k8s.io/v1/endpointslices")
        ready: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
        for es in slices.get("items", []):
            svc = es["metadata"].get("labels", {}).get("kubernetes.io/service-name")
            if not svc:
                continue
            for ep in es.get("endpoints") or []:
                if (ep.get("conditions") or {}).get("ready") is False:
                    continue
                for port in es.get("ports") or []:
                    ready.setdefault((es["metadata"]["namespace"], svc), []).append(
                        (ep["addresses"][0], port)
                    )
        rules: list[str] = []
        hosts = ["127.0.0.1 localhost"]
        for svc in services.get("items", []):
            ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
            cip = svc["spec"].get("clusterIP")
            if not cip or cip == "None":
                continue
            hosts.append(f"{cip} {name}.{ns}.svc {name}.{ns}.svc.cluster.local {name}.{ns}")
            for port in svc["spec"].get("ports", []):
                eps = [
                    (a, p) for a, p in ready.get((ns, name), []) if p.get("name", "") == port.get("name", "")
                ]
                if not eps:
                    continue
                addr, p = sorted(eps, key=lambda e: e[0])[0]
                rules.append(
                    f"-A DRAC-SERVICES -d {cip}/32 -p tcp --dport {port['port']} "
                    f"-j DNAT --to-destination {addr}:{p['port']}"
                )
        text = "\n".join(hosts) + "\n"
        if self.hosts_file.read_text() != text:
            with open(self.hosts_file, "r+") as f:  # same inode: the containers' bind mounts see it
                f.write(text)
                f.truncate()
        if rules != self._rules:
            self._iptables_restore(
                "*nat\n:DRAC-SERVICES - [0:0]\n" + "".join(r + "\n" for r in rules) + "COMMIT\n"
            )
            self._rules = rules

    # ---- loop ---------------------------------------------------------------------------------------

    def _loop(self) -> None:
        last_beat = time.monotonic()
        while not self.stopping.is_set():
            try:
                if time.monotonic() - last_beat > 10:
                    self._heartbeat()
                    last_beat = time.monotonic()
                self._sync_pods()
                self._sync_services()
            except Exception as exc:  # the loop keeps running; the log says why
                self.log(f"loop: {type(exc).__name__}: {exc}")
            self.stopping.wait(0.3)

    def _sync_pods(self) -> None:
        _, listed = self.cluster.request("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}")
        seen: set[str] = set()
        for pod in listed.get("items", []):
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            run = self.pods.get(uid)
            if run is None:
                if pod["status"].get("phase") in ("Succeeded", "Failed"):
                    continue
                run = _PodRun(self, pod, self._allocate_ip())
                self.pods[uid] = run
                self.log(f"start {run.ns}/{run.name} at {run.ip}")
                run.thread.start()
            if pod["metadata"].get("deletionTimestamp") and not run.deleting.is_set():
                run.deleting.set()
                threading.Thread(target=self._finish_delete, args=(run,), daemon=True).start()
        for uid, run in list(self.pods.items()):
            if uid not in seen:
                run.deleting.set()
                if run.done.is_set():
                    self.finished.append(self.pods.pop(uid))

    def _finish_delete(self, run: _PodRun) -> None:
        run.done.wait()
        self.cluster.request(
            "DELETE",
            f"/api/v1/namespaces/{run.ns}/pods/{run.name}",
            {
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": run.uid},
            },
        )
        self.log(f"deleted {run.ns}/{run.name}")

    def start(self) -> HostRunner:
        self._setup_network()
        self._register()
        self._sync_services()
        thread = threading.Thread(target=self._loop, name="hostrunner", daemon=True)
        thread.start()
        self.threads.append(thread)
        return self

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=10)
        for run in list(self.pods.values()):
            run.deleting.set()
        for run in list(self.pods.values()):
            run.done.wait(timeout=40)
        self._log.close()

    # ---- for tests ----------------------------------------------------------------------------------

    def container_logs(self) -> dict[str, str]:
        """Every container log of every pod this runner ran: `<ns>/<pod>/<container>` -> text."""
        out: dict[str, str] = {}
        for log in sorted((self.workdir / "pods").glob("*/logs/*.log")):
            ns, pod = log.parent.parent.name.split("_", 1)
            out[f"{ns}/{pod}/{log.stem}"] = log.read_text(errors="replace")
        return out

    def clear_roots(self) -> None:
        shutil.rmtree(self.workdir / "pods", ignore_errors=True)
