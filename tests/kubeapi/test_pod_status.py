"""`status.extendedResourceClaimStatus` of pods (KEP-5004), validated on pods/status updates as
pkg/apis/core/validation/validation.go does; the field is stored and served back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import pod


def _ext(**mapping: Any) -> dict[str, Any]:
    m = {
        "containerName": "c",
        "resourceName": "nvidia.com/gpu.shared",
        "requestName": "container-0-request-0",
    }
    m.update(mapping)
    return {
        "extendedResourceClaimStatus": {
            "resourceClaimName": "p-extended-resources-abcde",
            "requestMappings": [m],
        }
    }


@pytest.fixture
def core(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> client.CoreV1Api:
    kube_api.seed(pod("p", node="n1"))
    return client.CoreV1Api(kube_client)


def _fields(core: client.CoreV1Api, status: dict[str, Any]) -> list[str]:
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_pod_status("p", "default", {"status": status})
    assert info.value.status == 422
    return [c["field"] for c in json.loads(info.value.body)["details"]["causes"]]


@pytest.mark.double_only("README disagreement 12: extendedResourceClaimStatus must match a container request")
def test_valid_status_is_stored(core: client.CoreV1Api, kube_api: KubeAPIServer) -> None:
    """A well-formed extendedResourceClaimStatus is accepted and returned as written."""
    core.patch_namespaced_pod_status("p", "default", {"status": _ext()})
    stored = kube_api.get("pods", "p")
    assert stored is not None
    assert stored["status"]["extendedResourceClaimStatus"] == _ext()["extendedResourceClaimStatus"]
    read = core.read_namespaced_pod_status("p", "default")
    assert read.status.extended_resource_claim_status.resource_claim_name == "p-extended-resources-abcde"


def test_request_mappings_must_not_be_empty(core: client.CoreV1Api) -> None:
    """`requestMappings` needs at least one entry."""
    status = {"extendedResourceClaimStatus": {"resourceClaimName": "x", "requestMappings": []}}
    assert _fields(core, status) == ["status.extendedResourceClaimStatus.requestMappings"]


def test_container_name_must_be_known(core: client.CoreV1Api) -> None:
    """containerName must name one of spec.initContainers or spec.containers."""
    assert _fields(core, _ext(containerName="ghost")) == [
        "status.extendedResourceClaimStatus.requestMappings[0].containerName"
    ]


@pytest.mark.double_only("README disagreement 12: extendedResourceClaimStatus must match a container request")
def test_request_name_must_be_a_dns_label(core: client.CoreV1Api) -> None:
    """requestName is a DNS label (IsDNS1123Label)."""
    assert _fields(core, _ext(requestName="Not_A_Label")) == [
        "status.extendedResourceClaimStatus.requestMappings[0].requestName"
    ]


@pytest.mark.double_only("README disagreement 12: extendedResourceClaimStatus must match a container request")
def test_status_can_change_once_set_and_a_removal_is_not_applied(core: client.CoreV1Api) -> None:
    """Not immutable, as kube-apiserver v1.37.2 (tests/e2e/test_sandbox_realcluster.py): a new claim name is
    stored; a removal is accepted and not applied."""
    core.patch_namespaced_pod_status("p", "default", {"status": _ext()})
    changed = _ext()
    changed["extendedResourceClaimStatus"]["resourceClaimName"] = "p-extended-resources-other"
    read = core.patch_namespaced_pod_status("p", "default", {"status": changed})
    assert read.status.extended_resource_claim_status.resource_claim_name == "p-extended-resources-other"
    gone = core.patch_namespaced_pod_status("p", "default", {"status": {"extendedResourceClaimStatus": None}})
    assert gone.status.extended_resource_claim_status.resource_claim_name == "p-extended-resources-other"
