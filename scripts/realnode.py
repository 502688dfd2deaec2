#!/usr/bin/env python3
"""Build what a real node needs (the `realnode` tier and `make run REALNODE=1`): the kubelet and the DRA test
plugin from `tests/realnode/k8s` (the control plane's `k8s.io/kubernetes` release: a kubelet is never newer
than its API server), containerd, ctr and the runc shim from `tests/realnode/containerd` (the Go module
proxy), and two OCI image archives: the pause image compiled from the Kubernetes module's
`build/pause/linux/pause.c`, and a workload image (Debian's busybox-static) that prints its environment.

    python3 scripts/realnode.py build   # `make realnode-bins`: build what is missing, print progress
    python3 scripts/realnode.py dir     # print the directory

Everything goes to `~/.cache/dra-capacity/realnode/<kubernetes version>/` (or `$DRA_CAPACITY_REALNODE_DIR`).
A binary that reports its pinned version (and, for the plugin, was built from the same sources) is not
rebuilt. Standard library only, as scripts/controlplane.py, whose Go helpers it uses.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import controlplane as cp

ROOT = cp.ROOT
K8S_MODULE = ROOT / "tests" / "realnode" / "k8s"
CONTAINERD_MODULE = ROOT / "tests" / "realnode" / "containerd"
CONTAINERD_TAGS = "no_devmapper no_zfs no_btrfs urfave_cli_no_docs"
WORKLOAD_IMAGE = "localhost/dra-capacity/env-printer:1"
# The workload: print the environment (the CDI variables the plugin injects), then idle until SIGTERM.
WORKLOAD_CMD = ["/bin/sh", "-c", "trap 'exit 0' TERM; env | sort; while :; do sleep 1 & wait $!; done"]
BUSYBOX = Path("/bin/busybox")
IMAGES_STAMP = "images.json"
IMAGE_FORMAT = 1  # bump when the image recipe changes


def log(message: str) -> None:
    print(f"[realnode {time.strftime('%H:%M:%S')}] {message}", flush=True)


def bin_dir() -> Path:
    override = os.environ.get("DRA_CAPACITY_REALNODE_DIR")
    if override:
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "dra-capacity" / "realnode" / cp.kubernetes_version()


def check_modules() -> str:
    """The node's module must pin the control plane's Kubernetes release (and its replaces)."""
    k8s = cp.kubernetes_version()
    mine = cp.module_version(K8S_MODULE, "k8s.io/kubernetes")
    if mine != k8s:
        raise cp.StepFailed(
            "check the node's release",
            f"{K8S_MODULE / 'go.mod'} requires k8s.io/kubernetes {mine} but the control plane is {k8s}: "
            "a kubelet must be the release of the API server it joins",
        )
    replaces = re.compile(r"^\t(k8s\.io/\S+ => k8s\.io/\S+ v\S+)$", re.MULTILINE)
    ours = set(replaces.findall((K8S_MODULE / "go.mod").read_text()))
    theirs = set(replaces.findall((cp.K8S_MODULE / "go.mod").read_text()))
    if ours != theirs:
        raise cp.StepFailed(
            "check the node's release",
            f"{K8S_MODULE / 'go.mod'}'s replaces differ from {cp.K8S_MODULE / 'go.mod'}'s: "
            f"{sorted(ours ^ theirs)[:5]}",
        )
    return k8s


def sources_digest(module: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(module.rglob("*")):
        if path.is_file() and path.suffix in (".go", ".mod", ".sum"):
            digest.update(path.relative_to(module).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def targets(k8s: str) -> list[cp.Target]:
    containerd = cp.module_version(CONTAINERD_MODULE, "github.com/containerd/containerd/v2")
    stamp = f"-X github.com/containerd/containerd/v2/version.Version={containerd}"
    return [
        cp.Target(
            name=f"kubelet {k8s}",
            module=K8S_MODULE,
            packages=("k8s.io/kubernetes/cmd/kubelet",),
            outputs=("kubelet",),
            version_flag="--version",
            expect=f"Kubernetes {k8s}",
            ldflags=f"-s -w -X k8s.io/component-base/version.gitVersion={k8s}",
        ),
        cp.Target(
            name=f"the DRA test plugin (sources {sources_digest(K8S_MODULE / 'draplugin')})",
            module=K8S_MODULE,
            packages=("./draplugin",),
            outputs=("draplugin",),
            version_flag="--version-stamp",
            expect=sources_digest(K8S_MODULE / "draplugin"),
            ldflags=f"-s -w -X main.versionStamp={sources_digest(K8S_MODULE / 'draplugin')}",
        ),
        cp.Target(
            name=f"containerd {containerd} (containerd, ctr)",
            module=CONTAINERD_MODULE,
            packages=(
                "github.com/containerd/containerd/v2/cmd/containerd",
                "github.com/containerd/containerd/v2/cmd/ctr",
            ),
            outputs=("containerd", "ctr"),
            version_flag="--version",
            expect=containerd,
            ldflags=f"-s -w {stamp}",
        ),
        cp.Target(
            name=f"containerd-shim-runc-v2 {containerd}",
            module=CONTAINERD_MODULE,
            packages=("github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",),
            outputs=("containerd-shim-runc-v2",),
            version_flag="-v",
            expect=containerd,
            ldflags=f"-s -w {stamp}",
        ),
    ]


def build_go(target: cp.Target, out: Path) -> None:
    """scripts/controlplane.py's build, with containerd's static, tagged flags where they apply."""
    env_before = dict(os.environ)
    try:
        if target.module == CONTAINERD_MODULE:
            os.environ["CGO_ENABLED"] = "0"
            tags = "no_grpc" if "shim" in target.outputs[0] else CONTAINERD_TAGS
            os.environ["GOFLAGS"] = (
                os.environ.get("GOFLAGS", "") + f" -tags={tags.replace(' ', ',')}"
            ).strip()
        cp.build_target(target, out)
    finally:
        os.environ.clear()
        os.environ.update(env_before)


# ---- images: OCI archives `ctr -n k8s.io images import` loads --------------------------------------------


def _layer(files: dict[str, tuple[bytes, int]], links: dict[str, str]) -> bytes:
    """An uncompressed layer tar: `files` (path -> content, mode) and symlinks, owned by root."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(p).parent) for p in [*files, *links]} - {"."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, (data, mode) in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
        for path, target in sorted(links.items()):
            info = tarfile.TarInfo(path)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def write_oci_archive(path: Path, name: str, layer: bytes, config: dict[str, object]) -> None:
    """An OCI image layout archive holding one single-layer image named `name`."""
    layer_gz = gzip.compress(layer, mtime=0)
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> dict[str, object]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}

    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            **blob(json.dumps(image_config).encode()),
        },
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **blob(layer_gz)}],
    }
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **blob(json.dumps(manifest).encode()),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name},
            }
        ],
    }
    tmp = path.with_suffix(".tmp")
    with tarfile.open(tmp, "w") as tar:
        entries = {
            "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
            "index.json": json.dumps(index).encode(),
        }
        entries.update({f"blobs/sha256/{d.removeprefix('sha256:')}": data for d, data in blobs.items()})
        for entry, data in entries.items():
            info = tarfile.TarInfo(entry)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, path)


