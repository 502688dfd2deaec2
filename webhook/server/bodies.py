"""Reading a request body against a slow or lying client: bytes are charged as they arrive, and a body must
keep a minimum rate after a short grace.

A client can declare any `Content-Length` and then trickle its body (one byte a second): charging the
declared length up front let four such connections hold the whole in-flight budget, so every legitimate
review got 429 (a byte-budget squat). Here each chunk is charged when it arrives (a chunked body too), and a
body that, `grace` seconds after its headers, has averaged less than `min_rate` bytes per second is refused
with 408. The rule does not depend on the client's address: kube-apiserver, the one legitimate client, pools
connections from one or a few addresses and must never be throttled for that.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from aiohttp import StreamReader


class BodyTooLarge(Exception):
    """More bytes arrived than the endpoint accepts."""


class BodyTooSlow(Exception):
    """The body fell below the minimum rate after the grace, or missed the deadline."""


async def read_body(
    content: StreamReader,
    *,
    limit: int,
    deadline: float,
    min_rate: int,
    grace: float,
    charge: Callable[[int], None],
    started: float | None = None,
) -> bytes:
    """The whole body from `content`, calling `charge(n)` for every `n` bytes received (it may raise, to
    refuse the request: the budget is spent). `deadline` is a `time.perf_counter()` instant. Raises
    BodyTooLarge past `limit` bytes, BodyTooSlow when the rate or the deadline is missed; a connection lost
    midway raises what aiohttp raises (ConnectionError, asyncio.IncompleteReadError...)."""
    start = time.perf_counter() if started is None else started
    parts: list[bytes] = []
    received = 0
    while not content.at_eof():
        # What is already buffered counts first: when this process was the slow one (a busy loop), the
        # client is not blamed for it.
        chunk = content.read_nowait()
        if not chunk:
            # The instant by which more bytes must have arrived: the grace, plus the time the bytes received
            # so far buy at the minimum rate.
            wait = min(start + grace + received / min_rate, deadline) - time.perf_counter()
            if wait <= 0:
                raise BodyTooSlow
            try:
                async with asyncio.timeout(wait):  # no task of its own, as wait_for makes (3.11)
                    chunk = await content.readany()
            except TimeoutError:
                continue  # one more look at the buffer, then the verdict
            if not chunk:
                break
        received += len(chunk)
        if received > limit:
            raise BodyTooLarge
        charge(len(chunk))
        parts.append(chunk)
    return b"".join(parts)
