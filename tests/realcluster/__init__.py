"""A real control plane for tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler (Kubernetes
v1.37, built by `make controlplane`) and kwok's fake nodes. See README.md in this directory."""

from __future__ import annotations

from .cluster import Cluster, ClusterConfig, ClusterError, bin_dir, kubernetes_version

__all__ = ["Cluster", "ClusterConfig", "ClusterError", "bin_dir", "kubernetes_version"]
