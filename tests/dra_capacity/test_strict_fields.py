"""Unknown fields against the Kubernetes 1.37 schemas, named as the API server's strict validation does."""

from __future__ import annotations

from dra_capacity.strict_fields import unknown_fields


def test_nested_lists_maps_and_references_are_followed() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labelz": {}, "labels": {"any-key": "v"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "limit": {}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "efect": "NoSchedule"}],
        },
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]},
    }
    assert unknown_fields(pod) == [
        "metadata.labelz",
        "spec.containers[0].resources.limit",
        "spec.tolerations[0].efect",
    ]


def test_device_class_knows_the_kep_6406_field_and_catches_a_typo() -> None:
    dc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {
            "extendedResourceNmae": "example.com/gpu",
            "extendedResourceCapacityRequests": {"requests": {"shares": "1"}},
            "selectors": [{"cel": {"expression": "true"}}],
        },
    }
    assert unknown_fields(dc) == ["spec.extendedResourceNmae"]


def test_a_type_without_a_schema_is_none() -> None:
    assert unknown_fields({"apiVersion": "example.com/v1", "kind": "Widget"}) is None
    assert unknown_fields({"kind": "Pod"}) is None
