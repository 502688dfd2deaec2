"""The machine-wide side of a real node: the one-per-machine lock, the host sysctls a kubelet changes (saved
before, restored after, and at the next start after a crash), and the inventory of what a node leaves
behind (processes, mounts, cgroups, network namespaces, links), which teardown removes and the tier asserts
empty.

Every path here is fixed: port 10250, the kubelet's root directory, the cgroup root and the bridge are global,
so a second node on the same machine (`make run REALNODE=1` beside `make test`) must wait for the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Everything a node writes lives under these two (the second is short: Unix socket paths are limited to 108).
STATE_ROOT = Path(os.environ.get("DRA_CAPACITY_REALNODE_ROOT", "/var/lib/dra-capacity-realnode"))
RUN_ROOT = Path(os.environ.get("DRA_CAPACITY_REALNODE_RUN", "/run/dra-capacity-realnode"))
LOCK_PATH = Path("/run/lock/dra-capacity-realnode.lock")
SAVED_SYSCTLS = STATE_ROOT / "saved-sysctls.json"
# The kubelet sets these with protectKernelDefaults: false (pkg/kubelet/cm/container_manager_linux.go,
# setupKernelTunables); it refuses to start here with true.
SYSCTLS = ("vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops")
CGROUP_ROOT = "dra-capacity-realnode"
CGROUP_FS = Path("/sys/fs/cgroup")
BRIDGE = "drarn0"
POD_SUBNET = "10.251.0.0/24"
# The bridge's own address, made before the kubelet starts: the node's InternalIP (a kubelet refuses a
# loopback node IP), where it serves 10250, and the pods' gateway (CNI's isGateway finds it already there).
NODE_IP = "10.251.0.1"


class RealNodeUnavailable(RuntimeError):
    """A real node cannot run here: the message says why (not root, not built, a tool missing)."""


class RealNodeBusy(RealNodeUnavailable):
    """Another real node holds this machine's lock."""


# ---- the lock ----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def machine_lock(purpose: str) -> Iterator[None]:
    """Hold the one-real-node-per-machine lock; raise `RealNodeBusy` naming its holder when it is taken."""
    LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "unknown"
            raise RealNodeBusy(
                f"another real node runs on this machine ({holder}); the lock {LOCK_PATH} is held. One at a "
                "time: port 10250, the kubelet's directories, the cgroup root, the bridge and the sysctls "
                "are machine-wide. Stop it, or wait for it to finish"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, {purpose}, since {time.strftime('%H:%M:%S')}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# ---- sysctls -----------------------------------------------------------------------------------------------


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def read_sysctls() -> dict[str, str]:
    return {name: _sysctl_path(name).read_text().strip() for name in SYSCTLS}


def save_sysctls() -> dict[str, str]:
    """Record the current values (before the kubelet starts); a record left by a crashed run is restored
    first, so the values saved are always the machine's own."""
    restore_sysctls()
    values = read_sysctls()
    SAVED_SYSCTLS.parent.mkdir(parents=True, exist_ok=True)
    SAVED_SYSCTLS.write_text(json.dumps(values))
    return values


def restore_sysctls() -> dict[str, str] | None:
    """Write back the saved values and forget them; None when nothing was saved."""
    try:
        values = json.loads(SAVED_SYSCTLS.read_text())
    except (OSError, ValueError):
        return None
    for name, value in values.items():
        _sysctl_path(name).write_text(f"{value}\n")
    SAVED_SYSCTLS.unlink()
    return dict(values)


# ---- what a node leaves behind -----------------------------------------------------------------------------


def _mountpoints() -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        points.append(point)
    return points


def our_mounts() -> list[str]:
    roots = (str(STATE_ROOT), str(RUN_ROOT))
    return [p for p in _mountpoints() if any(p == r or p.startswith(r + "/") for r in roots)]


def our_cgroups() -> list[Path]:
    """Every cgroup directory under the node's cgroup root, in each v1 hierarchy (deepest first)."""
    found: list[Path] = []
    if not CGROUP_FS.is_dir():
        return found
    for hierarchy in CGROUP_FS.iterdir():
        root = hierarchy / CGROUP_ROOT
        if root.is_dir():
            found.extend(p for p in root.rglob("*") if p.is_dir())
            found.append(root)
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def cgroup_pids() -> list[int]:
    pids: set[int] = set()
    for group in our_cgroups():
        with contextlib.suppress(OSError):
            pids.update(int(p) for p in (group / "cgroup.procs").read_text().split())
    return sorted(pids)


def processes_of(binaries: Iterable[Path]) -> list[int]:
    """PIDs whose executable is one of `binaries` (the node's own builds, in the cache: no other agent runs
    those files)."""
    wanted = {str(b) for b in binaries}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.readlink(entry / "exe") in wanted:
                pids.append(int(entry.name))
    return pids


def netns_names() -> set[str]:
    """The pods' network namespaces: containerd keeps them under its CRI state directory
    (`netns_mounts_under_state_dir`)."""
    return {str(p) for p in RUN_ROOT.glob("containerd/*/netns/*")}


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


@dataclass
class Leftovers:
    processes: list[int]
    mounts: list[str]
    cgroups: list[str]
    netns: list[str]
    links: list[str]
    iptables: list[str]
    files: list[str]
    sysctls: dict[str, tuple[str, str]]

    def empty(self) -> bool:
        return not any(self.__dict__.values())

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.__dict__.items() if v]
        return "; ".join(parts) or "nothing"


