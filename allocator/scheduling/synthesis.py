"""The ResourceClaim the scheduler synthesizes for a pod's DRA-backed extended resources (KEP-5004, KEP-6406).

Upstream's `createRequestsAndMappings`: request `container-<i>-request-<j>` per long-lived container (regular
containers and sidecars) and resource; init containers reuse long-lived requests at the same or later index,
and only the largest remaining init request is emitted; requests sorted by name. KEP-6406: the class's
capacity is deep-copied onto every synthesized request; with DRAExtendedResourceCapacity off such a class is
unsatisfiable (never downgraded to a whole device). Each request tolerates the binder's own device taint
(resourceapi.routing.SERVED_TAINT_KEY): the one divergence from upstream's claim, which tolerates nothing, so
that kube-scheduler never allocates the devices the binder serves (docs/divergences.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from allocator.scheduling.predicates import pod_requests
from resourceapi.api.core_v1 import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    Container,
    ContainerExtendedResourceRequest,
    Node,
    Pod,
    PodExtendedResourceClaimStatus,
)
from resourceapi.api.meta import ObjectMeta
from resourceapi.api.resource_v1 import (
    ALLOCATION_MODE_EXACT_COUNT,
    CapacityRequirements,
    DeviceClaim,
    DeviceRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from resourceapi.extended import ExtendedResourceResolver, is_dra_extended_resource_name
from resourceapi.gates import DRA_EXTENDED_RESOURCE_CAPACITY, FeatureGates
from resourceapi.machinery.quantity import Quantity
from resourceapi.routing import SERVED_TAINT_EFFECT, SERVED_TAINT_KEY

IN_MEMORY_CLAIM_NAME = "<extended-resources>"
"""Upstream's name of the not-yet-created claim: deliberately invalid, replaced by a generated name."""

REASON_CANNOT_FIT = "cannot fit resource"
SERVED_TOLERATIONS = (DeviceToleration(key=SERVED_TAINT_KEY, operator="Exists", effect=SERVED_TAINT_EFFECT),)
"""What every synthesized request tolerates: the taint on the devices the binder serves, and nothing else."""


@dataclass
class ExtendedOutcome:
    """What the extended resources of a pod need on one node.

    `claim is None and reason is None`: nothing needs DRA here (device plugin or no extended resources).
    `reason`: the node cannot serve the pod's extended resources (unschedulable there, with this reason).
    """

    claim: ResourceClaim | None = None
    mappings: list[ContainerExtendedResourceRequest] = field(default_factory=list)
    reason: str | None = None

    def status(self, claim_name: str) -> PodExtendedResourceClaimStatus:
        """The pod's `status.extendedResourceClaimStatus` once the claim exists under `claim_name`."""
        return PodExtendedResourceClaimStatus(
            request_mappings=list(self.mappings), resource_claim_name=claim_name
        )


def scalar_requests(pod: Pod) -> dict[str, int]:
    """Pod-level requests of extended resources that may be DRA-backed, non-zero ones only (Value())."""
    out: dict[str, int] = {}
    for name, q in pod_requests(pod).items():
        if is_dra_extended_resource_name(name) and q.sign() != 0:
            out[name] = q.value_ceil()
    return out


def dra_resources_on_node(
    scalars: Mapping[str, int], allocatable: Mapping[str, Quantity] | None, resolver: ExtendedResourceResolver
) -> tuple[dict[str, int], str | None]:
    """Upstream's filterExtendedResources: the resources DRA must provide on this node, or a reason."""
    alloc = allocatable or {}
    needs: dict[str, int] = {}
    for name, q in scalars.items():
        have = alloc.get(name)
        backed = resolver.resolve(name) is not None
        if backed and (have is None or have.sign() == 0):
            needs[name] = q
        elif have is None:
            return {}, REASON_CANNOT_FIT
    return needs, None


def synthesize_claim(
    pod: Pod, node: Node, resolver: ExtendedResourceResolver, gates: FeatureGates
) -> ExtendedOutcome:
    """The pod's extended-resource claim for `node` (status.allocatable decides device plugin vs DRA)."""
    if not resolver.enabled:
        return ExtendedOutcome()
    scalars = scalar_requests(pod)
    if not scalars:
        return ExtendedOutcome()
    allocatable = node.status.allocatable if node.status else None
    needs, reason = dra_resources_on_node(scalars, allocatable, resolver)
    if reason is not None:
        return ExtendedOutcome(reason=reason)
    return synthesize_for_resources(pod, sorted(needs), resolver, gates)


