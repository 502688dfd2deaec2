"""One process's life cycle, as controller-runtime's Manager (`NewManager`, `Add`, `Start`) holds it.

A `Manager` owns what `bind`, `certs controller` and `serve` would otherwise each wire by hand: the stop
signals, the start and stop order of the runnables added to it, the health, readiness and metrics listener
(`procrt.health`; a second, metrics-only address as controller-runtime's metrics server), and, when given an
elector, leader election with its lost-lease exit (`procrt.leader`). A process whose work runs on an event
loop (`serve`) runs it with `run_async`, which gives it the stop event.

Runnables start in the order added, all at once (a standby keeps its views warm; `is_leader` gates its
writes), and stop in the reverse order; then the lease is released, the listener stops and the closers run.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Protocol

from procrt.health import PROMETHEUS_TEXT, Check, HealthListener
from procrt.leader import Leadership, exit_after_lost_lease
from procrt.signals import on_stop, stop_event

Address = tuple[str, int]


class ListenError(OSError):
    """A listener of the Manager could not bind; `address` says which (the cause's errno and text kept)."""

    def __init__(self, address: Address, cause: OSError) -> None:
        super().__init__(*cause.args)
        self.address = address


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
        health: Address | None = None,
        metrics: Callable[[], bytes] | None = None,
        metrics_content_type: str = PROMETHEUS_TEXT,
        metrics_listen: Address | None = None,
    ) -> None:
        """`health`: the listener's host and port (port 0 picks a free one); None runs no listener.
        `metrics_listen`: a second listener (the same paths), bound first, for metrics on an address of
        their own."""
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
        self._wake: Callable[[], None] = lambda: None

        def listener(address: Address | None, role: str) -> HealthListener | None:
            if address is None:
                return None
            return HealthListener(
                address[0],
                address[1],
                live=self._live,
                ready=self._ready,
                metrics=metrics,
                metrics_content_type=metrics_content_type,
                name=f"{name}-{role}",
            )

        self.metrics_listener = listener(metrics_listen, "metrics")
        self.health = listener(health, "health")

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
        elector.on_lost = self._lose

    def on_elected(self, callback: Callable[[], None]) -> None:
        """Call `callback` (on the elector's thread) each time this process takes the lease."""
        self._elected.append(callback)

    def is_leader(self) -> bool:
        """True while the lease is held; always, for a process not leader-elected."""
        return self.elector.is_leader() if self.elector is not None else True

    @property
    def health_port(self) -> int | None:
        return self.health.port if self.health is not None else None

    @property
    def metrics_port(self) -> int | None:
        return self.metrics_listener.port if self.metrics_listener is not None else None

    def _listeners(self) -> list[HealthListener]:
        return [x for x in (self.metrics_listener, self.health) if x is not None]

    def _started(self) -> None:
        for callback in self._elected:
            callback()

    def _lose(self) -> None:
        self.leadership.lose()
        self._wake()

    # --- life cycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Bind the listeners (`ListenError` when one cannot, before anything else started), then start the
        runnables in order and the elector."""
        for listener in self._listeners():
            try:
                listener.start()
            except OSError as exc:
                raise ListenError((listener.host, listener.port), exc) from exc
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

    def run_async(self, main: Callable[[asyncio.Event], Awaitable[int]]) -> int:
        """`run` for a process whose work runs on an event loop: `main(stop)` runs under asyncio to its exit
        status, `stop` being set on SIGTERM/SIGINT or a lost lease (then exit 1, as `run`); then stop
        everything. `main` calls `start` (`start_async`) once its own listener is bound."""

        async def body() -> int:
            stop = stop_event()
            loop = asyncio.get_running_loop()

            def wake() -> None:
                loop.call_soon_threadsafe(stop.set)

            self._wake = wake
            if self.leadership.lost.is_set():
                stop.set()
            return await main(stop)

        try:
            code = asyncio.run(body())
            if self.leadership.lost.is_set():
                exit_after_lost_lease(self.logger, self._kill)
            return code
        except KeyboardInterrupt:
            return 0
        finally:
            self._wake = lambda: None
            self.stop()

    async def start_async(self) -> None:
        """`start` from inside an event loop (the listeners bind on their own threads)."""
        await asyncio.to_thread(self.start)

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
        for listener in self._listeners():
            listener.stop()
        for close in self._closers:
            close()
