"""Discovery documents of the kube-apiserver TEST DOUBLE, read by the real `kubernetes` client."""

from __future__ import annotations

import pytest
from kubernetes import client

from kubeapi import KUBERNETES_VERSION, KubeAPIServer


def test_version_states_the_modelled_release(kube_client: client.ApiClient) -> None:
    """`/version` (staging/src/k8s.io/apimachinery/pkg/version/types.go Info) names Kubernetes 1.37."""
    info = client.VersionApi(kube_client).get_code()
    assert (info.major, info.minor, info.git_version) == ("1", "37", KUBERNETES_VERSION)


def test_core_group_lists_v1_and_every_core_type_with_subresources(kube_client: client.ApiClient) -> None:
    """`/api` and `/api/v1` (APIVersions, APIResourceList in
    staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go)."""
    assert client.CoreApi(kube_client).get_api_versions().versions == ["v1"]
    names = {r.name: r for r in client.CoreV1Api(kube_client).get_api_resources().resources}
    for plural in ("namespaces", "nodes", "pods", "events", "secrets", "configmaps", "serviceaccounts"):
        assert plural in names
    assert {"pods/status", "pods/binding", "namespaces/status", "nodes/status"} <= set(names)
    assert names["pods"].namespaced and not names["nodes"].namespaced
    assert names["pods/binding"].verbs == ["create"]
    assert "watch" in names["pods"].verbs


@pytest.mark.double_only("README scope: the double serves a subset of the API groups")
def test_api_groups_and_group_versions(kube_client: client.ApiClient) -> None:
    """`/apis` (APIGroupList) and `/apis/<group>/<version>` for each served group."""
    groups = {g.name: g for g in client.ApisApi(kube_client).get_api_versions().groups}
    assert set(groups) == {
        "events.k8s.io",
        "coordination.k8s.io",
        "resource.k8s.io",
        "admissionregistration.k8s.io",
        "storage.k8s.io",
        "policy",
    }
    storage = {r.name for r in client.StorageV1Api(kube_client).get_api_resources().resources}
    assert storage == {"storageclasses", "csinodes", "csidrivers", "csistoragecapacities"}
    assert groups["resource.k8s.io"].preferred_version.group_version == "resource.k8s.io/v1"
    res = {r.name for r in client.ResourceV1Api(kube_client).get_api_resources().resources}
    assert res == {
        "deviceclasses",
        "resourceslices",
        "devicetaintrules",
        "devicetaintrules/status",
        "resourceclaims",
        "resourceclaims/status",
    }
    adm = {r.name for r in client.AdmissionregistrationV1Api(kube_client).get_api_resources().resources}
    assert adm == {"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}
    assert {r.name for r in client.CoordinationV1Api(kube_client).get_api_resources().resources} == {"leases"}
    assert {r.name for r in client.EventsV1Api(kube_client).get_api_resources().resources} == {"events"}


@pytest.mark.double_only("README scope: the double serves a subset (apps/v1 is real)")
def test_unknown_path_is_a_not_found_status(kube_api: KubeAPIServer) -> None:
    """An unserved resource answers the NotFound Status of the apiserver's not-found handler."""
    import json
    import ssl
    import urllib.request

    req = urllib.request.Request(
        f"{kube_api.url}/apis/apps/v1/deployments", headers={"Authorization": f"Bearer {kube_api.token}"}
    )
    ctx = ssl.create_default_context(cafile=str(kube_api.ca_path))
    try:
        urllib.request.urlopen(req, context=ctx)
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
        assert e.code == 404
        assert body["reason"] == "NotFound" and body["kind"] == "Status"
    else:  # pragma: no cover
        raise AssertionError("expected 404")


def test_requests_without_a_token_are_unauthorized(kube_api: KubeAPIServer) -> None:
    """Authentication is required, as with a real API server: no token answers 401 Unauthorized."""
    api = kube_api.api_client(token="wrong")
    try:
        client.CoreV1Api(api).list_namespace()
    except client.ApiException as e:
        assert e.status == 401
    else:  # pragma: no cover
        raise AssertionError("expected 401")


@pytest.mark.double_only("test-double behaviour: a real server's /version is its binary's")
def test_the_served_versions_answer_in_turn_as_test_double_behaviour(kube_api: KubeAPIServer) -> None:
    """TEST-DOUBLE behaviour (`KubeAPIServer.serve_versions`): `/version` answers the given gitVersions one
    request at a time, as servers mid-upgrade behind one address do; major and minor follow each."""
    kube_api.serve_versions("v1.37.2", "v1.38.0-beta.0")
    answers = [kube_api.http("GET", "/version").body for _ in range(3)]
    assert [(a["gitVersion"], a["minor"]) for a in answers] == [
        ("v1.37.2", "37"),
        ("v1.38.0-beta.0", "38"),
        ("v1.37.2", "37"),
    ]
