"""`CelCache`: an LRU of compiled selectors keyed by (expression, environment), as upstream's `cel.Cache`.

Unlike upstream (which caches successes only) failed compilations are cached too: a result is a pure function
of its key, and the webhook re-validates the same bad selector on every retry of an apply.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from resourceapi.cel.compiler import CompileResult, compile_selector
from resourceapi.cel.env import EnvKey
from resourceapi.gates import FeatureGates


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int
    size: int


class CelCache:
    """Thread-safe LRU of `CompileResult`s; `max_size` entries, least recently used evicted first."""

    def __init__(self, max_size: int = 1024) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.max_size = max_size
        self._entries: OrderedDict[tuple[str, EnvKey], CompileResult] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def compile(self, expression: str, gates: FeatureGates, *, stored: bool = False) -> CompileResult:
        """`compile_selector`, answered from the cache when this (expression, environment) was seen."""
        key = (expression, EnvKey.for_gates(gates, stored))
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                return hit
            self._misses += 1
        result = compile_selector(expression, gates, stored=stored)
        with self._lock:
            self._entries[key] = result
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_size:
                self._entries.popitem(last=False)
        return result

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, len(self._entries))

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
