"""The allocator's fatal error (upstream: `Allocate` returning an error rather than "no fit")."""

from __future__ import annotations


class AllocationError(Exception):
    """A fatal allocation error with upstream's message.

    `node_failure` marks upstream's ErrFailedAllocationOnNode (invalid pools): unschedulable on this node
    only, other nodes may still be tried.
    """

    def __init__(self, message: str, *, node_failure: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.node_failure = node_failure
