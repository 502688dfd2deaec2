"""One container of a pod the host runner runs: build its file system view, then exec its command.

    ip netns exec NS unshare --mount --propagation private -- python -m realcluster.podexec SPEC.json

Runs as root in a private mount namespace (nothing here is seen outside it). The view is the host's own file
system, rebuilt on a tmpfs root: every top-level entry of `/` bind-mounted back (recursively), then each
volume bind-mounted at its `mountPath`. A mount path whose directories do not exist on the host (`/probe`,
`/etc/dra-capacity/tls`) is made by *shadowing* its deepest existing ancestor: a tmpfs over it, each of the
ancestor's entries bind-mounted back, the missing directories created in the tmpfs. The host's own file
system is never written. The product image is the worktree's virtualenv, mounted at `/opt/dra-capacity`
(the Dockerfile's layout); `/etc/hosts` is the runner's Service name file. Then `chroot` and `exec`.

SPEC: {"root": dir, "binds": [[source, mountPath], ...], "argv": [...], "env": {...}, "cwd": "/",
"hostname": pod name}
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path

MS_BIND = 4096
MS_REC = 16384
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, fstype: str | None, flags: int) -> None:
    if _libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags, None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def _populate(host_dir: str, target: str) -> None:
    """A tmpfs at `target` holding every entry of `host_dir`, each bind-mounted back."""
    _mount("tmpfs", target, "tmpfs", 0)
    for entry in sorted(os.listdir(host_dir)):
        src = os.path.join(host_dir, entry)
        dst = os.path.join(target, entry)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        elif os.path.isdir(src):
            os.mkdir(dst)
            _mount(src, dst, None, MS_BIND | MS_REC)
        else:
            Path(dst).touch()
            _mount(src, dst, None, MS_BIND)


def _in_root(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _bind_at(root: str, source: str, mount_path: str, shadowed: set[str]) -> None:
    host_path = os.path.realpath(
        mount_path
    )  # /var/run/... -> /run/... (the symlink resolves in the root too)
    existing = host_path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if existing != host_path and existing != "/" and existing not in shadowed:
        _populate(existing, _in_root(root, existing))
        shadowed.add(existing)
    target = _in_root(root, host_path)
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            Path(target).touch()
    _mount(source, target, None, MS_BIND | MS_REC)


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    root = spec["root"]
    os.makedirs(root, exist_ok=True)
    _populate("/", root)
    shadowed: set[str] = set()
    # Parents before children (a mount under another volume's path comes after it).
    for source, mount_path in sorted(spec["binds"], key=lambda b: b[1].count("/")):
        _bind_at(root, source, mount_path, shadowed)
    hostname = spec["hostname"].encode()
    if _libc.sethostname(hostname, len(hostname)) != 0:  # a pod's hostname is its name (own UTS namespace)
        raise OSError(ctypes.get_errno(), "sethostname")
    os.chroot(root)
    os.chdir(spec.get("cwd") or "/")
    argv = spec["argv"]
    os.execvpe(argv[0], argv, spec["env"])


if __name__ == "__main__":
    main()
