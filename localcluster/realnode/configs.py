"""The real node's configuration files: containerd's (version 3 TOML), the CNI bridge network, and the
kubelet's KubeletConfiguration. Each keeps every path under the node's roots (host.STATE_ROOT, RUN_ROOT) and
sets what these machines need (tooling.md, "A real node"): cgroup v1 with cgroupfs, runc without systemd,
`restrict_oom_score_adj` (no CAP_SYS_RESOURCE here), CDI on, the images imported by hand (no GC, no pulls).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import host

KUBELET_PORT = 10250
REAL_NODE_TAINT = "dra-capacity.io/real-node"
KUBELET_HEALTHZ_PORT = 10248


@dataclass(frozen=True)
class Paths:
    """Where one node's files go (all fixed: one node per machine)."""

    state: Path = host.STATE_ROOT
    run: Path = host.RUN_ROOT

    @property
    def containerd_socket(self) -> Path:
        return self.run / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.state / "kubelet"

    @property
    def cdi(self) -> Path:
        return self.state / "cdi"

    @property
    def cni_conf(self) -> Path:
        return self.state / "cni" / "net.d"

    @property
    def ipam(self) -> Path:
        return self.state / "cni" / "ipam"

    @property
    def pod_logs(self) -> Path:
        return self.state / "pod-logs"

    @property
    def registry(self) -> Path:
        return self.kubelet_root / "plugins_registry"

    def plugin_data(self, driver: str) -> Path:
        return self.kubelet_root / "plugins" / driver


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def _toml(tables: dict[str, dict[str, Any]], top: dict[str, Any]) -> str:
    lines = [f"{k} = {_toml_value(v)}" for k, v in top.items()]
    for table, values in tables.items():
        lines += ["", f"[{table}]", *(f"{k} = {_toml_value(v)}" for k, v in values.items())]
    return "\n".join(lines) + "\n"


def containerd_config(paths: Paths, bin_dir: Path, sandbox_image: str) -> str:
    cri_runtime = 'plugins."io.containerd.cri.v1.runtime"'
    runc = f"{cri_runtime}.containerd.runtimes.runc"
    return _toml(
        {
            "grpc": {"address": str(paths.containerd_socket)},
            "ttrpc": {"address": f"{paths.containerd_socket}.ttrpc"},
            'plugins."io.containerd.cri.v1.images"': {"snapshotter": "overlayfs"},
            'plugins."io.containerd.cri.v1.images".pinned_images': {"sandbox": sandbox_image},
            cri_runtime: {
                "enable_cdi": True,
                "cdi_spec_dirs": [str(paths.cdi)],
                # These VMs lack CAP_SYS_RESOURCE: lowering oom_score_adj fails every sandbox otherwise.
                "restrict_oom_score_adj": True,
                "netns_mounts_under_state_dir": True,
                "disable_apparmor": True,
            },
            f"{cri_runtime}.containerd": {"default_runtime_name": "runc"},
            runc: {"runtime_type": "io.containerd.runc.v2"},
            # runc's state under the node's root, not /run/containerd/runc.
            f"{runc}.options": {
                "BinaryName": "/usr/sbin/runc",
                "SystemdCgroup": False,
                "Root": str(paths.run / "runc"),
            },
            f"{cri_runtime}.cni": {"bin_dirs": ["/usr/lib/cni"], "conf_dir": str(paths.cni_conf)},
            'plugins."io.containerd.grpc.v1.cri"': {"stream_server_address": "127.0.0.1"},
        },
        {
            "version": 3,
            "root": str(paths.state / "containerd"),
            "state": str(paths.run / "containerd"),
            # Plugins that would write outside the node's roots (/opt/containerd, /var/run/nri).
            "disabled_plugins": [
                "io.containerd.internal.v1.opt",
                "io.containerd.nri.v1.nri",
                "io.containerd.image-verifier.v1.bindir",
            ],
        },
    )


def cni_config(paths: Paths) -> dict[str, Any]:
    """A bridge with the gateway address on the host side (so the API server reaches pod IPs), host-local
    IPAM keeping its state under the node's root; no masquerade, so no iptables rule is written."""
    return {
        "cniVersion": "1.0.0",
        "name": "dra-capacity-realnode",
        "plugins": [
            {
                "type": "bridge",
                "bridge": host.BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": host.POD_SUBNET}]],
                    # A default route through the bridge: pods reach the API server's Service ClusterIP.
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(paths.ipam),
                },
            },
            {"type": "loopback"},
        ],
    }


def kubelet_config(paths: Paths, sync_frequency: str = "10s", taint: bool = True) -> dict[str, Any]:
    """Serving on the node's bridge address only, anonymous requests allowed (the API server's `kubectl logs`
    calls carry no client certificate here; nothing outside this machine reaches that address), cgroups under
    host.CGROUP_ROOT."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": host.NODE_IP,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": KUBELET_HEALTHZ_PORT,
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "containerRuntimeEndpoint": f"unix://{paths.containerd_socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{host.CGROUP_ROOT}",
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "failCgroupV1": False,
        "failSwapOn": False,
        "protectKernelDefaults": False,
        # Else it writes KUBE-FIREWALL (with a DROP rule in INPUT and OUTPUT), KUBE-IPTABLES-HINT and
        # KUBE-KUBELET-CANARY chains into the host's iptables and never removes them
        # (pkg/kubelet/kubelet_network_linux.go); nothing here needs them (no kube-proxy).
        "makeIPTablesUtilChains": False,
        "podLogsDir": str(paths.pod_logs),
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "50Mi"},
        "syncFrequency": sync_frequency,
        "fileCheckFrequency": "5s",
        "nodeStatusUpdateFrequency": "5s",
        "serializeImagePulls": False,
        "maxPods": 110,
        "clusterDomain": "cluster.local",
        "resolvConf": "/etc/resolv.conf",
        "shutdownGracePeriod": "0s",
        "logging": {"verbosity": 2},
        # Only pods meant for the real node land there: the kwok examples' counts stay as they are.
        "registerWithTaints": [{"key": REAL_NODE_TAINT, "value": "true", "effect": "NoSchedule"}]
        if taint
        else [],
    }