def leftovers(binaries: Iterable[Path], sysctls_before: dict[str, str]) -> Leftovers:
    """What is left of a node: the tier's teardown asserts this is empty."""
    now = read_sysctls()
    return Leftovers(
        processes=sorted(set(processes_of(binaries)) | set(cgroup_pids())),
        mounts=our_mounts(),
        cgroups=[str(p) for p in our_cgroups()],
        netns=sorted(netns_names()),
        links=[BRIDGE] if link_exists(BRIDGE) else [],
        iptables=iptables_chains() + our_rules(),
        files=stray_files(),
        sysctls={k: (sysctls_before[k], now[k]) for k in sysctls_before if now.get(k) != sysctls_before[k]},
    )


# What a kubelet with makeIPTablesUtilChains writes (pkg/kubelet/kubelet_network_linux.go): no other program
# here makes chains of these names, so any found are a kubelet's.
KUBELET_CHAINS = (
    ("filter", "KUBE-FIREWALL"),
    ("mangle", "KUBE-IPTABLES-HINT"),
    ("nat", "KUBE-KUBELET-CANARY"),
    ("mangle", "KUBE-KUBELET-CANARY"),
    ("filter", "KUBE-KUBELET-CANARY"),
)


def iptables_chains() -> list[str]:
    """The kubelet chains present, as `iptables:table/chain` (and ip6tables)."""
    found = []
    for tool in ("iptables", "ip6tables"):
        if shutil.which(tool) is None:
            continue
        for table, chain in KUBELET_CHAINS:
            done = subprocess.run([tool, "-w", "-t", table, "-S", chain], capture_output=True, text=True)
            if done.returncode == 0:
                found.append(f"{tool}:{table}/{chain}")
    return found


RULE_COMMENT = "dra-capacity-realnode"