def pause_tag() -> str:
    found = re.search(
        r"^TAG \?= (\S+)", (kubernetes_dir() / "build" / "pause" / "Makefile").read_text(), re.M
    )
    if not found:
        raise cp.StepFailed("read the pause tag", "build/pause/Makefile sets no TAG")
    return found.group(1)


def kubernetes_dir() -> Path:
    return Path(
        cp.run_go(
            "locate k8s.io/kubernetes", ["list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"], K8S_MODULE
        ).strip()
    )


def build_images(out: Path) -> dict[str, str]:
    started = time.monotonic()
    tag = pause_tag()
    pause_name = f"registry.k8s.io/pause:{tag}"
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "pause"
        source = kubernetes_dir() / "build" / "pause" / "linux" / "pause.c"
        log(f"build the pause image: gcc -Os -static {source}")
        done = subprocess.run(
            [
                "gcc",
                "-Os",
                "-Wall",
                "-Werror",
                "-static",
                f"-DVERSION=v{tag}-dra-capacity",
                "-o",
                str(binary),
                str(source),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise cp.StepFailed("build the pause image", f"gcc exited {done.returncode}: {done.stderr}")
        subprocess.run(["strip", str(binary)], check=False)
        write_oci_archive(
            out / "pause.tar",
            pause_name,
            _layer({"pause": (binary.read_bytes(), 0o755)}, {}),
            {"Entrypoint": ["/pause"], "User": "65535:65535"},
        )
    if not BUSYBOX.is_file():
        raise cp.StepFailed(
            "build the workload image",
            f"{BUSYBOX} is missing: `apt-get install busybox-static` (make does, as root)",
        )
    write_oci_archive(
        out / "workload.tar",
        WORKLOAD_IMAGE,
        _layer(
            {"bin/busybox": (BUSYBOX.read_bytes(), 0o755)},
            {"bin/sh": "busybox", "bin/sleep": "busybox", "bin/env": "busybox", "bin/sort": "busybox"},
        ),
        {"Cmd": WORKLOAD_CMD, "Env": ["PATH=/bin"]},
    )
    images = {"format": str(IMAGE_FORMAT), "pause": pause_name, "workload": WORKLOAD_IMAGE}
    (out / IMAGES_STAMP).write_text(json.dumps(images, indent=2))
    log(f"built the images in {time.monotonic() - started:.1f} s: {pause_name}, {WORKLOAD_IMAGE}")
    return images


def images_built(out: Path) -> bool:
    try:
        stamp = json.loads((out / IMAGES_STAMP).read_text())
    except (OSError, ValueError):
        return False
    return stamp.get("format") == str(IMAGE_FORMAT) and all(
        (out / f).is_file() for f in ("pause.tar", "workload.tar")
    )


def build(_: argparse.Namespace) -> int:
    out = bin_dir()
    out.mkdir(parents=True, exist_ok=True)
    log(f"the real node's binaries and images in {out}")
    started = time.monotonic()
    k8s = check_modules()
    checked_go = False
    for target in targets(k8s):
        if target.built(out):
            log(f"cached {target.name}")
            continue
        if not checked_go:
            log(f"using {cp.check_go()}")
            checked_go = True
        log(f"building {target.name} (cold, after the control plane: kubelet 2 min, containerd 4 min)")
        build_go(target, out)
    if images_built(out):
        log("cached the images")
    else:
        build_images(out)
    log(f"ready in {time.monotonic() - started:.0f} s: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


def print_dir(_: argparse.Namespace) -> int:
    print(bin_dir())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/realnode.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build what is missing").set_defaults(run=build)
    sub.add_parser("dir", help="print the directory").set_defaults(run=print_dir)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except cp.StepFailed as failed:
        log(f"FAILED at step {failed}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
