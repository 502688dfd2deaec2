"""The resource types the kube-apiserver TEST DOUBLE serves, and their discovery documents.

Names, kinds, short names, verbs and scopes are those of Kubernetes 1.37
(`pkg/registry/*/rest/storage_*.go`, `staging/src/k8s.io/api/*/types.go`); discovery documents follow
`staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go` (APIResourceList, APIGroupList).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

KUBERNETES_VERSION = "v1.37.2"
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class ResourceType:
    """One served resource: its group/version/plural, kind, scope and the subresources it has."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    client_model: str
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    # Top-level fields whose change bumps metadata.generation; empty: the type has no generation.
    generation_fields: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    field_labels: tuple[str, ...] = ()
    # Another type's key when both are views of one storage (events.k8s.io/v1 Events are core Events).
    storage: str = ""

    @property
    def storage_key(self) -> str:
        return self.storage or self.key

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """`pods`, `deviceclasses.resource.k8s.io`: schema.GroupResource.String()."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """`Pod`, `DeviceClass.resource.k8s.io`: schema.GroupKind.String(), used in Invalid messages."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def base_path(self, namespace: str | None = None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"


_POD_FIELDS = (
    "spec.nodeName",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.restartPolicy",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)

TYPES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "namespaces", "namespace", "Namespace", False, "V1Namespace", ("ns",),
                 ("status", "finalize"), field_labels=("status.phase",)),
    ResourceType("", "v1", "nodes", "node", "Node", False, "V1Node", ("no",), ("status",),
                 field_labels=("spec.unschedulable",)),
    ResourceType("", "v1", "pods", "pod", "Pod", True, "V1Pod", ("po",), ("status", "binding"),
                 ("spec",), ("all",), _POD_FIELDS),
    ResourceType("", "v1", "events", "event", "Event", True, "CoreV1Event", ("ev",),
                 field_labels=_EVENT_FIELDS),
    ResourceType("", "v1", "secrets", "secret", "Secret", True, "V1Secret", field_labels=("type",)),
    ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", True, "V1ConfigMap", ("cm",)),
    ResourceType("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True, "V1ServiceAccount",
                 ("sa",)),
    ResourceType("events.k8s.io", "v1", "events", "event", "Event", True, "EventsV1Event", ("ev",),
                 field_labels=("regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                               "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
                               "reason", "reportingController", "type"),
                 storage="events"),
    ResourceType("coordination.k8s.io", "v1", "leases", "lease", "Lease", True, "V1Lease"),
    ResourceType("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", True,
                 "V1PodDisruptionBudget", ("pdb",), ("status",), generation_fields=("spec",)),
    ResourceType("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", True,
                 "V1PersistentVolumeClaim", ("pvc",), ("status",)),
    ResourceType("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", False,
                 "V1PersistentVolume", ("pv",), ("status",)),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", False,
                 "V1StorageClass", ("sc",)),
    ResourceType("storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", False, "V1CSINode"),
    ResourceType("storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", False, "V1CSIDriver"),
    ResourceType("storage.k8s.io", "v1", "csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity",
                 True, "V1CSIStorageCapacity"),
    ResourceType("resource.k8s.io", "v1", "deviceclasses", "deviceclass", "DeviceClass", False,
                 "V1DeviceClass", generation_fields=("spec",)),
    ResourceType("resource.k8s.io", "v1", "resourceslices", "resourceslice", "ResourceSlice", False,
                 "V1ResourceSlice", generation_fields=("spec",),
                 field_labels=("spec.nodeName", "spec.driver")),
    ResourceType("resource.k8s.io", "v1", "devicetaintrules", "devicetaintrule", "DeviceTaintRule", False,
                 "V1DeviceTaintRule", subresources=("status",), generation_fields=("spec",)),
    ResourceType("resource.k8s.io", "v1", "resourceclaims", "resourceclaim", "ResourceClaim", True,
                 "ResourceV1ResourceClaim", subresources=("status",), generation_fields=("spec",)),
    ResourceType("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                 "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", False,
                 "V1ValidatingWebhookConfiguration", generation_fields=("webhooks",),
                 categories=("api-extensions",)),
    ResourceType("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                 "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", False,
                 "V1MutatingWebhookConfiguration", generation_fields=("webhooks",),
                 categories=("api-extensions",)),
)  # fmt: skip

