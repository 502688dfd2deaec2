"""One process's life cycle, as controller-runtime's Manager (`NewManager`, `Add`, `Start`) holds it.

A `Manager` owns what `bind`, `certs controller` and `serve` would otherwise each wire by hand: the stop
signals, the start and stop order of the runnables added to it, the health, readiness and metrics listener
(`procrt.health`), and, when given an elector, leader election with its lost-lease exit (`procrt.leader`).

Runnables start in the order added, all at once (a standby keeps its views warm; `is_leader` gates its
writes), and stop in the reverse order; then the lease is released, the listener stops and the closers run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from procrt.health import PROMETHEUS_TEXT, Check, HealthListener
from procrt.leader import Leadership, exit_after_lost_lease
from procrt.signals import on_stop


class Runnable(Protocol):
    """What the Manager starts and stops: work on threads of its own."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Elector(Protocol):
    """A Lease candidate renewing on a thread of its own (`kubeio.election.LeaderElector`)."""

    on_started: Callable[[], None] | None
    on_lost: Callable[[], None] | None

    def start(self) -> None: ...

    def stop(self, release: bool = True) -> None: ...

    def is_leader(self) -> bool: ...


class Manager:
    """The runnables, listener and election of one process; `start()` then `run()`, which stops it all."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        name: str,
        health: tuple[str, int] | None = None,
        metrics: Callable[[], bytes] | None = None,
        metrics_content_type: str = PROMETHEUS_TEXT,
    ) -> None:
        """`health`: the listener's host and port (port 0 picks a free one); None runs no listener."""
        self.logger = logger
        self.done = threading.Event()
        self.leadership = Leadership(self.done)
        self.elector: Elector | None = None
        self._live: list[Check] = []
        self._ready: list[Check] = []
        self._runnables: list[Runnable] = []
        self._kills: list[Callable[[], None]] = []
        self._elected: list[Callable[[], None]] = []
        self._closers: list[Callable[[], None]] = []
        self.health: HealthListener | None = None
        if health is not None:
            self.health = HealthListener(
                health[0],
                health[1],
                live=self._live,
                ready=self._ready,
                metrics=metrics,
                metrics_content_type=metrics_content_type,
                name=f"{name}-health",
            )

    # --- wiring ---------------------------------------------------------------------------------------------

    def add(self, runnable: Runnable, *, kill: Callable[[], None] | None = None) -> None:
        """Start `runnable` with the process; `kill` stops its writes at once when the lease is lost."""
        self._runnables.append(runnable)
        if kill is not None:
            self._kills.append(kill)

    def add_healthz_check(self, check: Check) -> None:
        self._live.append(check)

    def add_readyz_check(self, check: Check) -> None:
        self._ready.append(check)

    def add_closer(self, close: Callable[[], None]) -> None:
        """Run `close` last on a clean stop (a cluster connection)."""
        self._closers.append(close)

    def elect(self, elector: Elector) -> None:
        """Run leader-elected: a lost lease ends the process with exit 1 (`procrt.leader`)."""
        self.elector = elector
        elector.on_started = self._started
        elector.on_lost = self.leadership.lose

    def on_elected(self, callback: Callable[[], None]) -> None:
        """Call `callback` (on the elector's thread) each time this process takes the lease."""
        self._elected.append(callback)

    def is_leader(self) -> bool:
        """True while the lease is held; always, for a process not leader-elected."""
        return self.elector.is_leader() if self.elector is not None else True

    @property
    def health_port(self) -> int | None:
        return self.health.port if self.health is not None else None

    def _started(self) -> None:
        for callback in self._elected:
            callback()

    # --- life cycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Bind the listener (OSError when it cannot, before anything else started), then start the
        runnables in order and the elector."""
        if self.health is not None:
            self.health.start()
        for runnable in self._runnables:
            runnable.start()
        if self.elector is not None:
            self.elector.start()

    def run(self, main: Callable[[], int] | None = None) -> int:
        """Run `main` to its exit status, else wait for SIGTERM/SIGINT (0) or a lost lease (exit 1 at once,
        without cleanup that could write); then stop everything."""
        code = 0
        try:
            if main is not None:
                code = main()
            else:
                on_stop(self.done.set)
                self.done.wait()
                if self.leadership.lost.is_set():
                    exit_after_lost_lease(self.logger, self._kill)
        finally:
            self.stop()
        return code

    def _kill(self) -> None:
        for kill in self._kills:
            kill()

    def stop(self) -> None:
        """Stop the runnables in reverse order, release the lease (unless lost), stop the listener, close."""
        self.done.set()
        for runnable in reversed(self._runnables):
            runnable.stop()
        if self.elector is not None:
            self.elector.stop(release=not self.leadership.lost.is_set())
        if self.health is not None:
            self.health.stop()
        for close in self._closers:
            close()
