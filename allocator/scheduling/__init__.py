"""The scheduler's side: node predicates, inter-pod filters, extended-resource claim synthesis, placement
(`placement.Placer`: kube-scheduler's cycle over the allocation core) and its diagnosis. Pure; it imports
`allocator.structured` and nothing else of `allocator`."""
