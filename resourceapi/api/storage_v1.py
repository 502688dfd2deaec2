"""The storage objects `simulate` reads for the volume plugins (PersistentVolumeClaim, PersistentVolume,
StorageClass, CSINode, CSIDriver, CSIStorageCapacity): only their metadata is modelled; the plugins read the
rest as decoded JSON (allocator/scheduling/volumes.py)."""

from __future__ import annotations

from pydantic import Field

from resourceapi.api.meta import ApiModel, ObjectMeta


class StorageObject(ApiModel):
    """Any of the storage kinds: metadata typed, every other field kept as given."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


STORAGE_KINDS: dict[str, str] = {
    "PersistentVolumeClaim": "v1",
    "PersistentVolume": "v1",
    "StorageClass": "storage.k8s.io/v1",
    "CSINode": "storage.k8s.io/v1",
    "CSIDriver": "storage.k8s.io/v1",
    "CSIStorageCapacity": "storage.k8s.io/v1",
}
NAMESPACED_STORAGE_KINDS = ("PersistentVolumeClaim", "CSIStorageCapacity")
