"""The one identity rule of every process: the name it writes into a Lease and its logs."""

from __future__ import annotations

import os
import socket
import uuid


def identity(explicit: str | None = None) -> str:
    """`explicit` (a flag) when given, else the pod's name (`$POD_NAME`) or the host's with a fresh UUID, so
    two processes on one host never share a Lease and a restarted one never resumes its predecessor's."""
    if explicit:
        return explicit
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"
