"""kube-scheduler's metric names for the pods the binder places: `scheduler_unschedulable_pods{plugin,
profile}` and `scheduler_plugin_execution_duration_seconds{plugin, extension_point, status}` with upstream's
help text and buckets (pkg/scheduler/metrics/metrics.go); the project's own metrics stay."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from support.binder_harness import bound, events, running_binder, seed_cluster, wait_for
from support.gpu_cluster import pod

from binder.metrics import BinderMetrics
from binder.scheduler_metrics import plugins_of

UPSTREAM_BUCKETS = [0.00001 * 1.5**i for i in range(20)]


def _families(metrics: BinderMetrics) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}


def _samples(metrics: BinderMetrics, name: str) -> list[Any]:
    return [
        s
        for f in text_string_to_metric_families(metrics.render().decode())
        for s in f.samples
        if s.name == name
    ]


def test_upstream_names_help_and_buckets() -> None:
    text = BinderMetrics().render().decode()
    assert (
        "# HELP scheduler_plugin_execution_duration_seconds Duration for running a plugin at a specific "
        "extension point.\n" in text
    )
    assert (
        "# HELP scheduler_unschedulable_pods The number of unschedulable pods broken down by plugin name. A "
        "pod will increment the gauge for all plugins that caused it to not schedule and so this metric have "
        "meaning only when broken down by plugin.\n" in text
    )
    assert "# TYPE scheduler_unschedulable_pods gauge" in text
    assert "# TYPE scheduler_plugin_execution_duration_seconds histogram" in text
    m = BinderMetrics()
    m.plugin_duration.labels("DynamicResources", "PreBind", "Success").observe(0.001)
    les = [
        float(s.labels["le"])
        for s in _samples(m, "scheduler_plugin_execution_duration_seconds_bucket")
        if s.labels["le"] != "+Inf"
    ]
    assert len(les) == 20
    assert all(abs(a - b) < 1e-12 for a, b in zip(les, UPSTREAM_BUCKETS, strict=True))


def test_the_plugin_is_upstreams_for_each_filter_reason() -> None:
    assert plugins_of("0/3 nodes are available: 1 Insufficient cpu, 2 cannot allocate all claims.") == {
        "NodeResourcesFit",
        "DynamicResources",
    }
    assert plugins_of(
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s)."
    ) == {"NodeAffinity", "TaintToleration"}
    assert plugins_of("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.") == {
        "InterPodAffinity"
    }
    assert plugins_of("request gpu: device class missing does not exist") == {"DynamicResources"}


def test_unschedulable_pods_are_counted_per_plugin_and_profile_until_they_fit(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1, gpus=1, shares=2)
    for i in range(4):
        kube_api.seed(pod(f"web-{i}"))
    with running_binder(kube_api, scheduler_name="dra-capacity") as binder:
        wait_for("2 bound", lambda: len(bound(kube_api)) == 2)
        wait_for("2 events", lambda: len(events(kube_api, "FailedScheduling")) >= 2)

        def gauge() -> float | None:
            for s in _samples(binder.metrics, "scheduler_unschedulable_pods"):
                if s.labels == {"plugin": "DynamicResources", "profile": "dra-capacity"}:
                    return float(s.value)
            return None

        wait_for("gauge at 2", lambda: gauge() == 2.0)
        # the project's own counter stays beside it
        assert _samples(binder.metrics, "dra_capacity_binder_pods_unschedulable_total")
        for victim in bound(kube_api):
            kube_api.delete("pods", victim["metadata"]["name"], grace_period_seconds=0)
        wait_for("the two others bound", lambda: len(bound(kube_api)) == 2 and gauge() == 0.0)


def test_every_attempt_is_timed_at_100_percent_and_none_at_0(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1, gpus=1, shares=4)
    for i in range(3):
        kube_api.seed(pod(f"web-{i}"))
    expected = {
        ("DynamicResources", "Reserve", "Success"): 3,
        ("DynamicResources", "PreBind", "Success"): 3,
        ("DefaultBinder", "Bind", "Success"): 3,
    }
    with running_binder(kube_api, plugin_metrics_sample_percent=100) as binder:

        def counts() -> dict[tuple[str, str, str], float]:
            return {
                (s.labels["plugin"], s.labels["extension_point"], s.labels["status"]): s.value
                for s in _samples(binder.metrics, "scheduler_plugin_execution_duration_seconds_count")
            }

        wait_for("3 bound", lambda: len(bound(kube_api)) == 3)
        # a Binding is visible before its bind thread records the Bind sample: wait for the samples too
        try:
            wait_for("3 attempts timed", lambda: counts() == expected, timeout=10)
        finally:
            assert counts() == expected
    for i in range(3, 6):
        kube_api.seed(pod(f"web-{i}"))
    with running_binder(kube_api, plugin_metrics_sample_percent=0) as binder:
        wait_for("4 bound", lambda: len(bound(kube_api)) == 4)
        assert _samples(binder.metrics, "scheduler_plugin_execution_duration_seconds_count") == []
