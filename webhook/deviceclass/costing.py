"""What a DeviceClass review would still cost its handler, and the budget under which it is judged inline.

The server judges a small review on its event loop when the handler's estimate says it is cheap
(webhook/server/endpoints.py `Estimate`); what "cheap" means for DeviceClass admission lives here: CEL left
to compile and selector evaluations on published devices left to make (webhook/clusterview/cluster_view.py).
"""

from __future__ import annotations

from dataclasses import dataclass

# The inline budget, beside the server's body limit (webhook/server/limits.py `inline_max_body`).
# Measured: CEL compiles at 3-5 us per byte, a selector evaluation on a device takes about 13 us, a valid
# body's other checks 20-50 ns per byte (an invalid one's, with an error per field, 300-800 ns per byte); so
# an inline review holds the loop for about 5 ms at most, and everything costlier waits for a worker.
INLINE_COMPILE_BYTES = 1024
INLINE_EVALUATIONS = 256


@dataclass(frozen=True)
class Cost:
    """What judging one review would still cost a handler, beyond work linear in a small body: bytes of CEL
    expressions it has not compiled yet, and selector evaluations against published devices it has not
    cached."""

    compile_bytes: int = 0
    evaluations: int = 0

    @property
    def inline(self) -> bool:
        """Cheap enough to judge on the event loop."""
        return self.compile_bytes <= INLINE_COMPILE_BYTES and self.evaluations <= INLINE_EVALUATIONS

    @property
    def warm_steps(self) -> int:
        """Selector evaluations worth making on the loop for a review sent to a worker for them alone, so
        the cluster view warms up over the next reviews (none when its CEL alone is too costly)."""
        return INLINE_EVALUATIONS if self.compile_bytes <= INLINE_COMPILE_BYTES else 0


FREE = Cost()
