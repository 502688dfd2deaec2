"""The other served types through their real client APIs: coordination.k8s.io/v1 Leases (leader election's
compare-and-swap on resourceVersion), events.k8s.io/v1 and core/v1 Events, Secrets (stringData), Nodes with
status, ServiceAccounts, ResourceSlices."""

from __future__ import annotations

import base64
import datetime
import json

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import node


def _lease(holder: str) -> client.V1Lease:
    now = datetime.datetime.now(datetime.UTC)
    spec = client.V1LeaseSpec(
        holder_identity=holder, lease_duration_seconds=15, acquire_time=now, renew_time=now
    )
    return client.V1Lease(metadata=client.V1ObjectMeta(name="dra-capacity-binder"), spec=spec)


def test_lease_takeover_is_a_compare_and_swap(kube_client: client.ApiClient) -> None:
    """Two candidates read the same Lease; the second replace with the stale resourceVersion gets 409, as
    client-go's and the Python client's LeaseLock rely on (MicroTime renewTime kept to the microsecond)."""
    coord = client.CoordinationV1Api(kube_client)
    created = coord.create_namespaced_lease("kube-system", _lease("a"))
    mine = coord.read_namespaced_lease("dra-capacity-binder", "kube-system")
    theirs = coord.read_namespaced_lease("dra-capacity-binder", "kube-system")
    mine.spec.holder_identity = "b"
    coord.replace_namespaced_lease("dra-capacity-binder", "kube-system", mine)
    theirs.spec.holder_identity = "c"
    with pytest.raises(client.ApiException) as info:
        coord.replace_namespaced_lease("dra-capacity-binder", "kube-system", theirs)
    assert info.value.status == 409
    now = coord.read_namespaced_lease("dra-capacity-binder", "kube-system")
    assert now.spec.holder_identity == "b"
    assert now.spec.renew_time == created.spec.renew_time
    assert now.metadata.generation is None  # Leases have no generation


@pytest.mark.double_only("README disagreement 14: eventTime must be RFC 3339 with microseconds")
def test_events_v1_and_core_events(kube_client: client.ApiClient) -> None:
    """EventsV1Api writes events.k8s.io/v1 Events (regarding, note, reportingController); CoreV1Api the
    core ones."""
    ev = client.EventsV1Api(kube_client)
    body = {
        "metadata": {"generateName": "p."},
        "eventTime": "2026-12-01T00:00:00.000000Z",
        "reportingController": "dra-capacity.io/binder",
        "reportingInstance": "binder-0",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": "bound to n1",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p", "apiVersion": "v1"},
    }
    made = ev.create_namespaced_event("default", body)
    assert made.metadata.name.startswith("p.") and made.note == "bound to n1"
    assert [e.reason for e in ev.list_namespaced_event("default").items] == ["Scheduled"]
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "x"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "Failed",
            "type": "Warning",
            "message": "m",
        },
    )
    sel = core.list_namespaced_event("default", field_selector="involvedObject.name=p,reason=Failed")
    assert [e.metadata.name for e in sel.items] == ["x"]


def test_secret_string_data_is_stored_as_data(kube_client: client.ApiClient) -> None:
    """Secret stringData is merged into base64 data on write; type defaults to Opaque."""
    core = client.CoreV1Api(kube_client)
    out = core.create_namespaced_secret(
        "default", {"metadata": {"name": "tls"}, "stringData": {"ca.crt": "PEM"}}
    )
    assert out.type == "Opaque" and out.string_data is None
    assert base64.b64decode(core.read_namespaced_secret("tls", "default").data["ca.crt"]) == b"PEM"


def test_node_status_through_the_status_subresource(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """Nodes keep status on create (nodeStrategy) and change it only through nodes/status."""
    core = client.CoreV1Api(kube_client)
    core.create_node({**node("n1"), "status": {"allocatable": {"cpu": "4"}}})
    core.patch_node("n1", {"status": {"allocatable": {"cpu": "8"}}})
    assert core.read_node("n1").status.allocatable == {"cpu": "4"}
    core.patch_node_status("n1", {"status": {"allocatable": {"cpu": "8"}}})
    assert core.read_node("n1").status.allocatable == {"cpu": "8"}


def test_service_accounts_and_resource_slices(kube_client: client.ApiClient) -> None:
    """Plain CRUD of ServiceAccounts and ResourceSlices through their client APIs."""
    core, res = client.CoreV1Api(kube_client), client.ResourceV1Api(kube_client)
    core.create_namespaced_service_account("default", {"metadata": {"name": "binder"}})
    assert core.read_namespaced_service_account("binder", "default").metadata.name == "binder"
    spec = {
        "driver": "gpu.example.com",
        "nodeName": "n1",
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}],
    }
    made = res.create_resource_slice({"metadata": {"generateName": "n1-gpu-"}, "spec": spec})
    assert made.metadata.generation == 1 and made.spec.devices[0].name == "gpu-0"


def test_namespaces_carry_their_name_label(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """Namespaces get `kubernetes.io/metadata.name` (NamespaceDefaultLabelName), the built-in ones too, so
    webhook namespaceSelectors can select them by name."""
    core = client.CoreV1Api(kube_client)
    core.create_namespace({"metadata": {"name": "team-a"}})
    for name in ("team-a", "default", "kube-system"):
        assert core.read_namespace(name).metadata.labels == {"kubernetes.io/metadata.name": name}


@pytest.mark.double_only("README disagreement 14: eventTime must be RFC 3339 with microseconds")
def test_events_v1_and_core_events_share_storage(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """One Event, two representations (pkg/apis/events/v1/conversion.go): an events.k8s.io/v1 write is a core
    Event with involvedObject/message/reportingComponent, and watches of either API see it."""
    rv = client.CoreV1Api(kube_client).list_namespaced_event("default").metadata.resource_version
    client.EventsV1Api(kube_client).create_namespaced_event(
        "default",
        {
            "metadata": {"name": "e1"},
            "eventTime": "2026-12-01T00:00:00.000000Z",
            "reason": "Scheduled",
            "type": "Normal",
            "note": "bound",
            "action": "Binding",
            "reportingController": "dra-capacity.io/binder",
            "reportingInstance": "b-0",
            "regarding": {"kind": "Pod", "namespace": "default", "name": "p"},
        },
    )
    core = client.CoreV1Api(kube_client).read_namespaced_event("e1", "default")
    assert (core.message, core.involved_object.name, core.reporting_component) == (
        "bound",
        "p",
        "dra-capacity.io/binder",
    )
    resp = client.CoreV1Api(kube_client).list_namespaced_event(
        "default", watch=True, resource_version=rv, timeout_seconds=2, _preload_content=False
    )
    first = json.loads(resp.readline())
    resp.release_conn()
    assert first["type"] == "ADDED" and first["object"]["apiVersion"] == "v1"
    assert first["object"]["message"] == "bound"
    kube_api.delete("events", "e1")
    assert client.EventsV1Api(kube_client).list_namespaced_event("default").items == []
