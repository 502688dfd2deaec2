"""`CelCache`: an LRU of compiled selectors keyed by (expression, environment), as upstream's `cel.Cache`,
bounded by an estimate of the memory its entries hold rather than by their count.

Unlike upstream (which caches successes only) failed compilations are cached too: a result is a pure function
of its key, and the webhook re-validates the same bad selector on every retry of an apply. Entries are weighed
by `entry_bytes`: expressions are at most 10 KiB but their checked ASTs and programs vary by far more, so an
entry count alone would not bound the process's memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from resourceapi.cel.compiler import CompileResult, compile_selector
from resourceapi.cel.env import EnvKey
from resourceapi.gates import FeatureGates
from resourceapi.releases import release

# 32 MiB: about 1,300 typical selectors with their evaluation programs prepared (the webhook never prepares
# them: about 3,000 there). Each webhook worker process holds one, with its 8 MiB front cache: two workers
# stay well inside a 256-512 MiB container.
DEFAULT_MAX_BYTES = 32 * 1024 * 1024

# Measured with cel-expr-python 0.1.3 (RSS growth per cached entry): a checked selector holds about 12 bytes
# of Python/upb objects per byte of serialized AST, its prepared evaluation program as much again, plus a
# fixed few KiB of objects; a failed compilation holds its key and messages.
_FIXED_BYTES = 4096
_PER_AST_BYTE = 24
_PER_TEXT_BYTE = 4
_FAILED_FIXED_BYTES = 1024


def program_bytes(expression: str, ast_size: int | None, message_chars: int = 0) -> int:
    """Estimated memory of one cached compilation: `ast_size` of the checked AST (None when it failed, with
    `message_chars` of error text), the expression as the key."""
    text = len(expression.encode("utf-8", "surrogatepass"))
    if ast_size is None:
        return _FAILED_FIXED_BYTES + _PER_TEXT_BYTE * (text + message_chars)
    return _FIXED_BYTES + _PER_AST_BYTE * ast_size + _PER_TEXT_BYTE * text


def entry_bytes(result: CompileResult) -> int:
    """Estimated memory held by one cached compile result (key included), in bytes."""
    if result.program is None:
        return program_bytes(result.expression, None, sum(len(issue.detail) for issue in result.issues))
    return program_bytes(result.expression, result.program.ast_size())


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int
    size: int
    bytes: int = 0


class CelCache:
    """Thread-safe LRU of `CompileResult`s holding at most `max_bytes` (estimated, `entry_bytes`); least
    recently used evicted first. An entry larger than the whole budget is returned but not kept."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, EnvKey, bool], tuple[CompileResult, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def compile(self, expression: str, gates: FeatureGates, *, stored: bool = False) -> CompileResult:
        """`compile_selector`, answered from the cache when this (expression, environment, cost model) was
        seen (the cost model differs by release: `Release.cel_url_sizes`)."""
        key = (expression, EnvKey.for_gates(gates, stored), release(gates.release).cel_url_sizes)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                return hit[0]
            self._misses += 1
        result = compile_selector(expression, gates, stored=stored)
        weight = entry_bytes(result)
        if weight > self.max_bytes:
            return result
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._bytes -= previous[1]
            self._entries[key] = (result, weight)
            self._bytes += weight
            while self._bytes > self.max_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted
        return result

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, len(self._entries), self._bytes)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
