"""A real control plane for tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler (Kubernetes
v1.37, built by `make controlplane`) and kwok's fake nodes. The harness's code is the product package
`localcluster` (import it from there); this package holds the fixtures and tools on top (README.md)."""
