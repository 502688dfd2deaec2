"""A network namespace with a veth pair to the host: where the product's processes listen so that a Service
can point at them.

Endpoints and EndpointSlices refuse loopback and link-local addresses, so a webhook Service cannot point at
127.0.0.1. Each harness takes one free /30 in 10.250.0.0/16 (`10.250.<slot>.0/30`): the host end is `.1`, the
namespace end `.2`. Traffic stays between this machine and its own namespaces. Needs root (CAP_NET_ADMIN).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

PREFIX = "drac"
SUBNET = "10.250"
SLOTS = range(16, 240)
# Slot ownership: `<slot>.pid` holds the owning harness's PID; a namespace whose owner is dead is stale.
LOCK_DIR = Path(os.environ.get("DRA_CAPACITY_NETNS_DIR", "/tmp/dra-capacity-netns"))


class NetnsUnavailable(RuntimeError):
    """Network namespaces cannot be created here (not root, no `ip`, no veth)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise NetnsUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip() or done.stdout.strip()}")
    return done


@dataclass(frozen=True)
class Netns:
    """One namespace: `name`, the host end `host_ip` and the namespace end `ns_ip` of its veth pair."""

    slot: int
    name: str
    host_link: str
    host_ip: str
    ns_ip: str

    def exec_argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the namespace (`ip netns exec NAME ...`)."""
        return ["ip", "netns", "exec", self.name, *argv]

    def pids(self) -> list[int]:
        done = _ip("netns", "pids", self.name, check=False)
        return [int(p) for p in done.stdout.split()]


def _owner_alive(slot: int) -> bool:
    try:
        pid = int((LOCK_DIR / f"{slot}.pid").read_text())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _names(slot: int) -> tuple[str, str, str]:
    return f"{PREFIX}-{slot}", f"{PREFIX}{slot}h", f"{PREFIX}{slot}n"


def _remove(slot: int) -> None:
    name, host_link, _ = _names(slot)
    _ip("netns", "del", name, check=False)
    _ip("link", "del", host_link, check=False)
    with contextlib.suppress(OSError):
        (LOCK_DIR / f"{slot}.pid").unlink()


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    with open(LOCK_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _reclaim_stale() -> None:
    """Delete every namespace of ours whose owner died (a run killed before its teardown); under the lock."""
    for name in _ip("netns", "list", check=False).stdout.split():
        slot = name.removeprefix(f"{PREFIX}-")
        if slot != name and slot.isdigit() and int(slot) in SLOTS and not _owner_alive(int(slot)):
            _remove(int(slot))


def reclaim_stale() -> None:
    """What a killed run left behind, removed (every harness start does this too); a no-op without root."""
    if os.geteuid() == 0:
        with _locked():
            _reclaim_stale()


def create(owner_pid: int | None = None) -> Netns:
    """Take a free slot (reclaiming every slot whose owner died), create its namespace and veth pair."""
    if os.geteuid() != 0:
        raise NetnsUnavailable("network namespaces need root")
    with _locked():
        _reclaim_stale()
        existing = set(_ip("netns", "list", check=False).stdout.split())
        used = set(
            re.findall(rf"inet {re.escape(SUBNET)}\.(\d+)\.", _ip("-o", "-4", "addr", check=False).stdout)
        )
        for slot in SLOTS:
            name, host_link, ns_link = _names(slot)
            if _owner_alive(slot):
                continue
            if name in existing or str(slot) in used:
                _remove(slot)
                if str(slot) in set(
                    re.findall(rf"inet {re.escape(SUBNET)}\.(\d+)\.", _ip("-o", "-4", "addr").stdout)
                ):
                    continue  # someone else's address: leave it alone
            (LOCK_DIR / f"{slot}.pid").write_text(str(owner_pid or os.getpid()))
            netns = Netns(slot, name, host_link, f"{SUBNET}.{slot}.1", f"{SUBNET}.{slot}.2")
            try:
                _ip("netns", "add", name)
                _ip("link", "add", host_link, "type", "veth", "peer", "name", ns_link, "netns", name)
                _ip("addr", "add", f"{netns.host_ip}/30", "dev", host_link)
                _ip("link", "set", host_link, "up")
                _ip("-n", name, "addr", "add", f"{netns.ns_ip}/30", "dev", ns_link)
                _ip("-n", name, "link", "set", ns_link, "up")
                _ip("-n", name, "link", "set", "lo", "up")
            except NetnsUnavailable:
                _remove(slot)
                raise
            return netns
    raise NetnsUnavailable(f"no free slot in {SUBNET}.{SLOTS.start}-{SLOTS.stop - 1}.0/30")


def set_owner(netns: Netns, pid: int) -> None:
    """Hand the slot to `pid` (a detached cluster's longest-lived process)."""
    with _locked():
        (LOCK_DIR / f"{netns.slot}.pid").write_text(str(pid))


def remove(netns: Netns) -> None:
    """Kill what still runs inside, delete the namespace and the host link, free the slot."""
    for pid in netns.pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    _remove(netns.slot)
