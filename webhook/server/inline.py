"""How much of the event loop's time slow inline reviews may take: a token bucket of seconds.

A review judged on the loop (webhook/server/admit.py, a small one its handler's estimate calls cheap:
webhook/server/endpoints.py) holds the loop that answers probes, TLS handshakes and every other request. An
everyday review takes a fraction of a millisecond; one that compiles new CEL, evaluates selectors on a cold
cluster view or carries hundreds of invalid fields takes a few milliseconds. Each inline review is timed (the
loop thread's CPU time, so a loop preempted on a busy node is not taken for a slow review), and what it took
beyond `free` seconds is charged to the allowance, which refills at `rate` seconds per second (and holds at
most one second's worth). While it is spent, every review goes to a worker: a flood of costly reviews is
judged off the loop, as it would be without the inline path, and everyday traffic keeps its fast path
otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class InlineAllowance:
    """Seconds of slow inline judging left; `open` while any remain."""

    def __init__(self, rate: float, free: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.free = free
        self._clock = clock
        self._tokens = rate
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.rate, self._tokens + (now - self._last) * self.rate)
        self._last = now

    def open(self) -> bool:
        """Whether a review may be judged on the loop now."""
        if self._tokens > 0:
            return True
        self._refill()
        return self._tokens > 0

    def charge(self, elapsed: float) -> None:
        """An inline step took `elapsed` seconds: what it took beyond `free` is spent."""
        if elapsed > self.free:
            self._refill()
            self._tokens -= elapsed - self.free

    @property
    def remaining(self) -> float:
        self._refill()
        return self._tokens
