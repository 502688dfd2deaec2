"""Stop signals: SIGTERM and SIGINT end a process gracefully, the same way in every command."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def on_stop(callback: Callable[[], None]) -> None:
    """Call `callback` (from the main thread) on SIGTERM or SIGINT: for the threaded commands."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda *_: callback())


def stop_event() -> asyncio.Event:
    """An event set on SIGTERM or SIGINT, for a command running an event loop (call inside the loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop
