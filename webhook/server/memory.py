"""Give memory back to the system after a burst: glibc's `malloc_trim`, called at most every few seconds.

CPython returns freed objects to its own arenas and to glibc, but glibc keeps freed heap pages (fragmented
arenas of the worker threads) mapped, so RSS stays at the peak of the largest review ever judged, or of the
largest burst of connections. After a large body is judged, and every 10 s after any work, `malloc_trim(0)`
hands the free pages back. Where glibc is not the allocator (musl, macOS), this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
import time
from collections.abc import Callable

# A large answer or body is what leaves large free blocks behind; smaller traffic is trimmed on the interval.
LARGE_BYTES = 256 * 1024
MIN_INTERVAL = 5.0


def _load_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


_TRIM = _load_trim()
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 128 * 1024


def pin_mmap_threshold(size: int = MMAP_THRESHOLD) -> bool:
    """Serve every allocation of `size` bytes and more from its own mapping, returned to the system when
    freed. glibc starts there but raises the threshold to the largest block freed so far (up to 32 MiB), so
    after one 8 MiB body every later body comes from the heap, where it fragments and stays. Setting it
    explicitly turns that adjustment off. False where glibc is not the allocator."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, size))


_lock = threading.Lock()
_last = 0.0
_pending = 0


def trim_now() -> bool:
    """Trim at once; True when glibc released something."""
    return bool(_TRIM(0)) if _TRIM is not None else False


def trim_if_due(now: float | None = None) -> None:
    """Collect and trim when work was done since the last trim and `MIN_INTERVAL` has passed (a periodic
    caller). The collection frees what only reference cycles kept alive (closed connections: transport and
    protocol refer to each other), which no trim can hand back while it is still allocated."""
    global _last, _pending
    now = time.monotonic() if now is None else now
    with _lock:
        if not _pending or now - _last < MIN_INTERVAL:
            return
        _pending, _last = 0, now
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)


def note_work(size: int) -> None:
    """Count `size` bytes of work done, for `trim_if_due`."""
    global _pending
    with _lock:
        _pending += size


def start_trimmer(interval: float = 2 * MIN_INTERVAL) -> None:
    """A daemon thread calling `trim_if_due` every `interval` seconds: memory freed by the last reviews of a
    burst goes back too, not only at the next large review."""

    def run() -> None:
        while True:
            time.sleep(interval)
            trim_if_due()

    threading.Thread(target=run, name="malloc-trim", daemon=True).start()


def trim_after_burst(size: int, now: float | None = None) -> None:
    """Note `size` bytes of work just finished; trim when enough has passed since the last trim."""
    global _last, _pending
    if _TRIM is None:
        return
    now = time.monotonic() if now is None else now
    with _lock:
        _pending += size
        if _pending < LARGE_BYTES or now - _last < MIN_INTERVAL:
            return
        _pending, _last = 0, now
    _TRIM(0)
