"""Leader-election glue, as controller-runtime's Manager has it: a leader that loses its lease stops at once.

The elector itself (a coordination.k8s.io/v1 Lease) is `kubeio.election`; this module holds what every
leader-elected process does around it; `manager.Manager.elect` wires it, so `bind` and `certs controller`
behave alike."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from procrt.logs import flush


class Leadership:
    """What a lost lease does: `lose` (the elector's callback) sets `lost` and `done`, which the process's
    main loop waits on, so the process can exit without another write."""

    def __init__(self, done: threading.Event) -> None:
        self.done = done
        self.lost = threading.Event()

    def lose(self) -> None:
        self.lost.set()
        self.done.set()


def exit_after_lost_lease(logger: logging.Logger, stop_writes: Callable[[], None]) -> None:
    """Stop every writer at once, as kube-scheduler does, log it, and exit 1 without running cleanup that
    could write: no thread blocked in a request may keep a former leader alive. The restart (a new pod
    process) starts as a standby with a fresh view."""
    stop_writes()
    logger.warning("lease lost: exiting so the process restarts as a standby")
    flush(logger)
    os._exit(1)
