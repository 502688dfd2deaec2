#!/usr/bin/env bash
# Push the image `make image` built to a registry the cluster can pull from, as `make image-push` does:
#
#   make image-push REGISTRY=registry.example.com/team            # pushes registry.example.com/team/dra-capacity:<TAG>
#   helm install ... --set image.repository=registry.example.com/team/dra-capacity
#
# TAG defaults to the chart's appVersion, which is the tag the chart runs when image.tag is unset. Log in first
# (podman login REGISTRY-HOST) where the registry needs it; PUSH_FLAGS passes more flags to `podman push`
# (for example --tls-verify=false for a plain-HTTP registry on a lab network).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/dra-capacity:dev}
REGISTRY=${REGISTRY:-}
TAG=${TAG:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' charts/dra-capacity/Chart.yaml)}
PUSH_FLAGS=${PUSH_FLAGS:-}
PODMAN=(podman --storage-driver vfs)

if [[ -z $REGISTRY ]]; then
    echo "make image-push: set REGISTRY to where the cluster pulls from, for example" \
        "make image-push REGISTRY=registry.example.com/team" >&2
    exit 2
fi
if ! "${PODMAN[@]}" image exists "$IMAGE"; then
    echo "make image-push: no image $IMAGE here: build it first with make image" >&2
    exit 2
fi
target="${REGISTRY%/}/dra-capacity:$TAG"
"${PODMAN[@]}" tag "$IMAGE" "$target"
# shellcheck disable=SC2086  # PUSH_FLAGS is a list of flags
"${PODMAN[@]}" push $PUSH_FLAGS "$target"
echo "pushed $target; install with: helm install ... --set image.repository=${REGISTRY%/}/dra-capacity" \
    "--set image.tag=$TAG" >&2
