"""A local cluster on this machine: the real control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler v1.37, built by `make controlplane`) with kwok's fake nodes and NVIDIA-shaped ResourceSlices
(`cluster`), and the product installed on it as the chart defines it (`install`). `dra-capacity sandbox` and
the real-cluster tests (tests/realcluster re-exports this) share it. It needs a checkout: the control plane's
Go modules are under tests/controlplane/."""
