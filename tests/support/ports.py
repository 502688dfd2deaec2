"""A free loopback port for the tests' servers: the kernel's pick from the ephemeral range, closed at once
(the harness's cluster ports come from `localcluster.cluster.free_port`, outside that range)."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
