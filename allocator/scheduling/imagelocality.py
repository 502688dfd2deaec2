"""kube-scheduler's ImageLocality score (v1.37.2
pkg/scheduler/framework/plugins/imagelocality/image_locality.go): a node scores by the size of the pod's
images it already holds (`status.images`), each scaled by the share of nodes that hold it, clamped to
[23 MiB, 1000 MiB times the image count] and mapped onto 0 to 100. The plugin has no NormalizeScore: the
score is summed as it is.

The image states follow pkg/scheduler/backend/cache/snapshot.go `getNodeImageStates`: every name of a node's
image maps to that node's size and to the number of nodes that list the name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from resourceapi.api.core_v1 import Node, Pod

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
MAX_SCORE = 100  # framework.MaxScore


def normalized_image_name(name: str) -> str:
    """normalizedImageName: a name without a tag (no `:` after the last `/`) gets `:latest`."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_priority(sum_scores: int, image_count: int) -> int:
    """calculatePriority: `sum_scores` clamped to [MIN_THRESHOLD, MAX_CONTAINER_THRESHOLD * image_count],
    scaled to 0..MAX_SCORE with integer division."""
    max_threshold = MAX_CONTAINER_THRESHOLD * image_count
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return MAX_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def scaled_image_score(size: int, num_nodes: int, total_num_nodes: int) -> int:
    """scaledImageScore: the image's size times the share of nodes holding it (float, truncated)."""
    return int(float(size) * (float(num_nodes) / float(total_num_nodes)))


def _names(node: Node) -> dict[str, int]:
    """Each image name the node lists -> its size in bytes."""
    out: dict[str, int] = {}
    for image in (node.status.images if node.status else None) or []:
        for name in image.names or []:
            out[name] = image.size_bytes or 0
    return out


def pod_images(pod: Pod) -> list[str]:
    """The pod's image sources, normalized, in sumImageScores' order: init containers, containers, then
    image volumes (KEP-4639). Repeats count each time, as upstream counts them."""
    out = [normalized_image_name(c.image or "") for c in pod.spec.init_containers or []]
    out += [normalized_image_name(c.image or "") for c in pod.spec.containers]
    for volume in (pod.spec.model_extra or {}).get("volumes") or []:
        image = volume.get("image") if isinstance(volume, Mapping) else None
        if isinstance(image, Mapping):
            out.append(normalized_image_name(str(image.get("reference") or "")))
    return out


@dataclass
class ImageStates:
    """Which nodes list which image names, and each node's sizes (the scheduler cache's imageStates)."""

    per_node: dict[str, dict[str, int]] = field(default_factory=dict)
    holders: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, nodes: Iterable[Node]) -> ImageStates:
        states = cls()
        for node in nodes:
            states.set_node(node)
        return states

    def set_node(self, node: Node) -> None:
        """Add or replace one node's images."""
        self.remove_node(node.name)
        names = _names(node)
        if names:
            self.per_node[node.name] = names
            for name in names:
                self.holders.setdefault(name, set()).add(node.name)

    def remove_node(self, node: str) -> None:
        for name in self.per_node.pop(node, {}):
            holders = self.holders.get(name)
            if holders is not None:
                holders.discard(node)
                if not holders:
                    del self.holders[name]

    def known(self, images: Iterable[str]) -> bool:
        """Whether some node lists one of `images` (else every node scores 0 and the plugin is moot)."""
        return any(i in self.holders for i in images)

    def score(self, images: list[str], node: str, total_num_nodes: int) -> int:
        """ImageLocality.Score of `node` for a pod with these (normalized) images."""
        sizes = self.per_node.get(node, {})
        total = 0
        for image in images:
            size = sizes.get(image)
            if size is not None:
                total += scaled_image_score(size, len(self.holders[image]), total_num_nodes)
        return calculate_priority(total, len(images))
