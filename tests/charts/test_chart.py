"""The Helm chart, rendered and linted by the real helm binary: what each object must say."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support.chart_render import (
    CHART,
    CI_VALUES,
    NAMESPACE,
    containers,
    helm,
    mounts_token,
    objects,
    of_kind,
    one,
    pod_specs,
    template,
)

from resourceapi import routing

WEBHOOK = "rel-dra-capacity-webhook"
BINDER = "rel-dra-capacity-binder"
ROUTING = "rel-dra-capacity-pod-routing"


def test_chart_lints_strictly_with_every_ci_values_file() -> None:
    import subprocess

    for values in [None, *CI_VALUES]:
        args = [helm(), "lint", "--strict", str(CHART), "--namespace", NAMESPACE]
        if values is not None:
            args += ["-f", str(values)]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"{values}: {proc.stdout}{proc.stderr}"


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_every_ci_combination_validates_against_kubernetes_1_37(values: Path) -> None:
    """kubernetes-validate, strict (unknown fields are errors); CRD kinds (cert-manager, Prometheus) have no
    schema there and are the only ones allowed to be unknown."""
    import kubernetes_validate

    for obj in objects(values=values):
        group = obj["apiVersion"].split("/")[0]
        if group in ("cert-manager.io", "monitoring.coreos.com"):
            continue
        kubernetes_validate.validate(obj, "1.37.0", strict=True)


@pytest.mark.parametrize("values", [None, *CI_VALUES], ids=lambda p: p.name if p else "defaults")
def test_every_pod_is_pss_restricted_and_gets_no_automatic_token(values: Path | None) -> None:
    objs = objects(values=values)
    specs = list(pod_specs(objs))
    assert specs
    for name, spec in specs:
        assert spec["automountServiceAccountToken"] is False, name
        psc = spec["securityContext"]
        assert psc["runAsNonRoot"] is True and psc["runAsUser"] == 65532, name
        assert psc["seccompProfile"]["type"] == "RuntimeDefault", name
        for c in containers(spec):
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, (name, c["name"])
            assert sc["readOnlyRootFilesystem"] is True, (name, c["name"])
            assert sc["capabilities"]["drop"] == ["ALL"], (name, c["name"])
            assert "privileged" not in sc and "hostNetwork" not in spec
            assert c["resources"]["limits"]["memory"], (name, c["name"])


def test_only_the_containers_that_call_the_api_get_a_token() -> None:
    objs = objects()
    holders = {
        (owner, c["name"]) for owner, spec in pod_specs(objs) for c in containers(spec) if mounts_token(c)
    }
    assert holders == {
        (WEBHOOK, "certs"),
        (WEBHOOK, "webhook"),  # cluster-aware warnings and pod routing read the cluster
        (BINDER, "binder"),
        ("rel-dra-capacity-cleanup", "cleanup"),
    }
    # In a pod, `serve --cluster-warnings auto` reads ResourceSlices and DeviceClasses with the in-cluster
    # token, pod routing or not: without the token it exits ("cannot load cluster configuration").
    no_routing = objects("webhook.podRouting.enabled=false")
    webhook = one(no_routing, "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    assert [c["name"] for c in containers(webhook) if mounts_token(c)] == ["certs", "webhook"]


def _rules(role: dict[str, Any]) -> dict[tuple[str, str, tuple[str, ...]], set[str]]:
    out: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                key = (group, resource, tuple(rule.get("resourceNames", ())))
                out.setdefault(key, set()).update(rule["verbs"])
    return out


def test_binder_rbac_is_exactly_upstreams_binding_set() -> None:
    """The table of what a binder needs (kube-scheduler's DRA plugin and binder, pkg/scheduler/framework/
    plugins/dynamicresources), nothing more."""
    objs = objects()
    cluster = _rules(one(objs, "ClusterRole", BINDER))
    assert cluster == {
        ("", "pods", ()): {"get", "list", "watch", "delete"},  # delete: preemption's victims
        ("", "pods/status", ()): {"patch"},
        ("", "pods/binding", ()): {"create"},
        ("", "nodes", ()): {"get", "list", "watch"},
        ("", "namespaces", ()): {"get", "list", "watch"},
        ("resource.k8s.io", "resourceclaims", ()): {"create", "get", "list", "watch", "update", "delete"},
        ("resource.k8s.io", "resourceclaims/status", ()): {"update", "patch"},
        ("resource.k8s.io", "resourceclaims/binding", ()): {"update", "patch"},
        ("resource.k8s.io", "deviceclasses", ()): {"get", "list", "watch"},
        ("resource.k8s.io", "resourceslices", ()): {"get", "list", "watch"},
        # VolumeBinding, VolumeZone, NodeVolumeLimits (system:kube-scheduler's reads,
        # system:volume-scheduler's update; no patch: the binder PUTs)
        ("", "persistentvolumeclaims", ()): {"get", "list", "watch", "update"},
        ("", "persistentvolumes", ()): {"get", "list", "watch", "update"},
        ("storage.k8s.io", "storageclasses", ()): {"get", "list", "watch"},
        ("storage.k8s.io", "csinodes", ()): {"get", "list", "watch"},
        ("storage.k8s.io", "csidrivers", ()): {"get", "list", "watch"},
        ("storage.k8s.io", "csistoragecapacities", ()): {"get", "list", "watch"},
        ("resource.k8s.io", "devicetaintrules", ()): {"get", "list", "watch"},
        ("", "events", ()): {"create", "patch"},
        ("events.k8s.io", "events", ()): {"create", "patch"},
        ("policy", "poddisruptionbudgets", ()): {"list", "watch"},  # DefaultPreemption's PDB lister
    }
    role = one(objs, "Role", BINDER)
    assert role["metadata"]["namespace"] == NAMESPACE
    assert _rules(role) == {("coordination.k8s.io", "leases", ()): {"get", "create", "update"}}


def test_binder_rbac_without_preemption_has_no_pod_deletes_and_no_pdb_reads() -> None:
    objs = objects("binder.preemption=false")
    cluster = _rules(one(objs, "ClusterRole", BINDER))
    assert cluster[("", "pods", ())] == {"get", "list", "watch"}
    assert ("policy", "poddisruptionbudgets", ()) not in cluster
    [binder] = [d for d in of_kind(objs, "Deployment") if d["metadata"]["name"] == BINDER]
    assert "--preemption=false" in binder["spec"]["template"]["spec"]["containers"][0]["args"]


def _informed(obj: object) -> set[tuple[str, str]]:
    """(API group, resource) of every Informer an object holds: what its process lists and watches."""
    from kubeio.informer import Informer

    out = set()
    for value in vars(obj).values():
        if isinstance(value, Informer):
            group_version = value.resource.group_version
            out.add((group_version.rpartition("/")[0], value.resource.plural))
    return out


def _unused_client() -> Any:
    """A client for objects that are only constructed: nothing listens at its address, nothing calls it."""
    from kubernetes.client import ApiClient, Configuration

    configuration = Configuration()
    configuration.host = "https://127.0.0.1:9"
    return ApiClient(configuration)


def _reads(
    role: dict[str, Any], needed: frozenset[str] = frozenset({"get", "list", "watch"})
) -> set[tuple[str, str]]:
    """(API group, resource) the role may get, list and watch (`needed`) across all names."""
    return {
        (group, resource)
        for (group, resource, names), verbs in _rules(role).items()
        if not names and needed <= verbs
    }


def test_binder_cluster_role_reads_every_kind_its_informers_watch() -> None:
    """Derived from the binder itself, so an informer added to it without its rule fails here (the missing
    `namespaces` rule left the binder unsynced: `informers did not sync within 60s`)."""
    from binder.controller import Binder
    from kubeio.kube import Kube
    from resourceapi.gates import FeatureGates

    binder = Binder(Kube.of_client(_unused_client()), FeatureGates.defaults())  # constructed, never started
    try:
        watched = _informed(binder)
    finally:
        binder._pool.shutdown()
    assert ("", "namespaces") in watched and ("", "pods") in watched  # the derivation sees the informers
    missing = watched - _reads(one(objects(), "ClusterRole", BINDER), frozenset({"list", "watch"}))
    assert not missing, f"the binder ClusterRole lacks list/watch on {sorted(missing)}"


def _recording() -> Any:
    """An informer factory that hands out informers never started and remembers what was acquired."""
    from kubeio.factory import InformerFactory
    from kubeio.informer import Informer
    from kubeio.kube import Kube, Resource

    class Recording(InformerFactory):
        """Hands out informers that are never started; remembers what was acquired."""

        def __init__(self) -> None:
            super().__init__(Kube.of_client(_unused_client()))
            self.acquired: list[Informer] = []

        def acquire(self, resource: Resource, **_: Any) -> Informer:
            self.acquired.append(Informer(self.kube, resource))
            return self.acquired[-1]

        def release(self, informer: Informer, timeout: float = 5.0) -> None:
            pass

    return Recording()


def _watched(cache_type: Any) -> set[tuple[str, str]]:
    """The (group, plural) of every informer that a cache of `cache_type` acquires when it starts."""
    factory = _recording()
    cache = cache_type(factory)
    cache.start()
    cache.stop()
    return {(i.resource.group_version.rpartition("/")[0], i.resource.plural) for i in factory.acquired}


def test_routing_cluster_role_reads_every_kind_the_routing_cache_watches() -> None:
    from webhook.podrouting.routing_cache import ClusterRoutingCache

    watched = _watched(ClusterRoutingCache)
    assert ("", "namespaces") in watched  # the derivation sees the informers
    missing = watched - _reads(one(objects(), "ClusterRole", ROUTING))
    assert not missing, f"the pod-routing ClusterRole lacks get/list/watch on {sorted(missing)}"


def test_webhook_cluster_role_reads_every_kind_the_cluster_warnings_watch() -> None:
    """Derived from the cluster-aware warnings' cache: on the real API server its ResourceSlice informer got
    403 under the chart's RBAC (the pod-routing role grants DeviceClasses and Namespaces only)."""
    from webhook.clusterview.cluster_cache import ClusterCache

    watched = _watched(ClusterCache)
    assert ("resource.k8s.io", "resourceslices") in watched  # the derivation sees the informers
    for values in ("", "webhook.podRouting.enabled=false"):
        role = one(objects(values) if values else objects(), "ClusterRole", WEBHOOK)
        missing = watched - _reads(role)
        assert not missing, f"the webhook ClusterRole lacks get/list/watch on {sorted(missing)}"
        # The Event on a DeviceClass the published devices cannot serve (class_events.py).
        assert "create" in _rules(role)[("events.k8s.io", "events", ())]


