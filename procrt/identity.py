"""The one identity rule of every process: the name it writes into a Lease, its Events and its logs."""

from __future__ import annotations

import os
import socket
import uuid


def instance_name() -> str:
    """The pod's name (`$POD_NAME`), else the host's: an Event's `reportingInstance` (`serve`)."""
    return os.environ.get("POD_NAME") or socket.gethostname()


def identity(explicit: str | None = None) -> str:
    """`explicit` (a flag) when given, else `instance_name()` with a fresh UUID, so two processes on one host
    never share a Lease and a restarted one never resumes its predecessor's."""
    if explicit:
        return explicit
    return f"{instance_name()}_{uuid.uuid4()}"