def add_dnat(destination: str, port: int, target: str) -> None:
    """A nat PREROUTING rule sending pods' TCP to `destination:port` on to `target` (host:port): a Service
    ClusterIP without kube-proxy. Marked with RULE_COMMENT; teardown removes every rule so marked."""
    done = subprocess.run(
        [
            *("iptables", "-w", "-t", "nat", "-A", "PREROUTING", "-d", f"{destination}/32", "-p", "tcp"),
            *("--dport", str(port), "-m", "comment", "--comment", RULE_COMMENT, "-j", "DNAT"),
            *("--to-destination", target),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RealNodeUnavailable(f"iptables DNAT rule for {destination}:{port}: {done.stderr.strip()}")


def our_rules() -> list[str]:
    if shutil.which("iptables") is None:
        return []
    done = subprocess.run(["iptables", "-w", "-t", "nat", "-S", "PREROUTING"], capture_output=True, text=True)
    return [line for line in done.stdout.splitlines() if RULE_COMMENT in line]


def remove_iptables_chains() -> None:
    for rule in our_rules():
        subprocess.run(
            ["iptables", "-w", "-t", "nat", *shlex.split(rule.replace("-A", "-D", 1))], capture_output=True
        )
    for entry in iptables_chains():
        tool, rest = entry.split(":", 1)
        table, chain = rest.split("/", 1)
        if chain == "KUBE-FIREWALL":
            for parent in ("INPUT", "OUTPUT"):
                while (
                    subprocess.run(
                        [tool, "-w", "-t", table, "-D", parent, "-j", chain], capture_output=True
                    ).returncode
                    == 0
                ):
                    pass
        subprocess.run([tool, "-w", "-t", table, "-F", chain], capture_output=True)
        subprocess.run([tool, "-w", "-t", table, "-X", chain], capture_output=True)


# Paths outside the roots that the node's programs hard-code: the shims' sockets (containerd's
# defaults.DefaultStateDir + /s), libcni's result cache, and the kubelet's device-plugin socket
# (pkg/kubelet/cm/devicemanager: /var/lib/kubelet/device-plugins, whatever --root-dir says).
SHIM_SOCKETS = Path("/run/containerd/s")
CNI_RESULTS = Path("/var/lib/cni/results")
DEVICE_PLUGIN_SOCKET = Path("/var/lib/kubelet/device-plugins/kubelet.sock")
CNI_NETWORK = "dra-capacity-realnode"


def _listening_sockets() -> set[str]:
    paths = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8:
            paths.add(fields[7])
    return paths


def stray_files() -> list[str]:
    """Files a node left outside its roots: shim and device-plugin sockets nobody listens on (no other
    containerd or kubelet runs here: these are a killed node's), and libcni's results for its network."""
    listening = _listening_sockets()
    found: list[Path] = []
    if SHIM_SOCKETS.is_dir():
        found += [p for p in SHIM_SOCKETS.iterdir() if p.is_socket() and str(p) not in listening]
    if DEVICE_PLUGIN_SOCKET.is_socket() and str(DEVICE_PLUGIN_SOCKET) not in listening:
        found.append(DEVICE_PLUGIN_SOCKET)
    if CNI_RESULTS.is_dir():
        ours = [p for p in CNI_RESULTS.glob(f"{CNI_NETWORK}-*")]
        ids = {p.name.removeprefix(f"{CNI_NETWORK}-").rsplit("-", 1)[0] for p in ours}
        found += ours + [p for p in CNI_RESULTS.glob("cni-loopback-*") if p.name.split("-")[2] in ids]
    return sorted(str(p) for p in found)


def remove_stray_files() -> None:
    for path in stray_files():
        with contextlib.suppress(OSError):
            Path(path).unlink()
    # Directories the node's programs made there, only when empty (rmdir never removes content).
    for directory in (
        SHIM_SOCKETS,
        SHIM_SOCKETS.parent / "runc" / "k8s.io",
        SHIM_SOCKETS.parent / "runc",
        SHIM_SOCKETS.parent,
        DEVICE_PLUGIN_SOCKET.parent,
        DEVICE_PLUGIN_SOCKET.parent.parent,
        CNI_RESULTS,
        CNI_RESULTS.parent,
    ):
        with contextlib.suppress(OSError):
            directory.rmdir()


def make_bridge() -> None:
    for args in (
        ["link", "add", BRIDGE, "type", "bridge"],
        ["addr", "add", f"{NODE_IP}/24", "dev", BRIDGE],
        ["link", "set", BRIDGE, "up"],
    ):
        done = subprocess.run(["ip", *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise RealNodeUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


def kill_pids(pids: Iterable[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def clean(binaries: Iterable[Path]) -> None:
    """Remove what a node left: processes of its binaries and in its cgroups (by PID), then mounts under its
    roots (deepest first: the pods' network namespaces among them), its cgroups, the bridge, a kubelet's
    iptables chains, and the stray files outside the roots (`stray_files`)."""
    binaries = list(binaries)
    for _ in range(3):
        pids = set(processes_of(binaries)) | set(cgroup_pids())
        if not pids:
            break
        kill_pids(pids)
        time.sleep(0.3)
    for point in sorted(our_mounts(), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)
    for group in our_cgroups():
        with contextlib.suppress(OSError):
            group.rmdir()
    for name in netns_names():
        with contextlib.suppress(OSError):
            Path(name).unlink()
    if link_exists(BRIDGE):
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True)
    remove_iptables_chains()
    remove_stray_files()