def test_certificate_controller_rbac_is_scoped_by_name_to_what_the_sidecar_is_told() -> None:
    objs = objects()
    args = {
        c["name"]: c["args"] for c in containers(one(objs, "Deployment", WEBHOOK)["spec"]["template"]["spec"])
    }
    flags = dict(a.removeprefix("--").split("=", 1) for a in args["certs"][2:])
    secret, lease = flags["secret"], flags["lease-name"]
    role = _rules(one(objs, "Role", "rel-dra-capacity-webhook-certs"))
    assert role == {
        ("", "secrets", ()): {"create"},
        ("", "secrets", (secret,)): {"get", "list", "watch", "update"},
        ("coordination.k8s.io", "leases", ()): {"create"},
        ("coordination.k8s.io", "leases", (lease,)): {"get", "update"},
        ("discovery.k8s.io", "endpointslices", ()): {"list"},
    }
    configs = [a.split("=", 1)[1] for a in args["certs"] if a.startswith("--webhook-config=")]
    assert configs == [f"validating/{WEBHOOK}", f"mutating/{WEBHOOK}", f"mutating/{ROUTING}"]
    cluster = _rules(one(objs, "ClusterRole", "rel-dra-capacity-webhook-certs"))
    assert cluster == {
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", (WEBHOOK,)): {
            "get",
            "list",
            "watch",
            "update",
        },
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", (WEBHOOK, ROUTING)): {
            "get",
            "list",
            "watch",
            "update",
        },
    }


