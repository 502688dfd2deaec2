"""Builders for DeviceClass objects and AdmissionReview requests used by the webhook tests."""

from __future__ import annotations

import copy
from typing import Any

VALID_SELECTOR: dict[str, Any] = {"cel": {"expression": "true"}}
VALID_CONFIG: dict[str, Any] = {"opaque": {"driver": "foo", "parameters": {"foo": 42}}}
ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"


def device_class(name: str = "foo", **spec: Any) -> dict[str, Any]:
    """A v1 DeviceClass named `name` with the given spec fields."""
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }
    return obj


def with_annotation(obj: dict[str, Any], value: str, key: str = ANNOTATION) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("annotations", {})[key] = value
    return out


def review_request(
    obj: Any, old: Any = None, *, operation: str | None = None, version: str = "v1", uid: str = "uid-1"
) -> dict[str, Any]:
    """An AdmissionReview.request for a DeviceClass CREATE (or UPDATE when `old` is given)."""
    op = operation or ("UPDATE" if old is not None else "CREATE")
    req: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": "resource.k8s.io", "version": version, "kind": "DeviceClass"},
        "resource": {"group": "resource.k8s.io", "version": version, "resource": "deviceclasses"},
        "name": _name(obj),
        "operation": op,
        "object": obj,
    }
    if old is not None:
        req["oldObject"] = old
    return req


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def shared_gpu_class_yaml(name: str) -> str:
    """The manifest text of a valid GPU-shares DeviceClass (KEP-5004 extended resource) named `name`, as the
    CLI tests feed it to `validate` and `simulate`."""
    return f"""\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: {name}
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.nvidia.com"
  extendedResourceName: nvidia.com/gpu.shared
  extendedResourceCapacityRequests:
    requests:
      shares: "1"
"""
