#!/usr/bin/env python3
"""Build the real control plane the real-cluster tests run: kube-apiserver, kube-controller-manager and
kube-scheduler from `k8s.io/kubernetes`, etcd from `go.etcd.io/etcd/server/v3`, and kwok (the fake nodes'
lifecycle agent) from `sigs.k8s.io/kwok`, each from its Go module under `tests/controlplane/`.

    python3 scripts/controlplane.py build [--release 1.38]  # `make controlplane`: build what is missing
    python3 scripts/controlplane.py dir [--release 1.38]    # print the binaries' directory
    python3 scripts/controlplane.py gomod [--release 1.38]  # regenerate the release's go.mod from Kubernetes'

Each Kubernetes release is pinned once, in `RELEASES` below (an rc or GA is a one-line change there, then
`gomod --release X`); the default release (`DEFAULT_RELEASE`, the newest GA one) is the one `make test`'s
real-cluster tier runs. etcd and kwok are one build shared by all releases (copied into each release's
directory).

The binaries go to `~/.cache/dra-capacity/controlplane/<kubernetes version>/` (or
`$DRA_CAPACITY_CONTROLPLANE_DIR`), never into the work tree. A binary that exists and reports its pinned
version is not rebuilt, so a second build costs a few `--version` calls. A failed step is named and the exit
status is non-zero; a missing Go toolchain is an error.

Standard library only: `make controlplane` runs it before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ROOT / "tests" / "controlplane"


@dataclass(frozen=True)
class Pin:
    """One Kubernetes release's build: the k8s.io/kubernetes version, the Go toolchain (`GOTOOLCHAIN`; the go
    command fetches a named one from the module proxy), and its module directory under tests/controlplane/."""

    version: str
    toolchain: str
    module: str


# The one place the releases are pinned (localcluster/cluster.py reads this table too).
RELEASES: dict[str, Pin] = {
    "1.36": Pin("v1.36.3", "local", "k8s-1.36"),
    "1.37": Pin("v1.37.2", "local", "k8s"),
    "1.38": Pin("v1.38.0-beta.0", "go1.27.3", "k8s-1.38"),
}
DEFAULT_RELEASE = "1.37"
K8S_MODULE = MODULES / RELEASES[DEFAULT_RELEASE].module
K8S_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
# kwok's own "fast" stage set (kustomize/stage/fast): nodes Ready at once with a Lease heartbeat, pods
# Running at once, Job pods Succeeded, deleted pods gone. Copied from the module at build time, never edited.
KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
KWOK_STAGES_FILE = "kwok-stages.yaml"
MIN_GO = (1, 26)


class StepFailed(Exception):
    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"{step}: {detail}")
        self.step = step


def log(message: str) -> None:
    print(f"[controlplane {time.strftime('%H:%M:%S')}] {message}", flush=True)


def module_version(module_dir: Path, path: str) -> str:
    """The version `module_dir/go.mod` requires of module `path`."""
    text = (module_dir / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(path)}\s+(v\S+)", text, re.MULTILINE)
    if not found:
        raise StepFailed("read go.mod", f"{module_dir / 'go.mod'} requires no {path}")
    return found.group(1)


def pin(release: str = DEFAULT_RELEASE) -> Pin:
    found = RELEASES.get(release)
    if found is None:
        raise StepFailed("pick the release", f"unknown release {release!r}; known: {', '.join(RELEASES)}")
    return found


def module_dir(release: str = DEFAULT_RELEASE) -> Path:
    return MODULES / pin(release).module


def kubernetes_version(release: str = DEFAULT_RELEASE) -> str:
    """The release's pinned version, checked against its go.mod (a stale one is an error naming `gomod`)."""
    wanted = pin(release).version
    found = module_version(module_dir(release), "k8s.io/kubernetes")
    if found != wanted:
        raise StepFailed(
            "read go.mod",
            f"{module_dir(release) / 'go.mod'} requires k8s.io/kubernetes {found}, RELEASES pins {wanted}: "
            f"run `python3 scripts/controlplane.py gomod --release {release}`",
        )
    return found


def bin_dir(release: str = DEFAULT_RELEASE) -> Path:
    override = os.environ.get("DRA_CAPACITY_CONTROLPLANE_DIR")
    if override and release == DEFAULT_RELEASE:
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "dra-capacity" / "controlplane" / pin(release).version


@dataclass(frozen=True)
class Target:
    """One `go build` in one module: its binaries, and what each must print for `--version`."""

    name: str
    module: Path
    packages: tuple[str, ...]
    outputs: tuple[str, ...]
    version_flag: str
    expect: str
    ldflags: str
    toolchain: str = "local"

    def built(self, out: Path) -> bool:
        return all(reports_version(out / name, self.version_flag, self.expect) for name in self.outputs)


