"""GET, LIST, CREATE, PUT, PATCH and DELETE as the handlers in
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/ and the generic store
(staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go) serve them."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import configmap, pod


@pytest.mark.double_only("README scope: a real cluster has kube-system ConfigMaps of its own")
def test_list_returns_items_in_key_order_with_list_kind(core: client.CoreV1Api) -> None:
    """Lists are in etcd key order (namespace, then name) and carry the list's resourceVersion."""
    core.create_namespace({"metadata": {"name": "b-ns"}})
    for ns, name in (("default", "z"), ("default", "a"), ("b-ns", "m")):
        core.create_namespaced_config_map(ns, configmap(name, ns))
    everything = core.list_config_map_for_all_namespaces()
    assert [(c.metadata.namespace, c.metadata.name) for c in everything.items] == [
        ("b-ns", "m"),
        ("default", "a"),
        ("default", "z"),
    ]
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["a", "z"]


def test_list_pages_with_limit_and_continue(core: client.CoreV1Api) -> None:
    """`limit` and `continue` (api-concepts "Retrieving large results sets in chunks")."""
    for i in range(5):
        core.create_namespaced_config_map("default", configmap(f"cm{i}"))
    first = core.list_namespaced_config_map("default", limit=2)
    assert [c.metadata.name for c in first.items] == ["cm0", "cm1"]
    assert first.metadata.remaining_item_count == 3
    rest = core.list_namespaced_config_map("default", limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["cm2", "cm3", "cm4"]
    assert rest.metadata._continue is None


def test_put_replaces_the_object(core: client.CoreV1Api) -> None:
    """PUT is a full replace; without a resourceVersion it is unconditional (AllowUnconditionalUpdate)."""
    core.create_namespaced_config_map("default", configmap("r"))
    out = core.replace_namespaced_config_map("r", "default", {"metadata": {"name": "r"}, "data": {"n": "1"}})
    assert out.data == {"n": "1"}


def test_put_name_must_match_url(core: client.CoreV1Api) -> None:
    """update.go: `the name of the object (x) does not match the name on the URL (y)` is a BadRequest."""
    core.create_namespaced_config_map("default", configmap("r"))
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_config_map("r", "default", {"metadata": {"name": "other"}})
    assert info.value.status == 400
    assert (
        json.loads(info.value.body)["message"]
        == "the name of the object (other) does not match the name on the URL (r)"
    )


def test_put_of_missing_object_is_not_found(kube_client: client.ApiClient) -> None:
    """ConfigMaps do not allow create-on-update: PUT of a missing object is 404."""
    with pytest.raises(client.ApiException) as info:
        client.CoreV1Api(kube_client).replace_namespaced_config_map("nope", "default", configmap("nope"))
    assert info.value.status == 404


def test_json_merge_patch(core: client.CoreV1Api) -> None:
    """RFC 7386 through `application/merge-patch+json`: null deletes a key."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "m"}, "data": {"a": "1", "b": "2"}})
    out = core.patch_namespaced_config_map(
        "m", "default", {"data": {"a": None, "c": "3"}}, _content_type="application/merge-patch+json"
    )
    assert out.data == {"b": "2", "c": "3"}


def test_json_patch(core: client.CoreV1Api) -> None:
    """RFC 6902 through `application/json-patch+json`, including a failing `test` op (422)."""
    core.create_namespaced_config_map("default", configmap("j"))
    out = core.patch_namespaced_config_map(
        "j",
        "default",
        [{"op": "add", "path": "/data/x", "value": "y"}],
        _content_type="application/json-patch+json",
    )
    assert out.data == {"k": "v", "x": "y"}
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_config_map(
            "j",
            "default",
            [{"op": "test", "path": "/data/x", "value": "no"}],
            _content_type="application/json-patch+json",
        )
    assert info.value.status == 422


def test_strategic_merge_patch_merges_pod_conditions_by_type(
    kube_api: KubeAPIServer, core: client.CoreV1Api
) -> None:
    """staging/src/k8s.io/api/core/v1/types.go PodStatus.Conditions: patchStrategy merge, patchMergeKey
    type."""
    kube_api.seed(
        {
            **pod("s"),
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False"},
                    {"type": "Ready", "status": "False"},
                ],
            },
        }
    )
    out = core.patch_namespaced_pod_status(
        "s",
        "default",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        _content_type="application/strategic-merge-patch+json",
    )
    conds = {c.type: c.status for c in out.status.conditions}
    assert conds == {"PodScheduled": "False", "Ready": "True"}


@pytest.mark.double_only("README disagreement 15: strategic-merge list order")
def test_strategic_merge_patch_of_finalizers_merges_primitive_list(core: client.CoreV1Api) -> None:
    """metadata.finalizers is `patchStrategy:"merge"` (a set); `$deleteFromPrimitiveList` removes entries."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "f", "finalizers": ["a/x"]}})
    out = core.patch_namespaced_config_map("f", "default", {"metadata": {"finalizers": ["b/y"]}})
    assert out.metadata.finalizers == ["a/x", "b/y"]
    out = core.patch_namespaced_config_map(
        "f", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/x"]}}
    )
    assert out.metadata.finalizers == ["b/y"]


def test_patch_with_stale_resource_version_is_conflict(core: client.CoreV1Api) -> None:
    """A patch carrying metadata.resourceVersion is a precondition (handlers/patch.go)."""
    cm = core.create_namespaced_config_map("default", configmap("pv"))
    core.patch_namespaced_config_map("pv", "default", {"data": {"k": "2"}})
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_config_map(
            "pv",
            "default",
            {"metadata": {"resourceVersion": cm.metadata.resource_version}, "data": {"k": "3"}},
        )
    assert info.value.status == 409


def test_delete_returns_status_and_removes(kube_api: KubeAPIServer, core: client.CoreV1Api) -> None:
    """Delete without finalizers removes at once; ConfigMaps answer a Success Status (ReturnDeletedObject
    false)."""
    cm = core.create_namespaced_config_map("default", configmap("d"))
    st = core.delete_namespaced_config_map("d", "default")
    assert st["status"] == "Success" and st["details"]["uid"] == cm.metadata.uid
    assert kube_api.get("configmaps", "d") is None


def test_delete_preconditions(core: client.CoreV1Api) -> None:
    """DeleteOptions.preconditions (uid, resourceVersion) mismatch is a 409 Conflict (store.go
    checkPreconditions)."""
    cm = core.create_namespaced_config_map("default", configmap("pre"))
    with pytest.raises(client.ApiException) as info:
        core.delete_namespaced_config_map(
            "pre",
            "default",
            body=client.V1DeleteOptions(
                preconditions=client.V1Preconditions(uid="00000000-0000-0000-0000-000000000000")
            ),
        )
    assert info.value.status == 409
    body = json.loads(info.value.body)
    assert body["message"] == (
        'Operation cannot be fulfilled on ConfigMap "pre": the UID in the precondition '
        f"(00000000-0000-0000-0000-000000000000) does not match the UID in record ({cm.metadata.uid}). "
        "The object might have been deleted and then recreated"
    )
    assert body["details"] == {"name": "pre", "kind": "ConfigMap"}
    with pytest.raises(client.ApiException) as info:
        core.delete_namespaced_config_map(
            "pre",
            "default",
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="1")),
        )
    assert info.value.status == 409
    assert json.loads(info.value.body)["message"].endswith(
        f"the ResourceVersion in the precondition (1) does not match the ResourceVersion in record "
        f"({cm.metadata.resource_version}). The object might have been modified"
    )
    core.delete_namespaced_config_map(
        "pre",
        "default",
        body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(
                uid=cm.metadata.uid, resource_version=cm.metadata.resource_version
            )
        ),
    )


