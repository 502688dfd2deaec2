"""Object metadata as the generic registry sets it (staging/src/k8s.io/apiserver/pkg/registry/rest/create.go,
staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go), and the Status errors of
staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go, through the real `kubernetes` client."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import configmap, device_class, pod


def _error(e: client.ApiException) -> dict:  # type: ignore[type-arg]
    return json.loads(e.body)  # type: ignore[no-any-return]


def test_create_sets_uid_creation_timestamp_and_resource_version(kube_client: client.ApiClient) -> None:
    """BeforeCreate/FillObjectMetaSystemFields: a fresh uid and creationTimestamp; the store assigns the
    version."""
    cm = client.CoreV1Api(kube_client).create_namespaced_config_map("default", configmap())
    uuid.UUID(cm.metadata.uid)
    assert cm.metadata.creation_timestamp is not None
    assert int(cm.metadata.resource_version) > 0


def test_resource_version_is_shared_and_monotonic_across_types(kube_client: client.ApiClient) -> None:
    """One etcd revision orders every write of every type (resourceVersion semantics, api-concepts docs)."""
    core, res = client.CoreV1Api(kube_client), client.ResourceV1Api(kube_client)
    a = int(core.create_namespaced_config_map("default", configmap("a")).metadata.resource_version)
    b = int(res.create_device_class(device_class("b")).metadata.resource_version)
    c = int(core.create_namespaced_pod("default", pod("c")).metadata.resource_version)
    assert a < b < c
    assert int(core.list_namespaced_config_map("default").metadata.resource_version) >= c


def test_generation_starts_at_one_and_bumps_on_spec_change_only(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """pkg/registry/resource/deviceclass/strategy.go: Generation 1 on create, +1 when spec changes."""
    res = client.ResourceV1Api(kube_client)
    dc = res.create_device_class(device_class("gen"))
    assert dc.metadata.generation == 1
    dc = res.patch_device_class("gen", {"metadata": {"labels": {"a": "b"}}})
    assert dc.metadata.generation == 1
    dc = res.patch_device_class("gen", {"spec": {"extendedResourceName": "example.com/gpu"}})
    assert dc.metadata.generation == 2
    assert kube_api.get("configmaps", "x") is None
    cm = client.CoreV1Api(kube_client).create_namespaced_config_map("default", configmap("x"))
    assert cm.metadata.generation is None  # ConfigMaps have no generation


def test_generate_name_appends_five_characters(kube_client: client.ApiClient) -> None:
    """staging/src/k8s.io/apiserver/pkg/storage/names/generate.go: base + 5 chars of
    bcdfghjklmnpqrstvwxz2456789."""
    core = client.CoreV1Api(kube_client)
    made = core.create_namespaced_config_map("default", {"metadata": {"generateName": "cfg-"}, "data": {}})
    assert re.fullmatch(r"cfg-[bcdfghjklmnpqrstvwxz2456789]{5}", made.metadata.name)
    long = core.create_namespaced_config_map("default", {"metadata": {"generateName": "x" * 70}})
    assert len(long.metadata.name) == 63 and long.metadata.name.startswith("x" * 58)


def test_create_twice_is_already_exists(kube_client: client.ApiClient) -> None:
    """errors.NewAlreadyExists: 409, reason AlreadyExists, `<resource> "<name>" already exists`."""
    res = client.ResourceV1Api(kube_client)
    res.create_device_class(device_class("dup"))
    with pytest.raises(client.ApiException) as info:
        res.create_device_class(device_class("dup"))
    body = _error(info.value)
    assert info.value.status == 409
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'deviceclasses.resource.k8s.io "dup" already exists'
    assert body["details"] == {"name": "dup", "group": "resource.k8s.io", "kind": "deviceclasses"}


def test_replace_with_stale_resource_version_is_conflict(kube_client: client.ApiClient) -> None:
    """An update whose resourceVersion is not current fails with 409 Conflict
    (storage.NewResourceVersionConflictsError)."""
    core = client.CoreV1Api(kube_client)
    cm = core.create_namespaced_config_map("default", configmap("stale"))
    cm.data = {"k": "v2"}
    core.replace_namespaced_config_map("stale", "default", cm)
    cm.data = {"k": "v3"}
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_config_map("stale", "default", cm)
    body = _error(info.value)
    assert info.value.status == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "stale": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_get_missing_is_not_found_status(kube_client: client.ApiClient) -> None:
    """errors.NewNotFound: 404 with `details` naming group, kind (the resource) and name."""
    with pytest.raises(client.ApiException) as info:
        client.ResourceV1Api(kube_client).read_namespaced_resource_claim("nope", "default")
    body = _error(info.value)
    assert info.value.status == 404
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'resourceclaims.resource.k8s.io "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "group": "resource.k8s.io", "kind": "resourceclaims"},
        "code": 404,
    }


def test_invalid_name_is_422_with_causes(kube_client: client.ApiClient) -> None:
    """errors.NewInvalid from ValidateObjectMeta
    (staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go)."""
    with pytest.raises(client.ApiException) as info:
        client.CoreV1Api(kube_client).create_namespaced_config_map("default", configmap("Bad_Name"))
    body = _error(info.value)
    assert info.value.status == 422 and body["reason"] == "Invalid"
    assert body["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
        "a lowercase RFC 1123 subdomain"
    )
    assert body["details"]["kind"] == "ConfigMap" and body["details"]["name"] == "Bad_Name"
    assert body["details"]["causes"][0]["reason"] == "FieldValueInvalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"


def test_missing_name_is_required(kube_client: client.ApiClient) -> None:
    """ValidateObjectMeta: `metadata.name: Required value: name or generateName is required`."""
    with pytest.raises(client.ApiException) as info:
        client.ResourceV1Api(kube_client).create_device_class({"metadata": {}, "spec": {}})
    body = _error(info.value)
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "field": "metadata.name",
            "message": "Required value: name or generateName is required",
        }
    ]


def test_create_in_missing_namespace_is_not_found(kube_client: client.ApiClient) -> None:
    """The NamespaceLifecycle admission plugin (plugin/pkg/admission/namespace/lifecycle/admission.go)."""
    with pytest.raises(client.ApiException) as info:
        client.CoreV1Api(kube_client).create_namespaced_config_map("ghost", configmap(namespace="ghost"))
    assert info.value.status == 404
    assert _error(info.value)["message"] == 'namespaces "ghost" not found'


@pytest.mark.double_only("README disagreement 10: a changed uid is a 409 Conflict")
def test_system_fields_cannot_be_changed_by_an_update(kube_client: client.ApiClient) -> None:
    """BeforeUpdate keeps creationTimestamp and generation; a different uid is `field is immutable`."""
    res = client.ResourceV1Api(kube_client)
    dc = res.create_device_class(device_class("sys"))
    body = client.ApiClient().sanitize_for_serialization(dc)
    body["metadata"]["generation"] = 42
    body["metadata"]["creationTimestamp"] = "2001-01-01T00:00:00Z"
    after = res.replace_device_class("sys", body)
    assert after.metadata.generation == 1
    assert after.metadata.creation_timestamp == dc.metadata.creation_timestamp
    body = client.ApiClient().sanitize_for_serialization(after)
    body["metadata"]["uid"] = str(uuid.uuid4())
    with pytest.raises(client.ApiException) as info:
        res.replace_device_class("sys", body)
    assert info.value.status == 422
    assert "metadata.uid: Invalid value" in _error(info.value)["message"]
    assert "field is immutable" in _error(info.value)["message"]


def test_noop_update_does_not_bump_resource_version(kube_client: client.ApiClient) -> None:
    """GuaranteedUpdate skips the write when the object is unchanged (store.go), so no new version."""
    core = client.CoreV1Api(kube_client)
    cm = core.create_namespaced_config_map("default", configmap("same"))
    again = core.patch_namespaced_config_map("same", "default", {"data": {"k": "v"}})
    assert again.metadata.resource_version == cm.metadata.resource_version
