"""Admission webhooks as kube-apiserver calls them
(staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/: generic/webhook.go, mutating/dispatcher.go,
validating/dispatcher.go, errors/statuserror.go, predicates/),
registered through the real AdmissionregistrationV1Api and exercised through the real client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import configmap, device_class
from kubeapi.webhook_double import WebhookDouble, allow, configuration, patch_response

DC_PATH = "/apis/resource.k8s.io/v1/deviceclasses"


@pytest.fixture
def hook() -> Iterator[WebhookDouble]:
    with WebhookDouble() as wh:
        yield wh


def _register(kube_client: client.ApiClient, cfg: dict[str, Any]) -> None:
    adm = client.AdmissionregistrationV1Api(kube_client)
    if cfg["kind"] == "ValidatingWebhookConfiguration":
        adm.create_validating_webhook_configuration(cfg)
    else:
        adm.create_mutating_webhook_configuration(cfg)
    # A real API server applies a new configuration once its informer has it (the double at once): the
    # calibration client says how long to give it (tests/realcluster/calibration.py).
    time.sleep(getattr(kube_client, "config_propagation_seconds", 0))


def _register_validating(kube_client: client.ApiClient, hook: WebhookDouble, **fields: Any) -> None:
    """ValidatingWebhookConfiguration `v`, one webhook calling `hook`, with these webhook fields."""
    _register(kube_client, configuration("ValidatingWebhookConfiguration", "v", hook, **fields))


def _replace_in_validating(kube_client: client.ApiClient, name: str, path: str, value: Any) -> None:
    """A JSON patch replacing `path` of ValidatingWebhookConfiguration `name`."""
    client.AdmissionregistrationV1Api(kube_client).patch_validating_webhook_configuration(
        name,
        [{"op": "replace", "path": path, "value": value}],
        _content_type="application/json-patch+json",
    )


def _resource_rules(operation: str, version: str, resource: str) -> list[dict[str, Any]]:
    """One webhook rule: `operation` on resource.k8s.io/`version` `resource`."""
    rule = {"apiGroups": ["resource.k8s.io"], "apiVersions": [version], "resources": [resource]}
    return [{"operations": [operation], **rule}]


def _deny(message: str = "", **status: Any) -> Any:
    def decide(_req: dict[str, Any]) -> dict[str, Any]:
        st = dict(status)
        if message:
            st["message"] = message
        return {"allowed": False, "status": st}

    return decide


def test_denial_is_the_webhooks_status_built_by_to_status_err(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """errors/statuserror.go: the webhook's own Status, a code under 400 raised to 400 Bad Request, the
    message `admission webhook "<webhook>" denied the request: <message>`; no reason or details made up.
    (The double used to answer 403 `<resource> "<name>" is forbidden: ...` with details: v1.37.2 does not.)"""
    hook.decide = _deny("no GPUs today")
    _register_validating(kube_client, hook)
    out = kube_api.http("POST", DC_PATH, device_class("gpu"))
    assert out.status == 400
    assert out.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'admission webhook "v.example.com" denied the request: no GPUs today',
        "code": 400,
    }
    assert kube_api.get("deviceclasses", "gpu") is None
    for code, expected in ((200, 400), (403, 403), (500, 500)):
        hook.decide = _deny("again", code=code)
        out = kube_api.http("POST", DC_PATH, device_class("gpu"))
        assert (out.status, out.body["message"]) == (
            expected,
            'admission webhook "v.example.com" denied the request: again',
        )
        assert "reason" not in out.body and "details" not in out.body


def test_denial_without_message_or_reason(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """`denied the request without explanation`; a reason alone is used as the message."""
    hook.decide = _deny()
    _register_validating(kube_client, hook)
    out = kube_api.http("POST", DC_PATH, device_class("gpu"))
    assert out.body["message"] == 'admission webhook "v.example.com" denied the request without explanation'
    hook.decide = _deny(reason="NotAllowed")
    out = kube_api.http("POST", DC_PATH, device_class("gpu"))
    assert out.body["message"] == 'admission webhook "v.example.com" denied the request: NotAllowed'
    assert out.body["reason"] == "NotAllowed"


def test_invalid_denial_keeps_code_reason_and_causes(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """A 422 Invalid with details (as `dra-capacity serve` answers) keeps code, reason and details; only the
    message is prefixed. Each cause is decoded as a metav1.StatusCause: its type is `reason` on the wire, and
    any other key (`type`) is dropped."""
    cause = {"reason": "FieldValueInvalid", "field": "spec.x", "message": "Invalid value: 0"}
    details = {
        "name": "gpu",
        "group": "resource.k8s.io",
        "kind": "DeviceClass",
        "causes": [{**cause, "type": "FieldValueInvalid"}],
    }
    hook.decide = _deny(
        'DeviceClass.resource.k8s.io "gpu" is invalid: spec.x: Invalid value: 0',
        code=422,
        reason="Invalid",
        details=details,
    )
    _register_validating(kube_client, hook)
    out = kube_api.http("POST", DC_PATH, device_class("gpu"))
    assert out.status == 422 and out.body["reason"] == "Invalid"
    assert out.body["details"] == {**details, "causes": [cause]}
    assert out.body["message"] == (
        'admission webhook "v.example.com" denied the request: '
        'DeviceClass.resource.k8s.io "gpu" is invalid: spec.x: Invalid value: 0'
    )


def test_warnings_are_relayed_as_warning_headers(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """AdmissionResponse.warnings reach the client as `Warning: 299 - "<text>"` headers."""
    hook.decide = lambda _r: {"allowed": True, "warnings": ['capacity "x" is unknown', "second"]}
    _register_validating(kube_client, hook)
    out = kube_api.http("POST", DC_PATH, device_class("gpu"))
    assert out.status == 201
    assert out.warnings == ['299 - "capacity \\"x\\" is unknown"', '299 - "second"']


@pytest.mark.double_only("README disagreement 3: request.name omitted when empty")
def test_mutating_runs_before_native_validation_and_validating_after(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """Mutating webhooks patch first (JSONPatch); validating webhooks see the mutated, named, stored-to-be
    object."""
    with WebhookDouble() as mut, WebhookDouble() as val:
        mut.decide = lambda _r: patch_response(
            [{"op": "add", "path": "/metadata/labels", "value": {"m": "1"}}]
        )
        _register(kube_client, configuration("MutatingWebhookConfiguration", "m", mut))
        _register(kube_client, configuration("ValidatingWebhookConfiguration", "v", val))
        out = kube_api.http("POST", DC_PATH, {**device_class(""), "metadata": {"generateName": "gen-"}})
        assert out.status == 201 and out.body["metadata"]["labels"] == {"m": "1"}
        assert mut.requests[0]["name"] == "" and mut.requests[0]["object"]["metadata"].get("name") is None
        seen = val.requests[0]["object"]
        assert seen["metadata"]["labels"] == {"m": "1"} and seen["metadata"]["name"].startswith("gen-")
        assert seen["metadata"]["uid"] == out.body["metadata"]["uid"]


def test_admission_review_request_fields(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """request: uid, kind, resource, requestKind, name, operation, userInfo, object, oldObject, dryRun,
    options; the URL carries `?timeout=<timeoutSeconds>s`."""
    _register_validating(kube_client, hook, path="/validate", timeoutSeconds=7)
    res = client.ResourceV1Api(kube_client)
    res.create_device_class(device_class("gpu"))
    res.patch_device_class("gpu", {"metadata": {"labels": {"a": "b"}}})
    create, update = hook.requests
    assert hook.paths[0] == "/validate?timeout=7s"
    assert create["kind"] == {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"}
    assert create["resource"] == {"group": "resource.k8s.io", "version": "v1", "resource": "deviceclasses"}
    assert (create["operation"], create["name"], create["oldObject"], create["dryRun"]) == (
        "CREATE",
        "gpu",
        None,
        False,
    )
    assert create["userInfo"]["username"] == "kubernetes-admin"
    assert create["options"]["kind"] == "CreateOptions"
    assert update["operation"] == "UPDATE" and update["oldObject"]["metadata"].get("labels") is None
    assert update["object"]["metadata"]["labels"] == {"a": "b"}


@pytest.mark.double_only("README disagreement 4: Go's x509 error text")
def test_ca_bundle_is_verified(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """A caBundle that did not sign the webhook's certificate is a call failure: with failurePolicy Fail an
    InternalError `failed calling webhook`, with Ignore the request goes through."""
    with WebhookDouble() as other:
        cfg = configuration("ValidatingWebhookConfiguration", "v", hook)
        cfg["webhooks"][0]["clientConfig"]["caBundle"] = other.ca_bundle
        _register(kube_client, cfg)
    out = kube_api.http("POST", DC_PATH, device_class("gpu"))
    assert out.status == 500 and out.body["reason"] == "InternalError"
    assert out.body["message"].startswith(
        'Internal error occurred: failed calling webhook "v.example.com": failed to call webhook: '
        f'Post "{hook.url}/?timeout=10s": '
    )
    assert out.body["message"].endswith(
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )
    assert hook.requests == []
    _replace_in_validating(kube_client, "v", "/webhooks/0/failurePolicy", "Ignore")
    assert kube_api.http("POST", DC_PATH, device_class("gpu")).status == 201


def test_timeout_seconds_fails_closed(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """A webhook slower than timeoutSeconds: `context deadline exceeded` under failurePolicy Fail."""
    hook.delay = 1.5
    _register_validating(kube_client, hook, timeoutSeconds=1)
    out = kube_api.http("POST", DC_PATH, device_class("gpu"))
    assert out.status == 500 and out.body["message"].endswith("context deadline exceeded")


def scoped_rule(operations: list[str], group: str, version: str, resource: str, scope: str) -> dict[str, Any]:
    """One rule of a webhook configuration, with its scope."""
    return {
        "operations": operations,
        "apiGroups": [group],
        "apiVersions": [version],
        "resources": [resource],
        "scope": scope,
    }


def test_rules_match_operation_resource_and_subresource(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """rules.go: an UPDATE-only rule is not called on CREATE; `pods/status` matches only the subresource."""
    rules = [scoped_rule(["UPDATE"], "", "v1", "pods/status", "Namespaced")]
    _register_validating(kube_client, hook, rules=rules)
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_pod(
        "default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"a": "b"}}})
    assert hook.requests == []
    core.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}})
    assert [(r["operation"], r["subResource"]) for r in hook.requests] == [("UPDATE", "status")]


def test_scope_cluster_skips_namespaced_resources(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """scope Cluster matches only cluster-scoped resources."""
    rules = [scoped_rule(["*"], "*", "*", "*", "Cluster")]
    _register_validating(kube_client, hook, rules=rules)
    client.CoreV1Api(kube_client).create_namespaced_config_map("default", configmap("x"))
    assert hook.requests == []
    client.ResourceV1Api(kube_client).create_device_class(device_class("gpu"))
    assert len(hook.requests) == 1


def test_namespace_selector(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """namespaceSelector is matched against the namespace's labels."""
    rules = [
        {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}
    ]
    _register_validating(
        kube_client, hook, rules=rules, namespaceSelector={"matchLabels": {"watched": "yes"}}
    )
    core = client.CoreV1Api(kube_client)
    core.create_namespace({"metadata": {"name": "w", "labels": {"watched": "yes"}}})
    core.create_namespaced_config_map("default", configmap("a"))
    core.create_namespaced_config_map("w", configmap("b", "w"))
    assert [r["namespace"] for r in hook.requests] == ["w"]


