"""Host ports, as the scheduler's NodePorts filter checks them (pkg/scheduler/framework/plugins/nodeports/
node_ports.go, and HostPortInfo.CheckConflict in pkg/scheduler/framework/types.go).

A pod wants the host ports of its regular containers (`hostPort > 0`; init containers' ports are not
counted, as upstream). With `hostNetwork: true` a container port is its host port (the API server defaults
`hostPort` to `containerPort`). An empty host IP means 0.0.0.0 and an empty protocol TCP; 0.0.0.0 conflicts
with every IP on the same protocol and port.
"""

from __future__ import annotations

from collections.abc import Iterable

from resourceapi.api.core_v1 import Pod

REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"

HostPort = tuple[str, str, int]  # (host IP, protocol, port)


def host_ports(pod: Pod) -> list[HostPort]:
    host_network = (pod.spec.model_extra or {}).get("hostNetwork") is True
    out: list[HostPort] = []
    for c in pod.spec.containers:
        ports = (c.model_extra or {}).get("ports")
        for port in ports if isinstance(ports, list) else []:
            if not isinstance(port, dict):
                continue
            number = port.get("hostPort")
            if number is None and host_network:
                number = port.get("containerPort")
            if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
                continue
            out.append((str(port.get("hostIP") or ANY_IP), str(port.get("protocol") or "TCP"), number))
    return out


def conflicts(used: Iterable[HostPort], wanted: HostPort) -> bool:
    """HostPortInfo.CheckConflict: the same protocol and port on the same IP, or either IP is 0.0.0.0."""
    ip, protocol, port = wanted
    for used_ip, used_protocol, used_port in used:
        if used_port == port and used_protocol == protocol and (ip == ANY_IP or used_ip in (ip, ANY_IP)):
            return True
    return False
