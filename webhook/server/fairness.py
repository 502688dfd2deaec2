"""Per-source fairness under the connection cap: who gets a slot when the listener is full.

A single global cap closed whichever connection arrived over it, so one source holding the listener (slowloris
connections, half-open TLS handshakes) made every other source's fresh connections fail. The policy here
decides per source instead, from records of the connections alive (pure: no sockets, tested with fakes).

Ideas taken:

* From Envoy's overload manager (`envoy.resource_monitors.downstream_connections` and its
  "reset streams" overload action): under pressure, reclaim from the consumers that hold the most rather than
  refuse the newcomer; and prefer to reclaim what is cheapest to lose, a connection still in its TLS handshake
  or with no request running, never one whose request is being answered.
* From kube-apiserver's API Priority and Fairness: sources are flows, and each flow gets a bounded share
  (`max_per_source`, `max_handshakes_per_source`) so no flow can take all seats; an exempt priority level
  (protected sources: the API server's addresses) is never evicted and has seats of its own
  (`reserved`) that other flows cannot take. Eviction only goes to a flow holding more than the newcomer's,
  which is max-min fairness without APF's queues (a TCP connection cannot wait in a queue cheaply).

An IPv6 source counts per /64: one host commonly holds a whole /64.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# What an unparsable peer (a Unix socket, an unknown address family) counts as.
UNKNOWN_SOURCE = "unknown"


def source_of(host: str | None) -> str:
    """The fairness key of a peer address: the IPv4 address itself, an IPv6 address's /64."""
    if not host:
        return UNKNOWN_SOURCE
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return UNKNOWN_SOURCE
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def parse_networks(text: str) -> tuple[Network, ...]:
    """Comma-separated CIDRs (or bare addresses) as networks; ValueError names the bad one."""
    networks: list[Network] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError as exc:
            raise ValueError(f"not a CIDR or address: {part!r}") from exc
    return tuple(networks)


def is_protected(host: str | None, protected: Sequence[Network]) -> bool:
    """Whether the peer address lies in one of the protected networks."""
    if not host or not protected:
        return False
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address.version == n.version and address in n for n in protected)


class Phase(Enum):
    """Where a connection is in its life, as far as eviction is concerned."""

    HANDSHAKE = "handshake"  # TLS not done: nothing served yet, cheapest to lose
    IDLE = "idle"  # no request running (waiting for one, or for its headers)
    BUSY = "busy"  # a request is being answered: never evicted


class Record(Protocol):
    """What the policy reads of one live connection."""

    @property
    def source(self) -> str: ...
    @property
    def protected(self) -> bool: ...
    @property
    def phase(self) -> Phase: ...
    @property
    def since(self) -> float: ...


class Action(Enum):
    ADMIT = "admit"
    EVICT = "evict"  # admit, and close `Decision.victim`
    REFUSE = "refuse"


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str = ""
    victim: Record | None = None


@dataclass(frozen=True)
class FairShare:
    """The shares: `limit` connections in all, `reserved` of them only for protected sources, at most
    `max_per_source` connections and `max_handshakes_per_source` TLS handshakes per unprotected source."""

    limit: int
    reserved: int
    max_per_source: int
    max_handshakes_per_source: int

    @classmethod
    def of(cls, limit: int, per_source: int = 0, protected: bool = False) -> FairShare:
        """Shares derived from the cap: an eighth reserved (when there are protected sources), a quarter per
        source, an eighth in TLS handshakes per source; `per_source` overrides the quarter."""
        reserved = max(1, limit // 8) if protected and limit > 1 else 0
        share = per_source if per_source > 0 else max(1, limit // 4)
        return cls(
            limit=limit,
            reserved=reserved,
            max_per_source=min(share, max(1, limit - reserved)),
            max_handshakes_per_source=max(1, min(share, limit // 8)),
        )

    def decide(self, source: str, protected: bool, alive: Iterable[Record]) -> Decision:
        """What to do with a new connection from `source` given the connections `alive` now."""
        records = list(alive)
        total = len(records)
        if protected:
            if total < self.limit:
                return Decision(Action.ADMIT)
            victim = self._victim(records, newcomer_count=-1, exclude=None)
            if victim is None:
                return Decision(Action.REFUSE, "listener full of protected or busy connections")
            return Decision(Action.EVICT, "room for a protected source", victim)
        own = [r for r in records if not r.protected and r.source == source]
        if len(own) >= self.max_per_source:
            return Decision(Action.REFUSE, "source at its connection share")
        if sum(1 for r in own if r.phase is Phase.HANDSHAKE) >= self.max_handshakes_per_source:
            return Decision(Action.REFUSE, "source at its handshake share")
        unprotected = sum(1 for r in records if not r.protected)
        if total < self.limit and unprotected < self.limit - self.reserved:
            return Decision(Action.ADMIT)
        victim = self._victim(records, newcomer_count=len(own), exclude=source)
        if victim is None:
            return Decision(Action.REFUSE, "listener full and no source holds more")
        return Decision(Action.EVICT, "fair share", victim)

    @staticmethod
    def _victim(records: Sequence[Record], newcomer_count: int, exclude: str | None) -> Record | None:
        """An evictable connection (handshaking first, then idle, oldest first) of the unprotected source
        holding the most, provided it holds at least two more than the newcomer (else eviction would only
        swap who is short)."""
        counts: dict[str, int] = {}
        for r in records:
            if not r.protected:
                counts[r.source] = counts.get(r.source, 0) + 1
        for source, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            if source == exclude:
                continue
            if newcomer_count >= 0 and count < newcomer_count + 2:
                return None
            candidates = [
                r for r in records if not r.protected and r.source == source and r.phase is not Phase.BUSY
            ]
            if candidates:
                return min(candidates, key=lambda r: (r.phase is not Phase.HANDSHAKE, r.since))
        return None