def test_object_selector(kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble) -> None:
    """objectSelector is matched against the object's (or old object's) labels."""
    _register_validating(
        kube_client, hook, objectSelector={"matchExpressions": [{"key": "check", "operator": "Exists"}]}
    )
    res = client.ResourceV1Api(kube_client)
    res.create_device_class(device_class("plain"))
    res.create_device_class(
        {**device_class("checked"), "metadata": {"name": "checked", "labels": {"check": "1"}}}
    )
    assert [r["name"] for r in hook.requests] == ["checked"]


@pytest.mark.double_only("double hook: add_user")
def test_match_conditions_cel(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """matchConditions (CEL over object/request): a false condition skips the webhook."""
    conds = [
        {"name": "only-gpu", "expression": "object.metadata.name.startsWith('gpu')"},
        {"name": "not-admin-bypass", "expression": "request.userInfo.username != 'bypass'"},
    ]
    _register_validating(kube_client, hook, matchConditions=conds)
    res = client.ResourceV1Api(kube_client)
    res.create_device_class(device_class("nic"))
    res.create_device_class(device_class("gpu-a"))
    assert [r["name"] for r in hook.requests] == ["gpu-a"]
    bypass = kube_api.api_client(kube_api.add_user("bypass"))
    client.ResourceV1Api(bypass).create_device_class(device_class("gpu-b"))
    assert [r["name"] for r in hook.requests] == ["gpu-a"]


@pytest.mark.double_only("README disagreement 5: match-condition error message")
def test_match_condition_error_fails_closed(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """A condition that errors at runtime: Forbidden under failurePolicy Fail, skipped under Ignore."""
    conds = [{"name": "broken", "expression": "object.spec.nope == 'x'"}]
    _register_validating(kube_client, hook, matchConditions=conds)
    out = kube_api.http("POST", DC_PATH, device_class("gpu"))
    assert out.status == 403 and "broken" in out.body["message"]


@pytest.mark.double_only("README disagreement 6: resource.k8s.io/v1beta1 not served")
def test_match_policy_exact_and_equivalent(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """A rule naming only v1beta1: Exact does not match v1 requests; Equivalent does."""
    rules = _resource_rules("CREATE", "v1beta1", "deviceclasses")
    _register_validating(kube_client, hook, rules=rules, matchPolicy="Exact")
    client.ResourceV1Api(kube_client).create_device_class(device_class("a"))
    assert hook.requests == []
    _replace_in_validating(kube_client, "v", "/webhooks/0/matchPolicy", "Equivalent")
    client.ResourceV1Api(kube_client).create_device_class(device_class("b"))
    assert [r["name"] for r in hook.requests] == ["b"]


def test_reinvocation_if_needed(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """reinvocationPolicy IfNeeded: a webhook is called again when a later one changed the object."""
    with WebhookDouble() as first, WebhookDouble() as second:
        first.decide = allow
        second.decide = lambda r: (
            patch_response([{"op": "add", "path": "/metadata/annotations", "value": {"b": "1"}}])
            if not (r["object"]["metadata"].get("annotations") or {}).get("b")
            else allow(r)
        )
        _register(
            kube_client,
            configuration("MutatingWebhookConfiguration", "a-first", first, reinvocationPolicy="IfNeeded"),
        )
        _register(kube_client, configuration("MutatingWebhookConfiguration", "b-second", second))
        client.ResourceV1Api(kube_client).create_device_class(device_class("gpu"))
        assert len(first.requests) == 2 and len(second.requests) == 1
        assert first.requests[1]["object"]["metadata"]["annotations"] == {"b": "1"}


@pytest.mark.double_only("double hook: admission")
def test_service_client_config_checks_the_service_name(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """clientConfig.service: the certificate must name `<service>.<namespace>.svc` (routed to loopback)."""
    with WebhookDouble(dns_names=("hook.system.svc",)) as hook:
        kube_api.admission.services[("system", "hook")] = ("127.0.0.1", hook.port)
        cfg = configuration("ValidatingWebhookConfiguration", "v", hook)
        cfg["webhooks"][0]["clientConfig"] = {
            "service": {"namespace": "system", "name": "hook", "path": "/v", "port": 443},
            "caBundle": hook.ca_bundle,
        }
        _register(kube_client, cfg)
        assert kube_api.http("POST", DC_PATH, device_class("gpu")).status == 201
        assert hook.paths == ["/v?timeout=10s"]
    with WebhookDouble() as wrong_name:
        kube_api.admission.services[("system", "hook")] = ("127.0.0.1", wrong_name.port)
        _replace_in_validating(kube_client, "v", "/webhooks/0/clientConfig/caBundle", wrong_name.ca_bundle)
        out = kube_api.http("POST", DC_PATH, device_class("gpu2"))
        assert out.status == 500 and out.body["message"].endswith(
            'Post "https://hook.system.svc:443/v?timeout=10s": tls: failed to verify certificate: '
            "x509: certificate is not valid for hook.system.svc"
        )


@pytest.mark.double_only("README disagreement 7: sideEffects Some is refused at creation")
def test_dry_run_requires_side_effect_free_webhooks(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """A dry-run request to a webhook with sideEffects Some/Unknown is `does not support dry run` (400)."""
    _register_validating(kube_client, hook, sideEffects="Some")
    out = kube_api.http("POST", DC_PATH + "?dryRun=All", device_class("gpu"))
    assert (
        out.status == 400
        and out.body["message"] == 'admission webhook "v.example.com" does not support dry run'
    )


def test_webhook_configurations_are_exempt(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """Requests for webhook configurations never go to webhooks (a lockout guard upstream keeps)."""
    hook.decide = _deny("no")
    rules = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]
    _register_validating(kube_client, hook, rules=rules)
    client.AdmissionregistrationV1Api(kube_client).delete_validating_webhook_configuration("v")
    assert hook.requests == []


def test_delete_is_admitted_with_old_object(
    kube_api: KubeAPIServer, kube_client: client.ApiClient, hook: WebhookDouble
) -> None:
    """DELETE sends oldObject (the stored object) and object null."""
    rules = _resource_rules("DELETE", "v1", "*")
    _register_validating(kube_client, hook, rules=rules)
    client.ResourceV1Api(kube_client).create_device_class(device_class("gpu"))
    client.ResourceV1Api(kube_client).delete_device_class("gpu")
    (req,) = hook.requests
    assert (
        req["operation"] == "DELETE"
        and req["object"] is None
        and req["oldObject"]["metadata"]["name"] == "gpu"
    )
    assert req["options"]["kind"] == "DeleteOptions"
