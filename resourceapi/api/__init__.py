"""The API models (resource.k8s.io/v1, core/v1, metav1) and every size limit of types.go."""
