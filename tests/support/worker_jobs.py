"""Jobs a test hands to the webhook's worker processes. They live here, in an importable module, because a
worker unpickles a job by its module's name, and a test module under `--import-mode=importlib` has none."""

from __future__ import annotations

import os

_hoard: list[bytes] = []


def grow(size: int) -> int:
    """Keep `size` bytes alive in the worker (what fragmentation does to a worker after a large review)."""
    _hoard.append(os.urandom(size))
    return os.getpid()
