"""pydantic models of the core/v1 fields the allocator reads: Pod (placement, requests, claims) and Node.

Input/output only, like `resource_v1`: unknown fields are kept so objects round-trip. Container requests get
the API server's defaulting (a resource with a limit and no request requests its limit), because `kubectl get`
output already carries it and hand-written inputs should behave the same.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from resourceapi.api.meta import ApiModel, LabelSelector, ObjectMeta, OwnerReference
from resourceapi.machinery.quantity import QuantityField

RESTART_POLICY_ALWAYS = "Always"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


class NodeSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = None


class NodeSelectorTerm(ApiModel):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(ApiModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class Toleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class Taint(ApiModel):
    key: str = ""
    value: str | None = None
    effect: str = ""
    time_added: str | None = None


class ResourceClaimRef(ApiModel):
    """A container's use of one of the pod's claims (`resources.claims[]`): all of it, or one request."""

    name: str = ""
    request: str | None = None


class ResourceRequirements(ApiModel):
    requests: dict[str, QuantityField] | None = None
    limits: dict[str, QuantityField] | None = None
    claims: list[ResourceClaimRef] | None = None

    @model_validator(mode="after")
    def _default_requests_from_limits(self) -> ResourceRequirements:
        """API server defaulting: an unset request of a limited resource equals the limit."""
        if self.limits:
            requests = dict(self.requests or {})
            for name, q in self.limits.items():
                requests.setdefault(name, q)
            self.requests = requests
        return self


class Container(ApiModel):
    name: str = ""
    image: str | None = None  # ImageLocality's score reads it
    restart_policy: str | None = None
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)

    @property
    def is_sidecar(self) -> bool:
        """An init container with `restartPolicy: Always` runs for the pod's lifetime."""
        return self.restart_policy == RESTART_POLICY_ALWAYS


class PodResourceClaim(ApiModel):
    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PreferredSchedulingTerm(ApiModel):
    weight: int
    preference: NodeSelectorTerm = Field(default_factory=NodeSelectorTerm)


class NodeAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = None


class PodAffinityTerm(ApiModel):
    label_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None


class WeightedPodAffinityTerm(ApiModel):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(ApiModel):
    """Used for both podAffinity and podAntiAffinity (the same fields)."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = None


class Affinity(ApiModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(ApiModel):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None


class PodSchedulingGate(ApiModel):
    name: str


class PodSpec(ApiModel):
    node_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    init_containers: list[Container] | None = None
    containers: list[Container] = Field(default_factory=list)
    resource_claims: list[PodResourceClaim] | None = None
    overhead: dict[str, QuantityField] | None = None
    resources: ResourceRequirements | None = None  # pod-level resources (PodLevelResources)
    scheduling_gates: list[PodSchedulingGate] | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None


class ContainerExtendedResourceRequest(ApiModel):
    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(ApiModel):
    request_mappings: list[ContainerExtendedResourceRequest] = Field(default_factory=list)
    resource_claim_name: str = ""


class PodStatus(ApiModel):
    phase: str | None = None
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(ApiModel):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus | None = None

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or "default"

    @property
    def name(self) -> str:
        return self.metadata.name

    def controller_reference(self) -> OwnerReference:
        """The controller ownerReference a claim made for this pod carries (the resourceclaim controller's
        and the scheduler's extended-resource claim alike)."""
        return OwnerReference(
            api_version="v1",
            kind="Pod",
            name=self.name,
            uid=self.metadata.uid or "",
            controller=True,
            block_owner_deletion=True,
        )

    def all_containers(self) -> list[Container]:
        """initContainers followed by containers: the index space of upstream's request names."""
        return [*(self.spec.init_containers or []), *self.spec.containers]


class NodeSpec(ApiModel):
    unschedulable: bool | None = None
    taints: list[Taint] | None = None


class ContainerImage(ApiModel):
    """One entry of a node's `status.images` (what the kubelet reports the node holds)."""

    names: list[str] | None = None
    size_bytes: int | None = None


class NodeStatus(ApiModel):
    allocatable: dict[str, QuantityField] | None = None
    capacity: dict[str, QuantityField] | None = None
    images: list[ContainerImage] | None = None  # ImageLocality's score reads them
    declared_features: list[str] | None = None  # NodeDeclaredFeatures reads them


class Node(ApiModel):
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels or {}


class Namespace(ApiModel):
    """Only its labels matter here (pod affinity terms' namespaceSelector)."""

    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