BY_KEY: dict[str, ResourceType] = {t.key: t for t in TYPES}
BY_GROUP_VERSION: dict[tuple[str, str], list[ResourceType]] = {}
for _t in TYPES:
    BY_GROUP_VERSION.setdefault((_t.group, _t.version), []).append(_t)


class UnknownResource(LookupError):
    """A resource name the double does not serve."""


def lookup(resource: str, group: str | None = None) -> ResourceType:
    """Resolve `pods`, `deviceclasses`, `events.events.k8s.io`, a kind (`Pod`) or a short name.

    A bare `events` is the core one, as kubectl resolves it.
    """
    if group is not None:
        key = f"{resource}.{group}" if group else resource
        if key in BY_KEY:
            return BY_KEY[key]
        raise UnknownResource(key)
    if resource in BY_KEY:
        return BY_KEY[resource]
    for t in TYPES:
        if resource in (t.kind, t.singular) or resource in t.short_names:
            return t
    for t in TYPES:
        if t.plural == resource:
            return t
    raise UnknownResource(resource)


def for_object(obj: dict[str, Any]) -> ResourceType:
    """The served type of an object by its apiVersion and kind."""
    api_version = str(obj.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    kind = obj.get("kind")
    for t in BY_GROUP_VERSION.get((group, version), []):
        if t.kind == kind:
            return t
    raise UnknownResource(f"{api_version} {kind}")


def _storage_version_hash(t: ResourceType) -> str:
    import base64

    digest = hashlib.sha256(f"{t.group}/{t.version}/{t.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


@dataclass
class Discovery:
    """Legacy (unaggregated) discovery documents, which kubectl and the clients fall back to."""

    server_address: str = "127.0.0.1:6443"
    extra: dict[str, Any] = field(default_factory=dict)
    # Test-double behaviour, not a server's: the gitVersions `/version` answers, one per request in turn (an
    # HA control plane mid-upgrade behind one address), so a test can move the served release under a running
    # `serve` or `bind` (`KubeAPIServer.serve_versions`).
    git_versions: tuple[str, ...] = (KUBERNETES_VERSION,)
    _answered: int = 0

    def api_versions(self) -> dict[str, Any]:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self.server_address}],
        }

    def groups(self) -> list[str]:
        seen: list[str] = []
        for t in TYPES:
            if t.group and t.group not in seen:
                seen.append(t.group)
        return seen

    def api_group(self, group: str) -> dict[str, Any]:
        versions = sorted({t.version for t in TYPES if t.group == group})
        gv = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": gv,
            "preferredVersion": gv[0],
        }

    def api_group_list(self) -> dict[str, Any]:
        groups = []
        for g in self.groups():
            doc = self.api_group(g)
            doc.pop("kind")
            doc.pop("apiVersion")
            groups.append(doc)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        types = BY_GROUP_VERSION.get((group, version))
        if not types:
            return None
        resources: list[dict[str, Any]] = []
        for t in types:
            entry: dict[str, Any] = {
                "name": t.plural,
                "singularName": t.singular,
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": VERBS,
                "storageVersionHash": _storage_version_hash(t),
            }
            if t.short_names:
                entry["shortNames"] = list(t.short_names)
            if t.categories:
                entry["categories"] = list(t.categories)
            resources.append(entry)
            for sub in t.subresources:
                verbs = ["create"] if sub == "binding" else ["get", "patch", "update"]
                if sub == "finalize":
                    verbs = ["update"]
                kind = "Binding" if sub == "binding" else t.kind
                resources.append(
                    {
                        "name": f"{t.plural}/{sub}",
                        "singularName": "",
                        "namespaced": t.namespaced,
                        "kind": kind,
                        "verbs": verbs,
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    def version(self) -> dict[str, Any]:
        """`/version` (apimachinery `version.Info`): the next of `git_versions`, its major and minor read from
        it (emulation = the binary's; minimum compatibility = one minor before)."""
        git_version = self.git_versions[self._answered % len(self.git_versions)]
        self._answered += 1
        found = re.match(r"^v?(\d+)\.(\d+)", git_version)
        major, minor = (found.group(1), found.group(2)) if found else ("1", "37")
        return {
            "major": major,
            "minor": minor,
            "emulationMajor": major,
            "emulationMinor": minor,
            "minCompatibilityMajor": major,
            "minCompatibilityMinor": str(max(int(minor) - 1, 0)),
            "gitVersion": git_version,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-08-26T00:00:00Z",
            "goVersion": "go1.26.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