def test_routing_rbac_only_reads() -> None:
    cluster = _rules(one(objects(), "ClusterRole", ROUTING))
    assert cluster == {
        ("resource.k8s.io", "deviceclasses", ()): {"get", "list", "watch"},
        ("", "namespaces", ()): {"get", "list", "watch"},
    }
    assert not [o for o in objects("webhook.podRouting.enabled=false") if o["metadata"]["name"] == ROUTING]


def test_every_rbac_rule_has_a_comment_saying_why() -> None:
    for path in [*CHART.glob("templates/rbac-*.yaml"), CHART / "templates" / "hooks.yaml"]:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if re.match(r"\s+- apiGroups:", line):
                assert lines[i - 1].strip().startswith("#"), f"{path.name}:{i + 1}: rule without a comment"


def test_deviceclass_webhooks_come_from_one_definition() -> None:
    objs = objects()
    vwc = one(objs, "ValidatingWebhookConfiguration", WEBHOOK)
    (validate,) = vwc["webhooks"]
    (mutate,) = one(objs, "MutatingWebhookConfiguration", WEBHOOK)["webhooks"]
    assert validate["failurePolicy"] == "Fail" and mutate["failurePolicy"] == "Ignore"
    assert validate["clientConfig"]["service"]["path"] == "/validate"
    assert mutate["clientConfig"]["service"]["path"] == "/mutate"
    assert mutate.pop("reinvocationPolicy") == "Never"
    for hook in (validate, mutate):
        hook.pop("name")
        hook.pop("failurePolicy")
        hook["clientConfig"]["service"].pop("path")
    assert validate == mutate
    assert validate["sideEffects"] == "None" and validate["admissionReviewVersions"] == ["v1"]
    assert validate["matchPolicy"] == "Equivalent" and validate["timeoutSeconds"] == 5
    assert validate["rules"] == [
        {
            "apiGroups": ["resource.k8s.io"],
            "apiVersions": ["v1"],
            "resources": ["deviceclasses"],
            "operations": ["CREATE", "UPDATE"],
            "scope": "Cluster",
        }
    ]
    assert validate["clientConfig"]["service"] == {"name": WEBHOOK, "namespace": NAMESPACE, "port": 443}
    assert "caBundle" not in validate["clientConfig"]  # self mode: the controller injects it


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Label selector semantics (k8s.io/apimachinery/pkg/labels): In, NotIn (absent matches NotIn)."""
    for expr in selector.get("matchExpressions", []):
        value = labels.get(expr["key"])
        if expr["operator"] == "In" and value not in expr["values"]:
            return False
        if expr["operator"] == "NotIn" and value in expr["values"]:
            return False
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


@pytest.mark.parametrize("ns_name", ["team-a", "kube-system", NAMESPACE, "monitoring"])
@pytest.mark.parametrize("ns_label", [None, "enabled", "disabled"])
@pytest.mark.parametrize("pod_label", [None, "enabled", "disabled"])
@pytest.mark.parametrize("mode", ["all", "labelled"])
def test_pod_routing_is_opt_in_by_namespace_or_pod_label_and_never_in_system_namespaces(
    ns_name: str, ns_label: str | None, pod_label: str | None, mode: str
) -> None:
    """The API server calls /mutate-pods exactly where resourceapi.routing.opted_in says a pod routes."""
    values = CHART / "ci" / "existing-secret-values.yaml"  # excludes `monitoring` too
    objs = objects(f"webhook.podRouting.namespaces={mode}", values=values)
    hooks = one(objs, "MutatingWebhookConfiguration", ROUTING)["webhooks"]
    ns_labels = {"kubernetes.io/metadata.name": ns_name} | (
        {"dra-capacity.io/pod-routing": ns_label} if ns_label else {}
    )
    pod_labels = {"dra-capacity.io/pod-routing": pod_label} if pod_label else {}
    called = [
        h["name"]
        for h in hooks
        if _matches(h["namespaceSelector"], ns_labels) and _matches(h["objectSelector"], pod_labels)
    ]
    pod = {"metadata": {"labels": pod_labels}}
    opted_in = routing.opted_in(pod, ns_labels, all_namespaces=mode == "all")
    excluded = ns_name in ("kube-system", NAMESPACE, "monitoring")
    assert len(called) == (1 if opted_in and not excluded else 0), called
    for h in hooks:
        assert h["rules"] == [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "operations": ["CREATE"],
                "scope": "Namespaced",
            }
        ]
        assert h["clientConfig"]["service"]["path"] == "/mutate-pods"
        assert h["failurePolicy"] == "Fail"  # as that ci file sets it


def test_pod_routing_fails_open_by_default() -> None:
    hooks = one(objects(), "MutatingWebhookConfiguration", ROUTING)["webhooks"]
    assert [h["failurePolicy"] for h in hooks] == ["Ignore", "Ignore"]
    assert all(h["sideEffects"] == "None" for h in hooks)


def test_self_mode_runs_the_certs_controller_as_a_native_sidecar() -> None:
    spec = one(objects(), "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    (sidecar,) = spec["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["args"][:2] == ["certs", "controller"]
    assert sidecar["startupProbe"]["httpGet"]["path"] == "/readyz"
    tls = next(v for v in spec["volumes"] if v["name"] == "tls")
    assert tls["emptyDir"]["medium"] == "Memory"
    (webhook,) = spec["containers"]
    assert {m["name"]: m["mountPath"] for m in webhook["volumeMounts"]}["tls"] == "/etc/dra-capacity/tls"
    assert f"--service={WEBHOOK}" in sidecar["args"]
    assert f"--namespace={NAMESPACE}" in sidecar["args"]


def test_cert_manager_mode_injects_ca_and_issues_leaf_from_a_ca() -> None:
    objs = objects("tls.mode=cert-manager")
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        for cfg in of_kind(objs, kind):
            assert (
                cfg["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/{WEBHOOK}"
            )
    certs = {o["metadata"]["name"]: o for o in of_kind(objs, "Certificate")}
    leaf = certs[WEBHOOK]
    assert f"{WEBHOOK}.{NAMESPACE}.svc" in leaf["spec"]["dnsNames"]
    assert leaf["spec"]["issuerRef"]["name"] == "rel-dra-capacity-ca"
    assert certs["rel-dra-capacity-ca"]["spec"]["isCA"] is True
    spec = one(objs, "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    assert "initContainers" not in spec
    assert not of_kind(objs, "Role") or all(
        "certs" not in r["metadata"]["name"] for r in of_kind(objs, "Role")
    )


def test_secret_mode_sets_ca_bundle_and_mounts_only_the_serving_pair() -> None:
    objs = objects("tls.mode=secret", "tls.secretName=my-tls", "tls.caBundle=Q0E=")
    assert not of_kind(objs, "Certificate") and not of_kind(objs, "Issuer")
    for cfg in [
        *of_kind(objs, "ValidatingWebhookConfiguration"),
        *of_kind(objs, "MutatingWebhookConfiguration"),
    ]:
        assert all(h["clientConfig"]["caBundle"] == "Q0E=" for h in cfg["webhooks"])
    spec = one(objs, "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    tls = next(v for v in spec["volumes"] if v["name"] == "tls")
    assert tls["secret"]["secretName"] == "my-tls"
    assert [i["key"] for i in tls["secret"]["items"]] == ["tls.crt", "tls.key"]


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["tls.mode=secret", "tls.secretName=my-tls"], "tls.mode=secret needs tls.caBundle"),
        (["tls.mode=secret", "tls.caBundle=Q0E="], "tls.mode=secret needs tls.secretName"),
        (["tls.caBundle=Q0E="], "tls.caBundle is only used with tls.mode=secret"),
        (["webhook.podDisruptionBudget.minAvailable=2"], "or no node could ever be drained"),
        (["webhook.preStopSleepSeconds=40"], "must be shorter than webhook.terminationGracePeriodSeconds"),
        (["metrics.port=8443"], "metrics.port=8443 is also webhook.port"),
        (["metrics.port=6080"], "metrics.port=6080 is also webhook.port or webhook.healthPort"),
        (["webhook.healthPort=8443"], "webhook.healthPort=8443 is also webhook.port"),
        (["tls.self.healthPort=6080"], "tls.self.healthPort=6080 is already used"),
        (["tls.self.healthPort=9090"], "tls.self.healthPort=9090 is already used"),
        (["binder.enabled=false"], "set binder.enabled=true, or podRouting.enabled=false"),
        (["binder.schedulerName=default-scheduler"], "would compete with kube-scheduler"),
    ],
)
def test_validate_yaml_fails_early_with_a_message(sets: list[str], message: str) -> None:
    proc = template(*sets)
    assert proc.returncode != 0
    assert message in proc.stderr


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("webhook.timeoutSeconds=60", "maximum"),
        ("featureGates.NoSuchGate=true", "NoSuchGate"),
        ("tls.mode=selfish", "value must be one of"),
        ("webhook.deviceClasses.validatingFailurePolicy=Sometimes", "value must be one of"),
        ("webhook.typo=1", "additional properties 'typo' not allowed"),
    ],
)
def test_schema_rejects_bad_values(setting: str, message: str) -> None:
    proc = template(setting)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_schema_knows_every_feature_gate_the_product_knows() -> None:
    import json

    from resourceapi.gates import KNOWN_GATES

    schema = json.loads((CHART / "values.schema.json").read_text())
    assert set(schema["properties"]["featureGates"]["propertyNames"]["enum"]) == set(KNOWN_GATES)


def test_pdbs_keep_a_webhook_serving_and_exist_only_with_several_replicas() -> None:
    objs = objects()
    assert one(objs, "PodDisruptionBudget", WEBHOOK)["spec"]["minAvailable"] == 1
    assert one(objs, "PodDisruptionBudget", BINDER)["spec"]["maxUnavailable"] == 1
    single = objects("webhook.replicaCount=1", "binder.replicaCount=1")
    assert not of_kind(single, "PodDisruptionBudget")


def test_webhook_replicas_spread_stop_gracefully_and_never_drop_below_the_count_on_upgrade() -> None:
    dep = one(objects(), "Deployment", WEBHOOK)
    assert dep["spec"]["replicas"] == 2
    assert dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    spec = dep["spec"]["template"]["spec"]
    keys = [c["topologyKey"] for c in spec["topologySpreadConstraints"]]
    assert keys == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
    assert all(c["whenUnsatisfiable"] == "ScheduleAnyway" for c in spec["topologySpreadConstraints"])
    (webhook,) = spec["containers"]
    assert webhook["lifecycle"]["preStop"] == {"sleep": {"seconds": 5}}
    assert spec["terminationGracePeriodSeconds"] == 30
    # The probes use the health listener, which no webhook client can hold up (issue 28).
    assert webhook["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert webhook["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert "--health-listen=0.0.0.0:6080" in webhook["args"]
    assert {"name": "health", "containerPort": 6080, "protocol": "TCP"} in webhook["ports"]
    assert webhook["resources"]["limits"]["memory"] == "512Mi"


def test_binder_runs_leader_elected_in_the_release_namespace() -> None:
    dep = one(objects("binder.schedulerName=gpu-binder"), "Deployment", BINDER)
    assert dep["spec"]["replicas"] == 2
    (binder,) = dep["spec"]["template"]["spec"]["containers"]
    assert binder["args"][:6] == [
        "bind",
        "--leader-elect=true",
        f"--lease-namespace={NAMESPACE}",
        "--lease-name=rel-dra-capacity-binder",  # the pre-delete hook deletes it by this name
        "--scheduler-name=gpu-binder",
        "--strategy=binpack",
    ]
    assert "--metrics-listen=0.0.0.0:8080" in binder["args"]
    assert binder["readinessProbe"]["httpGet"]["path"] == "/readyz"
    webhook = one(objects("binder.schedulerName=gpu-binder"), "Deployment", WEBHOOK)
    assert "--scheduler-name=gpu-binder" in webhook["spec"]["template"]["spec"]["containers"][0]["args"]


def test_native_rules_flag_only_when_set() -> None:
    args = one(objects("webhook.nativeRules=deny"), "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    assert "--native-rules=deny" in args["containers"][0]["args"]
    default = one(objects(), "Deployment", WEBHOOK)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [a for a in default if a.startswith("--native-rules")]


def test_feature_gates_become_the_flag_of_both_workloads() -> None:
    objs = objects("featureGates.DRAExtendedResource=false", "featureGates.DRAConsumableCapacity=true")
    for name in (WEBHOOK, BINDER):
        spec = one(objs, "Deployment", name)["spec"]["template"]["spec"]
        main = spec["containers"][0]
        assert "--feature-gates=DRAConsumableCapacity=true,DRAExtendedResource=false" in main["args"]


def test_hooks_clean_up_before_delete_probe_after_install_and_test_through_the_service() -> None:
    objs = objects()
    hooks = {(o["kind"], o["metadata"]["name"]): o["metadata"].get("annotations", {}) for o in objs}
    cleanup = one(objs, "Job", "rel-dra-capacity-cleanup")
    assert hooks[("Job", "rel-dra-capacity-cleanup")]["helm.sh/hook"] == "pre-delete"
    for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        ann = hooks[(kind, "rel-dra-capacity-hooks")]
        assert ann["helm.sh/hook"] == "pre-delete"
        assert int(ann["helm.sh/hook-weight"]) < 0  # before the Job
    (c,) = cleanup["spec"]["template"]["spec"]["containers"]
    assert c["args"][:2] == ["certs", "cleanup"]
    assert f"--webhook-config=validating/{WEBHOOK}" in c["args"] and "--delete-secret" in c["args"]
    cluster = _rules(one(objs, "ClusterRole", "rel-dra-capacity-hooks"))
    assert cluster == {
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", (WEBHOOK,)): {"get", "delete"},
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", (WEBHOOK, ROUTING)): {
            "get",
            "delete",
        },
    }
    # Then it stops the release's Deployments (their controllers would recreate the Secret and the Leases, and
    # get 403 once Helm deletes their Roles) and deletes what the product made.
    assert [a for a in c["args"] if a.startswith(("--stop-deployment", "--delete-lease"))] == [
        f"--stop-deployment={WEBHOOK}",
        f"--stop-deployment={BINDER}",
        f"--delete-lease={BINDER}",
        "--delete-lease=rel-dra-capacity-webhook-certs",
    ]
    role = _rules(one(objs, "Role", "rel-dra-capacity-hooks"))
    assert role == {
        ("apps", "deployments", (WEBHOOK, BINDER)): {"patch"},
        ("", "pods", ()): {"list"},
        ("coordination.k8s.io", "leases", ("rel-dra-capacity-webhook-certs", BINDER)): {"delete"},
        ("", "secrets", ("rel-dra-capacity-webhook-tls",)): {"get", "delete"},
    }
    assert hooks[("Job", "rel-dra-capacity-install-probe")]["helm.sh/hook"] == "post-install,post-upgrade"
    test_pod = one(objs, "Pod", "rel-dra-capacity-test")
    assert test_pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    env = {e["name"]: e["value"] for e in test_pod["spec"]["containers"][0]["env"]}
    assert env["WEBHOOK_URL"] == f"https://{WEBHOOK}.{NAMESPACE}.svc:443/validate"
    assert not [o for o in objects("hooks.cleanup=false") if o["metadata"]["name"].endswith("-cleanup")]


def test_network_policies_are_on_by_default_and_only_admit_the_served_ports() -> None:
    objs = objects()
    webhook = one(objs, "NetworkPolicy", WEBHOOK)
    assert webhook["spec"]["policyTypes"] == ["Ingress"]
    ports = [p["port"] for rule in webhook["spec"]["ingress"] for p in rule["ports"]]
    assert ports == ["https", "health", "metrics", "certs-health"]
    assert "from" not in webhook["spec"]["ingress"][0]  # the API server's address is unknown: any source
    binder = one(objs, "NetworkPolicy", BINDER)
    assert [p["port"] for r in binder["spec"]["ingress"] for p in r["ports"]] == ["metrics"]


def test_every_object_carries_the_standard_labels_and_the_component() -> None:
    for obj in objects(values=CHART / "ci" / "cert-manager-values.yaml"):
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "dra-capacity"
        assert labels["app.kubernetes.io/instance"] == "rel"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/part-of"] == "dra-capacity"


def test_pod_templates_match_their_selectors() -> None:
    for dep in of_kind(objects(), "Deployment"):
        selector = dep["spec"]["selector"]["matchLabels"]
        assert selector.items() <= dep["spec"]["template"]["metadata"]["labels"].items()


def test_long_names_are_cut_to_dns_labels_keeping_suffixes_distinct() -> None:
    objs = objects(values=CHART / "ci" / "long-names-values.yaml")
    by_kind: dict[str, list[str]] = {}
    for o in objs:
        name = o["metadata"]["name"]
        assert len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name
        by_kind.setdefault(o["kind"], []).append(name)
    for kind, names in by_kind.items():
        assert len(names) == len(set(names)), kind
    assert any(n.endswith("-webhook") for n in by_kind["Deployment"])
    assert any(n.endswith("-binder") for n in by_kind["Deployment"])


def test_name_and_fullname_overrides() -> None:
    names = {o["metadata"]["name"] for o in objects("nameOverride=gpu")}
    assert "rel-gpu-webhook" in names
    names = {o["metadata"]["name"] for o in objects("fullnameOverride=dc")}
    assert {"dc-webhook", "dc-binder", "dc-pod-routing"} <= names
    assert {o["metadata"]["name"] for o in objects(release="dra-capacity")} >= {"dra-capacity-webhook"}


def test_monitoring_objects_are_optional() -> None:
    assert not of_kind(objects(), "ServiceMonitor") and not of_kind(objects(), "PrometheusRule")
    objs = objects("metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true")
    rules = one(objs, "PrometheusRule")["spec"]["groups"][0]["rules"]
    alerts = {r["alert"] for r in rules}
    assert {
        "DraCapacityWebhookCertificateExpiresSoon",
        "DraCapacityWebhookErrors",
        "DraCapacityWebhookCallsFailing",
        "DraCapacityPodsUnschedulable",
    } == alerts
    assert "dra_capacity_webhook_serving_certificate_expiry_timestamp_seconds" in rules[0]["expr"]
    monitor = one(objs, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    # Without the separate port, /metrics is scraped from the health listener, never the HTTPS one.
    objs = objects("metrics.serviceMonitor.enabled=true", "metrics.separatePort=false")
    (endpoint,) = one(objs, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint == {"port": "health", "path": "/metrics", "interval": "30s"}
    service_ports = [p["name"] for p in one(objs, "Service", WEBHOOK)["spec"]["ports"]]
    assert service_ports == ["https", "health"]


def test_rendered_manifests_have_no_duplicate_keys() -> None:
    """Strict YAML readers (kubectl, our own loader) refuse a key given twice in one mapping."""
    from resourceapi.manifests.documents import load_documents

    for values in [None, *CI_VALUES]:
        proc = template(values=values)
        assert proc.returncode == 0, proc.stderr
        docs = load_documents(proc.stdout, "rendered.yaml")
        assert {d.kind for d in docs} >= {"Deployment", "Service", "ValidatingWebhookConfiguration"}


def _notes(*sets: str) -> str:
    """NOTES.txt as `helm install` prints it (client-side dry run: rendered, nothing sent anywhere)."""
    import subprocess

    args = [helm(), "install", "rel", str(CHART), "--namespace", NAMESPACE, "--dry-run=client"]
    for s in sets:
        args += ["--set", s]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("NOTES:\n", 1)[1]


def test_notes_warn_when_the_image_is_left_at_the_placeholder() -> None:
    notes = _notes()
    assert notes.startswith(
        "WARNING: image.repository is the placeholder ghcr.io/dra-capacity/dra-capacity, which no registry "
        "publishes: the pods\nwill not start (ImagePullBackOff)."
    )
    assert "make image && make image-push REGISTRY=" in notes
    assert f"helm upgrade rel charts/dra-capacity -n {NAMESPACE} --reuse-values" in notes
    local = _notes("image.repository=localhost/dra-capacity")
    assert local.startswith("WARNING: image.repository is localhost/dra-capacity, the name `make image`")
    assert "cluster nodes cannot pull it" in local
    pushed = _notes("image.repository=registry.example.com/team/dra-capacity")
    assert "WARNING" not in pushed
    assert pushed.startswith("dra-capacity 0.1.0 is installed in namespace")


def test_the_binder_s_devices_carry_a_no_schedule_taint_rule_per_served_selector() -> None:
    """One allocator per device: the taint only the binder's claims tolerate, on each `servedDevices`
    selector; none without the binder; serve and bind get the same namespace mode."""
    [rule] = of_kind(objects(), "DeviceTaintRule")
    assert rule["apiVersion"] == "resource.k8s.io/v1"
    assert rule["spec"] == {
        "deviceSelector": {"driver": "gpu.nvidia.com"},
        "taint": {"key": routing.SERVED_TAINT_KEY, "value": "dra-capacity", "effect": "NoSchedule"},
    }
    two = of_kind(
        objects("binder.servedDevices[0].driver=a.example.com", "binder.servedDevices[1].pool=p1"),
        "DeviceTaintRule",
    )
    assert [r["spec"]["deviceSelector"] for r in two] == [{"driver": "a.example.com"}, {"pool": "p1"}]
    assert (
        of_kind(objects("binder.enabled=false", "webhook.podRouting.enabled=false"), "DeviceTaintRule") == []
    )
    commands = [
        c["args"]
        for _, spec in pod_specs(objects("webhook.podRouting.namespaces=labelled"))
        for c in containers(spec)
        if c.get("args") and c["args"][0] in ("bind", "serve")
    ]
    assert {a[0] for a in commands} == {"bind", "serve"}
    assert all("--pod-routing-namespaces=labelled" in a for a in commands), commands


def test_the_taint_rule_s_api_version_follows_the_cluster() -> None:
    """resource.k8s.io/v1 where the cluster serves it (or, rendered without a cluster, from 1.37); on 1.36
    v1beta2 only where the API server serves it (off by default), else no rule and a NOTES warning."""

    def versions(*sets: str, flags: tuple[str, ...] = ()) -> list[str]:
        return [r["apiVersion"] for r in of_kind(objects(*sets, flags=flags), "DeviceTaintRule")]

    beta = "resource.k8s.io/v1beta2/DeviceTaintRule"
    assert versions(flags=("--kube-version", "1.38.0")) == ["resource.k8s.io/v1"]
    assert versions(flags=("--kube-version", "1.36.3")) == []
    assert versions(flags=("--kube-version", "1.36.3", "--api-versions", beta)) == ["resource.k8s.io/v1beta2"]
    served = ("--kube-version", "1.36.3", "--api-versions", "resource.k8s.io/v1/DeviceTaintRule")
    assert versions(flags=served) == ["resource.k8s.io/v1"]
    assert versions("binder.deviceTaintRuleAPIVersion=none") == []
    assert versions(
        "binder.deviceTaintRuleAPIVersion=resource.k8s.io/v1beta2", flags=("--kube-version", "1.36.3")
    ) == ["resource.k8s.io/v1beta2"]
    refused = template("binder.deviceTaintRuleAPIVersion=v2")
    assert refused.returncode != 0 and "deviceTaintRuleAPIVersion" in refused.stderr
    assert "WARNING: no DeviceTaintRule was installed" in _notes("binder.deviceTaintRuleAPIVersion=none")
    assert "WARNING: no DeviceTaintRule" not in _notes()
    assert "WARNING: no DeviceTaintRule" not in _notes(
        "binder.deviceTaintRuleAPIVersion=none", "binder.servedDevices=null"
    )