def synthesize_for_resources(
    pod: Pod, resources: list[str], resolver: ExtendedResourceResolver, gates: FeatureGates
) -> ExtendedOutcome:
    """The claim for the given DRA-provided resource names (sorted), with upstream's naming and mappings."""
    if not resources:
        return ExtendedOutcome()
    containers = pod.all_containers()
    n_init = len(pod.spec.init_containers or [])
    long_lived = [i for i, c in enumerate(containers) if not (i < n_init and not c.is_sidecar)]
    short_lived = [i for i, c in enumerate(containers) if i < n_init and not c.is_sidecar]
    capacity_gate = gates.enabled(DRA_EXTENDED_RESOURCE_CAPACITY)

    requests: list[DeviceRequest] = []
    mappings: list[ContainerExtendedResourceRequest] = []
    for resource in resources:
        resolved = resolver.resolve(resource)
        if resolved is None:
            continue
        if resolved.carrier_error is not None:
            return ExtendedOutcome(reason=f"extended resource {resource}: {resolved.carrier_error}")
        if resolved.capacity is not None and not capacity_gate:
            return ExtendedOutcome(reason=gate_off_reason(resource, resolved.name))
        template = ExactDeviceRequest(
            device_class_name=resolved.name,
            allocation_mode=ALLOCATION_MODE_EXACT_COUNT,
            capacity=resolved.capacity,
            tolerations=list(SERVED_TOLERATIONS),
        )
        long_requests: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[ContainerExtendedResourceRequest] = []
        for i in long_lived:
            req, maps = _request_and_mappings(i, containers[i], resource, template, [])
            long_requests[i] = req
            long_mappings.extend(maps)
        max_short: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for i in short_lived:
            req, maps = _request_and_mappings(i, containers[i], resource, template, long_requests[i:])
            if req is not None:
                short_names.add(req.name)
                if max_short is None or _count(max_short) < _count(req):
                    max_short = req
            short_mappings.extend(maps)
        if max_short is not None and len(short_names) > 1:
            short_names.discard(max_short.name)
            for m in short_mappings:
                if m.request_name in short_names:
                    m.request_name = max_short.name
        if max_short is not None:
            requests.append(max_short)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    if not requests:
        return ExtendedOutcome()
    requests.sort(key=lambda r: r.name)
    return ExtendedOutcome(claim=_claim(pod, requests), mappings=mappings)


def for_pod(outcome: ExtendedOutcome, pod: Pod) -> ExtendedOutcome:
    """`outcome` (synthesized for a pod of the same shape: namespace, containers and their requests) for
    `pod`: what `synthesize_for_resources` would return for it, without building the requests again. The new
    claim has the pod's own metadata (generateName, owner) and shares the requests and mappings, which are
    never modified once synthesized."""
    if outcome.claim is None:
        return outcome
    requests = outcome.claim.spec.devices.requests or []
    return ExtendedOutcome(claim=_claim(pod, list(requests)), mappings=outcome.mappings)


def gate_off_reason(resource: str, class_name: str) -> str:
    """Why a capacity-carrying class cannot serve pods with DRAExtendedResourceCapacity off (KEP-6406)."""
    return (
        f"extended resource {resource}: device class {class_name} requests capacity per allocation "
        f"(extendedResourceCapacityRequests), but the {DRA_EXTENDED_RESOURCE_CAPACITY} feature is disabled"
    )


def _count(req: DeviceRequest) -> int:
    assert req.exactly is not None
    return req.exactly.count or 0


def _request_and_mappings(
    index: int,
    container: Container,
    resource: str,
    template: ExactDeviceRequest,
    reusable: list[DeviceRequest | None],
) -> tuple[DeviceRequest | None, list[ContainerExtendedResourceRequest]]:
    """Upstream's createResourceRequestAndMappings for one container and resource."""
    creqs = container.resources.requests
    if not creqs or resource not in creqs:
        return None, []
    q = creqs[resource]
    if not q.is_integer() or q.sign() == 0:
        return None, []
    crq = q.value_ceil()
    mappings: list[ContainerExtendedResourceRequest] = []
    total = 0
    for r in reusable:
        if r is not None:
            total += _count(r)
            mappings.append(
                ContainerExtendedResourceRequest(
                    container_name=container.name, resource_name=resource, request_name=r.name
                )
            )
            if total >= crq:
                return None, mappings
    ridx = sorted(creqs).index(resource)
    name = f"container-{index}-request-{ridx}"
    exactly = template.model_copy()
    exactly.capacity = _own_capacity(template.capacity)
    exactly.count = crq - total
    mappings.append(
        ContainerExtendedResourceRequest(
            container_name=container.name, resource_name=resource, request_name=name
        )
    )
    return DeviceRequest(name=name, exactly=exactly), mappings


def _own_capacity(capacity: CapacityRequirements | None) -> CapacityRequirements | None:
    """The class's capacity requests, copied for one claim: its own map (Quantity values are immutable, so
    this is as good as a deep copy, at a fraction of pydantic's deep-copy cost per pod)."""
    if capacity is None:
        return None
    requests = dict(capacity.requests) if capacity.requests is not None else None
    return capacity.model_copy(update={"requests": requests})


def _claim(pod: Pod, requests: list[DeviceRequest]) -> ResourceClaim:
    """Upstream's in-memory claim: generateName, pod namespace, controller owner, marker annotation."""
    return ResourceClaim(
        metadata=ObjectMeta(
            name=IN_MEMORY_CLAIM_NAME,
            namespace=pod.namespace,
            generate_name=f"{pod.name}-extended-resources-",
            annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            owner_references=[pod.controller_reference()],
        ),
        spec=ResourceClaimSpec(devices=DeviceClaim(requests=requests)),
    )