def reports_version(binary: Path, flag: str, expect: str) -> bool:
    if not os.access(binary, os.X_OK):
        return False
    try:
        done = subprocess.run([str(binary), flag], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return expect in done.stdout + done.stderr


def targets(release: str = DEFAULT_RELEASE) -> list[Target]:
    """The release's Kubernetes build, then etcd and kwok (built once, in the default release's directory)."""
    k8s = kubernetes_version(release)
    etcd = module_version(MODULES / "etcd", "go.etcd.io/etcd/server/v3")
    kwok = module_version(MODULES / "kwok", "sigs.k8s.io/kwok")
    return [
        Target(
            name=f"kubernetes {k8s} (kube-apiserver, kube-controller-manager, kube-scheduler)",
            module=module_dir(release),
            packages=tuple(f"k8s.io/kubernetes/cmd/{c}" for c in K8S_COMMANDS),
            outputs=K8S_COMMANDS,
            version_flag="--version",
            expect=f"Kubernetes {k8s}",
            ldflags=f"-s -w -X k8s.io/component-base/version.gitVersion={k8s}",
            toolchain=pin(release).toolchain,
        ),
        Target(
            name=f"etcd {etcd}",
            module=MODULES / "etcd",
            packages=(".",),
            outputs=("etcd",),
            version_flag="--version",
            expect=f"etcd Version: {etcd.removeprefix('v')}",
            ldflags="-s -w",
        ),
        Target(
            name=f"kwok {kwok}",
            module=MODULES / "kwok",
            packages=("sigs.k8s.io/kwok/cmd/kwok",),
            outputs=("kwok",),
            version_flag="--version",
            expect=kwok.removeprefix("v"),
            ldflags="-s -w",
        ),
    ]


def go_env(toolchain: str = "local") -> dict[str, str]:
    env = dict(os.environ)
    # The pinned toolchain (`local`: never fetch another); one module cache for all modules (the default
    # GOMODCACHE); a cache `rm -rf` can delete. `GOTOOLCHAIN` set by the caller wins only for `local` pins.
    env["GOTOOLCHAIN"] = toolchain if toolchain != "local" else env.get("GOTOOLCHAIN", "local")
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -modcacherw -buildvcs=false").strip()
    return env


def find_go() -> str | None:
    """`go` on PATH, else the official tarball's place (/usr/local/go/bin, where CI's PATH may not reach)."""
    found = shutil.which("go")
    if found is None and os.access("/usr/local/go/bin/go", os.X_OK):
        found = "/usr/local/go/bin/go"
    return found


def check_go(toolchain: str = "local") -> str:
    go = find_go()
    if go is None:
        raise StepFailed(
            "find Go",
            "no `go` on PATH. The real-cluster tier builds Kubernetes from its Go modules and needs Go "
            f"{MIN_GO[0]}.{MIN_GO[1]} or newer (https://go.dev/dl/); `make quick` runs without it",
        )
    done = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, env=go_env(toolchain))
    found = re.match(r"go(\d+)\.(\d+)", done.stdout.strip())
    if done.returncode != 0 or not found:
        raise StepFailed("find Go", f"`go env GOVERSION` failed: {done.stdout}{done.stderr}".strip())
    if (int(found.group(1)), int(found.group(2))) < MIN_GO:
        raise StepFailed(
            "find Go", f"{done.stdout.strip()} is too old: the modules need go{MIN_GO[0]}.{MIN_GO[1]}"
        )
    return done.stdout.strip()


