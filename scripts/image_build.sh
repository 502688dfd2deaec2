#!/usr/bin/env bash
# Build the dra-capacity image with podman (no Docker engine needed), as `make image` does.
#
# 1. Install podman, runc and mmdebstrap from Debian when missing (root; apt-get update first).
# 2. Use BASE_IMAGE when it is present or can be pulled; otherwise build LOCAL_BASE, a minimal Debian
#    bookworm root filesystem with python3 and its venv module, with mmdebstrap, and import it.
# 3. Pre-fetch the pinned wheels (and the build requirements) with the host's pip into build/wheelhouse;
#    the build stage then builds the project's own wheel and installs with no registry access (PIP_NO_INDEX).
# 4. podman --storage-driver vfs build --isolation chroot.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/dra-capacity:dev}
BASE_IMAGE=${BASE_IMAGE:-docker.io/library/python:3.11-slim-bookworm}
LOCAL_BASE=${LOCAL_BASE:-localhost/dra-capacity-base:bookworm}
PYTHON=${PYTHON:-python3}
PODMAN=(podman --storage-driver vfs)

log() { printf '==> %s\n' "$*" >&2; }

missing=()
for tool in podman runc mmdebstrap; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
    log "installing ${missing[*]} from Debian"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman runc mmdebstrap >/dev/null
fi

base=$BASE_IMAGE
if "${PODMAN[@]}" image exists "$base"; then
    log "base image $base is present"
elif timeout 45 "${PODMAN[@]}" pull -q "$base" >/dev/null 2>&1; then
    log "pulled $base"
else
    base=$LOCAL_BASE
    log "cannot pull $BASE_IMAGE; using the local Debian base $base"
    if ! "${PODMAN[@]}" image exists "$base"; then
        log "building $base with mmdebstrap (about a minute)"
        rootfs=$(mktemp --suffix=.tar)
        trap 'rm -f "$rootfs"' EXIT
        # minbase + python3 (full standard library) + venv (build stage) + CA certificates. Documentation,
        # manuals and locales are left out; apt lists are removed: the image never runs apt.
        mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
            --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
            --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
            --dpkgopt='path-exclude=/usr/share/info/*' \
            --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
            bookworm "$rootfs"
        "${PODMAN[@]}" import --quiet "$rootfs" "$base" >/dev/null
        rm -f "$rootfs"
        trap - EXIT
    fi
fi

log "fetching wheels into build/wheelhouse"
mkdir -p build/wheelhouse
"$PYTHON" -m pip wheel --quiet --wheel-dir build/wheelhouse . 'setuptools>=68' wheel >/dev/null

log "building $IMAGE on $base"
# --layers=false: no intermediate image per step (each one a full copy with vfs, about 350 MB; `COPY .` changes
# on every build, so they were never reused); the image the tag named before is removed once replaced.
previous=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
"${PODMAN[@]}" build --layers=false --isolation chroot --network host --build-arg "BASE_IMAGE=$base" \
    --build-arg PIP_NO_INDEX=1 -t "$IMAGE" .
current=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE")
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
    "${PODMAN[@]}" rmi "$previous" >/dev/null 2>&1 || true  # still used by a container: left alone
fi
"${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE" | awk -v img="$IMAGE" \
    '{printf "==> built %s: %.1f MB\n", img, $1 / 1e6}' >&2