def test_dry_run_create_writes_nothing(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """`dryRun=All` runs the whole request path without persisting."""
    out = client.CoreV1Api(kube_client).create_namespaced_config_map(
        "default", configmap("dry"), dry_run="All"
    )
    assert out.metadata.name == "dry"
    assert kube_api.get("configmaps", "dry") is None


def test_delete_collection_with_label_selector(kube_api: KubeAPIServer, core: client.CoreV1Api) -> None:
    """DELETE on the collection deletes what the selector matches (store.go DeleteCollection)."""
    core.create_namespaced_config_map("default", configmap("x1", labels={"app": "x"}))
    core.create_namespaced_config_map("default", configmap("y1", labels={"app": "y"}))
    core.delete_collection_namespaced_config_map("default", label_selector="app=x")
    assert [c["metadata"]["name"] for c in kube_api.list("configmaps", "default")] == ["y1"]


@pytest.mark.double_only("README disagreement 15: strategic-merge list order")
def test_strategic_merge_patch_of_claim_reservations_merges_by_uid(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """ResourceClaimStatus.reservedFor is `patchStrategy:"merge" patchMergeKey:"uid"`: a patch with one
    entry adds it to the others (what a scheduler's reservation patch relies on)."""
    from kubeapi.objects import allocation, claim

    pa, pb = kube_api.seed(pod("a", node="n1")), kube_api.seed(pod("b", node="n1"))
    a = {"resource": "pods", "name": "a", "uid": pa["metadata"]["uid"]}
    b = {"resource": "pods", "name": "b", "uid": pb["metadata"]["uid"]}
    kube_api.seed({**claim("c"), "status": {"allocation": allocation(), "reservedFor": [a]}})
    out = client.ResourceV1Api(kube_client).patch_namespaced_resource_claim_status(
        "c", "default", {"status": {"reservedFor": [b]}}
    )
    assert [r.name for r in out.status.reserved_for] == ["a", "b"]


def test_strategic_merge_patch_of_webhooks_merges_by_name(kube_client: client.ApiClient) -> None:
    """Webhook configurations' `webhooks` merge by name: a caBundle patch keeps the rest of the webhook."""
    adm = client.AdmissionregistrationV1Api(kube_client)
    hook = {
        "name": "v.example.com",
        "clientConfig": {"url": "https://127.0.0.1:1/"},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    adm.create_validating_webhook_configuration({"metadata": {"name": "v"}, "webhooks": [hook]})
    out = adm.patch_validating_webhook_configuration(
        "v", {"webhooks": [{"name": "v.example.com", "clientConfig": {"caBundle": "Q0E="}}]}
    )
    (wh,) = out.webhooks
    assert wh.client_config.ca_bundle == "Q0E=" and wh.client_config.url == "https://127.0.0.1:1/"
    assert wh.side_effects == "None" and wh.admission_review_versions == ["v1"]