def run_go(step: str, args: list[str], cwd: Path, toolchain: str = "local") -> str:
    log(f"{step}: go {' '.join(args)}  (in {cwd.relative_to(ROOT)})")
    done = subprocess.run(
        [find_go() or "go", *args], cwd=cwd, env=go_env(toolchain), capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise StepFailed(step, f"`go {' '.join(args)}` exited {done.returncode} (its output is above)")
    return done.stdout


def run_build(step: str, args: list[str], cwd: Path, toolchain: str = "local") -> None:
    """`go build -v ...`, printing a progress line every 30 s (packages built so far); on failure, Go's
    output."""
    log(f"{step}: go {' '.join(args)}  (in {cwd.relative_to(ROOT)})")
    started = last = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(
        [find_go() or "go", *args],
        cwd=cwd,
        env=go_env(toolchain),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            now = time.monotonic()
            if now - last >= 30:
                last = now
                log(f"{step}: {len(lines)} packages built, {(now - started) / 60:.1f} min")
        code = proc.wait()
    if code != 0:
        sys.stderr.write("".join(line for line in lines if not re.fullmatch(r"[\w./~-]+\n", line))[-20000:])
        raise StepFailed(step, f"`go {' '.join(args)}` exited {code} (its errors are above)")


def build_target(target: Target, out: Path) -> None:
    staging = out / ".building"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    started = time.monotonic()
    run_go(f"download {target.name}", ["mod", "download"], target.module, target.toolchain)
    output = f"{staging}/" if len(target.outputs) > 1 else str(staging / target.outputs[0])
    run_build(
        f"build {target.name}",
        ["build", "-v", "-trimpath", "-ldflags", target.ldflags, "-o", output, *target.packages],
        target.module,
        target.toolchain,
    )
    for name in target.outputs:
        os.replace(staging / name, out / name)
    shutil.rmtree(staging, ignore_errors=True)
    if not target.built(out):
        raise StepFailed(f"check {target.name}", f"a binary in {out} does not report {target.expect!r}")
    log(f"built {target.name} in {time.monotonic() - started:.0f} s")


def write_kwok_stages(out: Path) -> None:
    module_dir = run_go(
        "locate kwok's stages", ["list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok"], MODULES / "kwok"
    ).strip()
    parts = []
    for rel in KWOK_STAGES:
        path = Path(module_dir) / rel
        if not path.is_file():
            raise StepFailed("copy kwok's stages", f"{path} is missing from the kwok module")
        parts.append(f"# from sigs.k8s.io/kwok {rel}\n{path.read_text().strip()}\n")
    (out / KWOK_STAGES_FILE).write_text("---\n".join(parts))


def build(args: argparse.Namespace) -> int:
    """Build the release's Kubernetes binaries into its directory; etcd and kwok once, in the default
    release's directory, copied into another release's."""
    release = args.release
    out = bin_dir(release)
    out.mkdir(parents=True, exist_ok=True)
    shared = bin_dir(DEFAULT_RELEASE)
    shared.mkdir(parents=True, exist_ok=True)
    log(f"binaries in {out}")
    checked: set[str] = set()
    started = time.monotonic()
    for target in targets(release):
        into = out if target.module == module_dir(release) else shared
        if target.built(into):
            log(f"cached {target.name}")
        else:
            if target.toolchain not in checked:
                checked.add(target.toolchain)
                log(f"using {check_go(target.toolchain)}")
            log(f"building {target.name} (a cold Kubernetes build takes 10-25 min on 2 cores)")
            build_target(target, into)
        if into != out:
            for name in target.outputs:
                if not target.built(out):
                    shutil.copy2(into / name, out / name)
    if not (shared / KWOK_STAGES_FILE).is_file():
        if "local" not in checked:
            check_go()
        write_kwok_stages(shared)
        log(f"wrote {shared / KWOK_STAGES_FILE}")
    if out != shared and not (out / KWOK_STAGES_FILE).is_file():
        shutil.copy2(shared / KWOK_STAGES_FILE, out / KWOK_STAGES_FILE)
    log(f"ready in {time.monotonic() - started:.0f} s: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


def gomod(args: argparse.Namespace) -> int:
    """Rewrite the release's go.mod: require k8s.io/kubernetes at its pinned version, replace every staging
    module its go.mod lists at v0.0.0 by the matching v0.x.y, tool directives for the three commands, then
    `go mod tidy` (with the release's toolchain)."""
    release = args.release
    toolchain = pin(release).toolchain
    check_go(toolchain)
    version = pin(release).version
    target = module_dir(release)
    target.mkdir(parents=True, exist_ok=True)
    info = run_go(
        "download Kubernetes' go.mod",
        ["mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
        ROOT,
        toolchain,
    )
    found = re.search(r'"GoMod":\s*"([^"]+)"', info)
    if not found:
        raise StepFailed("download Kubernetes' go.mod", "`go mod download -json` names no GoMod")
    upstream = Path(found.group(1)).read_text()
    staging = sorted(set(re.findall(r"^\s*(k8s\.io/\S+) v0\.0\.0\s*$", upstream, re.MULTILINE)))
    if not staging:
        raise StepFailed("read Kubernetes' go.mod", "it lists no staging module at v0.0.0")
    go_line = re.search(r"^go (\S+)", upstream, re.MULTILINE)
    published = "v0." + version.removeprefix("v1.")
    lines = [
        "// Generated by `python3 scripts/controlplane.py gomod` from Kubernetes' go.mod; do not edit.",
        f"module dra-capacity.io/controlplane/{pin(release).module}",
        "",
        f"go {go_line.group(1) if go_line else '1.26.0'}",
        "",
        f"require k8s.io/kubernetes {version}",
        "",
        "tool (",
        *(f"\tk8s.io/kubernetes/cmd/{c}" for c in K8S_COMMANDS),
        ")",
        "",
        "replace (",
        *(f"\t{m} => {m} {published}" for m in staging),
        ")",
        "",
    ]
    (target / "go.mod").write_text("\n".join(lines))
    run_go("tidy", ["mod", "tidy"], target, toolchain)
    log(f"wrote {target / 'go.mod'}: {len(staging)} staging modules replaced by {published}")
    return 0


def print_dir(args: argparse.Namespace) -> int:
    print(bin_dir(args.release))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/controlplane.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, run, text in (
        ("build", build, "build the binaries that are missing"),
        ("dir", print_dir, "print the binaries' directory"),
        ("gomod", gomod, "regenerate the release's go.mod under tests/controlplane/"),
    ):
        command = sub.add_parser(name, help=text)
        command.add_argument(
            "--release", default=DEFAULT_RELEASE, choices=sorted(RELEASES), help="Kubernetes release"
        )
        command.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except StepFailed as failed:
        log(f"FAILED at step {failed}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
