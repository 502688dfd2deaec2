"""Per-source fairness under the connection cap (webhook/server/fairness.py, webhook/server/connections.py).

* the policy, pure, over fake connection records: a source's share, eviction from the source holding the
  most (handshaking first, then idle, never busy), protected sources never evicted and with room reserved;
* the fairness key: an IPv4 address, an IPv6 /64;
* over real TLS on loopback: an attacker on 127.0.0.2 holding the whole listener, and fresh connections from
  127.0.0.1 still succeed, the attacker named in the metric and the log.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ssl
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

import pytest
from support.server_harness import client_context, review, running_server, session

from dra_capacity.serve_cmd import add_limit_arguments, limits_of
from webhook.server.connections import ThrottleReport
from webhook.server.fairness import (
    Action,
    FairShare,
    Phase,
    is_protected,
    parse_networks,
    source_of,
)
from webhook.server.limits import ServerLimits

_clock = count()


@dataclass(frozen=True)
class Fake:
    source: str
    phase: Phase = Phase.IDLE
    protected: bool = False
    since: float = field(default_factory=lambda: float(next(_clock)))


def _many(source: str, n: int, phase: Phase = Phase.IDLE) -> list[Fake]:
    return [Fake(source, phase) for _ in range(n)]


SHARE = FairShare(limit=10, reserved=2, max_per_source=6, max_handshakes_per_source=3)


def test_under_the_cap_a_connection_is_admitted() -> None:
    assert SHARE.decide("a", False, _many("b", 3)).action is Action.ADMIT


def test_a_source_at_its_share_is_refused_even_with_room() -> None:
    decision = SHARE.decide("a", False, _many("a", 6))
    assert decision.action is Action.REFUSE
    assert "connection share" in decision.reason


def test_a_source_at_its_handshake_share_is_refused() -> None:
    decision = SHARE.decide("a", False, _many("a", 3, Phase.HANDSHAKE))
    assert decision.action is Action.REFUSE
    assert "handshake share" in decision.reason


def test_at_the_cap_the_newcomer_evicts_from_the_source_holding_the_most() -> None:
    alive = _many("b", 2) + _many("c", 6)
    decision = SHARE.decide("a", False, alive)
    assert decision.action is Action.EVICT
    assert decision.victim is not None and decision.victim.source == "c"


def test_a_handshaking_connection_goes_before_an_idle_one_and_the_oldest_first() -> None:
    idle = _many("c", 4)
    shaking = _many("c", 2, Phase.HANDSHAKE)
    decision = SHARE.decide("a", False, _many("b", 2) + idle + shaking)
    assert decision.victim is shaking[0]


def test_busy_connections_are_never_evicted() -> None:
    alive = _many("b", 2) + _many("c", 6, Phase.BUSY)
    decision = SHARE.decide("a", False, alive)
    assert decision.action is Action.EVICT
    assert decision.victim is not None and decision.victim.source == "b"
    assert (
        SHARE.decide("a", False, _many("c", 6, Phase.BUSY) + _many("d", 2, Phase.BUSY)).action
        is Action.REFUSE
    )


def test_no_eviction_when_nobody_holds_two_more_than_the_newcomer() -> None:
    alive = _many("a", 2) + _many("b", 3) + _many("c", 3)
    assert SHARE.decide("a", False, alive).action is Action.REFUSE


def test_room_is_reserved_for_protected_sources() -> None:
    # 8 unprotected connections fill what is theirs: a ninth waits for eviction (none holds more), while a
    # protected source still gets one of the two reserved seats.
    alive = _many("b", 4) + _many("c", 4)
    assert SHARE.decide("b", False, alive).action is Action.REFUSE
    assert SHARE.decide("apiserver", True, alive).action is Action.ADMIT


def test_protected_connections_are_never_evicted_and_protected_sources_evict_others() -> None:
    protected = [Fake("apiserver", protected=True) for _ in range(8)]
    alive = protected + _many("b", 2)
    decision = SHARE.decide("apiserver", True, alive)
    assert decision.action is Action.EVICT
    assert decision.victim is not None and decision.victim.source == "b"
    assert (
        SHARE.decide(
            "apiserver", True, [*protected, Fake("apiserver", protected=True), Fake("x", protected=True)]
        ).action
        is Action.REFUSE
    )
    # An unprotected newcomer never takes a protected seat, and b (one connection) holds no more than it.
    assert SHARE.decide("a", False, [*protected, *_many("b", 1), Fake("x", protected=True)]).action is (
        Action.REFUSE
    )


def test_shares_derive_from_the_cap() -> None:
    share = FairShare.of(512)
    assert (share.reserved, share.max_per_source, share.max_handshakes_per_source) == (0, 128, 64)
    assert FairShare.of(512, protected=True).reserved == 64
    assert FairShare.of(512, per_source=300).max_per_source == 300
    assert FairShare.of(3, per_source=3).max_per_source == 3


def test_the_fairness_key_is_the_address_or_the_ipv6_slash_64() -> None:
    assert source_of("127.0.0.2") == "127.0.0.2"
    assert source_of("2001:db8:1:2:aaaa::1") == source_of("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert source_of("2001:db8:1:3::1") != source_of("2001:db8:1:2::1")
    assert source_of("::ffff:10.0.0.1") == "10.0.0.1"
    assert source_of("fe80::1%eth0") == "fe80::/64"
    assert source_of(None) == source_of("not an address") == "unknown"


def test_protected_sources_are_cidrs() -> None:
    networks = parse_networks("10.0.0.0/8, 2001:db8::/32")
    assert is_protected("10.1.2.3", networks) and is_protected("::ffff:10.0.0.1", networks)
    assert is_protected("2001:db8::5", networks)
    assert not is_protected("127.0.0.1", networks) and not is_protected(None, networks)
    with pytest.raises(ValueError, match="bogus"):
        parse_networks("10.0.0.0/8,bogus")


def test_throttle_reports_are_rate_limited_and_labels_bounded() -> None:
    counted: list[tuple[str, str]] = []
    logged: list[str] = []

    class _Logger:
        def log(self, level: int, msg: str, *args: object, **kwargs: object) -> None:
            logged.append(msg)

        def isEnabledFor(self, level: int) -> bool:
            return True

    report = ThrottleReport(lambda s, a: counted.append((s, a)), _Logger(), max_sources=2)  # type: ignore[arg-type]
    for source in ("a", "a", "b", "c"):
        report(source, "refused", "why")
    assert counted == [("a", "refused"), ("a", "refused"), ("b", "refused"), ("other", "refused")]
    assert len(logged) == 3  # a once (rate-limited), b, c


async def _tls(port: int, tls_dir: Path, source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    ctx: ssl.SSLContext = client_context(tls_dir)
    return await asyncio.open_connection(
        "127.0.0.1", port, ssl=ctx, server_hostname="localhost", local_addr=(source, 0)
    )


async def test_an_attacker_over_the_cap_does_not_starve_fresh_connections(tls_dir: Path) -> None:
    limits = ServerLimits(max_connections=16, max_connections_per_source=16)
    async with running_server(tls_dir, limits=limits) as srv:
        port = srv.server.port
        held = []
        for _ in range(16 + 8):  # the whole listener, and more
            with contextlib.suppress(OSError, TimeoutError):
                held.append(await asyncio.wait_for(_tls(port, tls_dir, "127.0.0.2"), 5))
        half_open = []
        for _ in range(8):
            with contextlib.suppress(OSError):
                half_open.append(
                    await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
                )
        await asyncio.sleep(0.1)
        assert srv.server.guard.per_source().get("127.0.0.2", 0) == 16
        for i in range(10):  # each a fresh connection from 127.0.0.1
            async with session(tls_dir, force_close=True) as http:
                resp = await http.post(srv.url + "/validate", json=review(f"fresh-{i}"))
                assert resp.status == 200
                await resp.read()
        assert srv.server.guard.evicted >= 1  # the first took an attacker's seat, the next the one it freed
        metrics = srv.metrics.render().decode()
        assert (
            'dra_capacity_webhook_throttled_connections_total{action="evicted",source="127.0.0.2"}' in metrics
        )
        assert "connection source throttled" in srv.log.getvalue()
        assert "127.0.0.2" in srv.log.getvalue()
        for _, writer in held + half_open:
            writer.close()


def test_serve_flags_set_the_shares_and_protected_sources() -> None:
    parser = argparse.ArgumentParser()
    add_limit_arguments(parser)
    limits = limits_of(
        parser.parse_args(
            ["--protected-sources", "10.0.0.0/8,2001:db8::1", "--max-connections-per-source", "9"]
        )
    )
    assert limits.protected_sources == ("10.0.0.0/8", "2001:db8::1/128")
    assert limits.max_connections_per_source == 9
    assert limits_of(parser.parse_args([])).protected_sources == ()
    with pytest.raises(SystemExit):
        parser.parse_args(["--protected-sources", "10.0.0.0/8,nope"])
