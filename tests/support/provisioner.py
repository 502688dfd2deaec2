"""TEST DOUBLE of a dynamic provisioner on the real control plane: the smallest one that honours
`volume.kubernetes.io/selected-node`. A real CSI provisioner (the external-provisioner sidecar and a driver)
needs container images, and these machines have no registry. For each claim of its class with a selected
node, no volume and no selector (real provisioners refuse selectors), it makes a hostPath PV pinned to that
node, of the claim's size and access modes, pre-bound to the claim; the real PV controller then binds the
two, as it does for a real provisioner's PV."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from localcluster.cluster import Cluster
from localcluster.objects import make_pv

SELECTED_NODE = "volume.kubernetes.io/selected-node"


def provision_once(cluster: Cluster, storage_class: str, provisioner: str) -> int:
    """One pass over the cluster's claims; returns how many PVs it created."""
    made = 0
    status, body = cluster.request("GET", "/api/v1/persistentvolumeclaims")
    for pvc in body.get("items", []) if status == 200 else []:
        meta, spec = pvc["metadata"], pvc["spec"]
        node = (meta.get("annotations") or {}).get(SELECTED_NODE)
        if spec.get("storageClassName") != storage_class or not node or spec.get("volumeName"):
            continue
        if spec.get("selector"):
            continue
        pv = (
            make_pv(f"pvc-{meta['uid']}")
            .storage_class(storage_class)
            .size(spec["resources"]["requests"]["storage"])
            .access_modes(*(spec.get("accessModes") or ["ReadWriteOnce"]))
            .node_affinity("kubernetes.io/hostname", node)
            .claim_ref(meta["namespace"], meta["name"], meta["uid"])
            .obj()
        )
        pv["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": provisioner}
        created, _ = cluster.request("POST", "/api/v1/persistentvolumes", pv)  # 409 once made: fine
        made += created == 201
    return made


@contextmanager
def running_provisioner(cluster: Cluster, storage_class: str, provisioner: str) -> Iterator[None]:
    """`provision_once` every 0.2 s on a thread, until the block ends."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(0.2):
            provision_once(cluster, storage_class, provisioner)

    thread = threading.Thread(target=run, name="provisioner-double", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
