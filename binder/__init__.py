"""The binding controller: the only part of the allocator that talks to the API server.

It watches Pods, Nodes, DeviceClasses, ResourceSlices and ResourceClaims, feeds the allocator core
(`allocator.scheduling.placement.Placer`), and makes each decision real with upstream's sequence
(kube-scheduler's
`pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`, `bindClaim` and `PreBind`): create the
extended-resource claim, allocate and reserve it, patch the pod's `status.extendedResourceClaimStatus`, bind.
The allocator core never imports this package.
"""
