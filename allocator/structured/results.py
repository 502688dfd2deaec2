"""From the search's internal results to API AllocationResults: devices, config, nodeSelector
(`staging/src/k8s.io/dynamic-resource-allocation/structured/internal/experimental/allocator_experimental.go`).
"""

from __future__ import annotations

from collections.abc import Callable

from allocator.structured.errors import AllocationError
from allocator.structured.features import Features
from allocator.structured.requests import ClaimPlan, RequestData
from allocator.structured.search import DeviceResult
from resourceapi.api.core_v1 import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from resourceapi.api.resource_v1 import (
    ALLOCATION_CONFIG_SOURCE_CLAIM,
    ALLOCATION_CONFIG_SOURCE_CLASS,
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
)


def build_result(
    plan: ClaimPlan,
    devices: list[DeviceResult],
    node_name: str,
    features: Features,
    share_ids: Callable[[], str],
) -> AllocationResult:
    """One claim's AllocationResult, in upstream's order and shape; a fresh share ID per share."""
    results = [_device_result(r, features, share_ids) for r in devices]
    return AllocationResult(
        devices=DeviceAllocationResult(results=results, config=_configs(plan) or None),
        node_selector=_node_selector(plan, devices, node_name),
    )


def _device_result(
    r: DeviceResult, features: Features, share_ids: Callable[[], str]
) -> DeviceRequestAllocationResult:
    device = r.device
    out = DeviceRequestAllocationResult(
        request=r.request.full_name,
        driver=device.id.driver,
        pool=device.id.pool,
        device=device.id.device,
        admin_access=True if r.admin else None,
        tolerations=list(r.request.tolerations) if r.request.tolerations else None,
        consumed_capacity=dict(r.consumed) if r.consumed else None,
    )
    out.share_id = share_ids() if r.multi else None
    if features.device_binding_and_status:
        out.binding_conditions = device.binding_conditions
        out.binding_failure_conditions = device.binding_failure_conditions
    return out


def _chosen(entries: list[RequestData]) -> RequestData:
    return entries[entries[0].selected_sub] if entries[0].parent else entries[0]


def _configs(plan: ClaimPlan) -> list[DeviceAllocationConfiguration]:
    configs: list[DeviceAllocationConfiguration] = []
    chosen = [_chosen(entries) for entries in plan.requests]
    class_ranges: dict[str, tuple[int, int]] = {}
    for data in chosen:
        cls = data.cls
        if cls is None:
            continue
        existing = class_ranges.get(cls.name)
        if existing is not None:
            for i in range(*existing):
                configs[i].requests = [*(configs[i].requests or []), data.full_name]
            continue
        start = len(configs)
        for class_config in cls.config:
            configs.append(
                DeviceAllocationConfiguration(
                    source=ALLOCATION_CONFIG_SOURCE_CLASS,
                    requests=[data.full_name],
                    opaque=class_config.opaque,
                )
            )
        class_ranges[cls.name] = (start, len(configs))

    request_models = plan.claim.spec.devices.requests or []
    for claim_config in plan.claim.spec.devices.config or ():
        wanted = claim_config.requests or []
        if not wanted:
            configs.append(
                DeviceAllocationConfiguration(
                    source=ALLOCATION_CONFIG_SOURCE_CLAIM, opaque=claim_config.opaque
                )
            )
            continue
        for request, data in zip(request_models, chosen, strict=False):
            if request.name in wanted or (data.parent and data.full_name in wanted):
                configs.append(
                    DeviceAllocationConfiguration(
                        source=ALLOCATION_CONFIG_SOURCE_CLAIM,
                        requests=list(wanted),
                        opaque=claim_config.opaque,
                    )
                )
                break

    for allocated in configs:
        requested = allocated.requests
        if not requested:
            continue
        if all(
            request.name in requested or (data.parent and data.full_name in requested)
            for request, data in zip(request_models, chosen, strict=False)
        ):
            allocated.requests = None
    return configs


def check_node_selector(plan: ClaimPlan, devices: list[DeviceResult]) -> None:
    """Raise the error `build_result` would raise for these devices' node selectors, without building."""
    for r in devices:
        device = r.device
        slice_record = device.slice
        name, selector = (
            (device.node_name, device.node_selector)
            if slice_record.per_device
            else (slice_record.node_name, slice_record.node_selector)
        )
        if name or device.binds_to_node:
            return
        if selector is not None and len(selector.node_selector_terms) > 1:
            raise AllocationError(_terms_error(plan, len(selector.node_selector_terms)))


def _terms_error(plan: ClaimPlan, terms: int) -> str:
    return (
        f"create NodeSelector for claim {plan.claim.metadata.name}: unsupported ResourceSlice.NodeSelector "
        f"with {terms} terms"
    )


def _node_selector(plan: ClaimPlan, devices: list[DeviceResult], node_name: str) -> NodeSelector | None:
    """Upstream createNodeSelector: pin to the node for node-local devices, else merge their selectors."""
    fields: list[NodeSelectorRequirement] = []
    expressions: list[NodeSelectorRequirement] = []
    for r in devices:
        device = r.device
        slice_record = device.slice
        if slice_record.per_device:
            name, selector = device.node_name, device.node_selector
        else:
            name, selector = slice_record.node_name, slice_record.node_selector
        if name or device.binds_to_node:
            return NodeSelector(
                node_selector_terms=[
                    NodeSelectorTerm(
                        match_fields=[
                            NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])
                        ]
                    )
                ]
            )
        if selector is not None:
            terms = selector.node_selector_terms
            if len(terms) == 1:
                _merge(terms[0].match_fields or [], fields)
                _merge(terms[0].match_expressions or [], expressions)
            elif len(terms) > 1:
                raise AllocationError(_terms_error(plan, len(terms)))
    if fields or expressions:
        return NodeSelector(
            node_selector_terms=[
                NodeSelectorTerm(match_fields=fields or None, match_expressions=expressions or None)
            ]
        )
    return None


def _merge(source: list[NodeSelectorRequirement], target: list[NodeSelectorRequirement]) -> None:
    for requirement in source:
        if not any(_same(requirement, existing) for existing in target):
            target.append(requirement.model_copy(deep=True))


def _same(a: NodeSelectorRequirement, b: NodeSelectorRequirement) -> bool:
    return a.key == b.key and a.operator == b.operator and (a.values or []) == (b.values or [])
