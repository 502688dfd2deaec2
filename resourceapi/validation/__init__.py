"""resource.k8s.io validation as kube-apiserver 1.37 runs it, shared by the webhook and the allocator."""
