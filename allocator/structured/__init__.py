"""The allocation core: upstream's structured allocator (k8s.io/dynamic-resource-allocation/structured) for
one node's devices, with its long-lived, incremental view (`cluster.Cluster`). Pure: objects in, decisions
out; it imports nothing else of `allocator`."""
