"""The Grafana dashboard ConfigMap: off by default, labelled for Grafana's sidecar when on, and every query
(panels and template variables) reads only metric names the product exports, collected from the product's
own registries (the webhook's, the pod router's, the binder's and its capacity metrics), never a list kept
by hand."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support.chart_render import objects, of_kind, template

from binder.metrics import BinderMetrics
from binder.usage_metrics import UsageMetrics
from resourceapi.gates import FeatureGates
from webhook.podrouting.pod_routing import PodRoutingMetrics
from webhook.server.metrics import WebhookMetrics

ON = "grafana.dashboard.enabled=true"
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
    "unknown": ("",),
}
_FUNCTIONS_AND_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
}
_AGGREGATION = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")


def exported_names() -> set[str]:
    """Every sample name the product's registries can expose, by family type."""
    binder = BinderMetrics()
    UsageMetrics(binder.registry, FeatureGates.defaults(), per_device=True)
    webhook = WebhookMetrics()
    PodRoutingMetrics(webhook.registry)
    names: set[str] = set()
    for registry in (binder.registry, webhook.registry):
        for family in registry.collect():
            names.update(family.name + suffix for suffix in _SUFFIXES[family.type])
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are not functions (followed by `(`), not
    keywords, label names (in `{...}` or after by/without/on/ignoring), strings, ranges or variables."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\$\{?\w+\}?", "", text)
    text = _AGGREGATION.sub("", text)
    found = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        if following.startswith("(") or match.group() in _FUNCTIONS_AND_KEYWORDS:
            continue
        found.add(match.group())
    return found


def queries(dashboard: dict[str, Any]) -> list[str]:
    out: list[str] = []

    def panels(items: list[dict[str, Any]]) -> None:
        for panel in items:
            out.extend(t["expr"] for t in panel.get("targets", []) if t.get("expr"))
            panels(panel.get("panels", []))

    panels(dashboard["panels"])
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if variable["type"] == "query":
            text = query["query"] if isinstance(query, dict) else query
            out.append(re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", text))
    return out


def dashboard(*sets: str) -> tuple[dict[str, Any], dict[str, Any]]:
    [config_map] = [
        o for o in of_kind(objects(ON, *sets), "ConfigMap") if o["metadata"]["name"].endswith("-dashboard")
    ]
    return config_map, json.loads(config_map["data"]["dra-capacity.json"])


def test_the_dashboard_is_off_by_default() -> None:
    assert not [o for o in of_kind(objects(), "ConfigMap") if o["metadata"]["name"].endswith("-dashboard")]


def test_the_configmap_carries_the_sidecars_label_and_the_settings() -> None:
    config_map, _ = dashboard(
        "grafana.dashboard.namespace=monitoring", "grafana.dashboard.annotations.grafana_folder=DRA"
    )
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["labels"]["app.kubernetes.io/name"] == "dra-capacity"
    assert config_map["metadata"]["namespace"] == "monitoring"
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "DRA"}


def test_every_query_reads_only_metrics_the_product_exports() -> None:
    _, board = dashboard()
    exported = exported_names()
    used: set[str] = set()
    for expr in queries(board):
        names = metric_names(expr)
        assert names, f"no metric found in {expr!r}"
        assert names <= exported, f"{expr!r} reads {sorted(names - exported)}, which nothing exports"
        used |= names
    # the panels: headroom per class, use per node, unschedulable by reason, bind latency, webhook
    assert {
        "dra_capacity_binder_class_headroom_pods",
        "dra_capacity_binder_node_used_units",
        "dra_capacity_binder_node_capacity_units",
        "dra_capacity_binder_pods_unschedulable_total",
        "dra_capacity_binder_bind_latency_seconds_bucket",
        "dra_capacity_webhook_requests_total",
    } <= used


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            'sum by (reason) (rate(foo_total{namespace=~"$namespace", a="b(c)"}[$__rate_interval]))',
            {"foo_total"},
        ),
        ("histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))", {"x_bucket"}),
        ("a / on (node) group_left (class) b - c", {"a", "b", "c"}),
    ],
)
def test_the_name_reader_finds_the_metrics_and_only_them(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_a_misspelled_metric_would_be_caught() -> None:
    assert not metric_names("rate(dra_capacity_binder_pods_bond_total[5m])") <= exported_names()


def test_the_schema_refuses_unknown_dashboard_settings() -> None:
    proc = template("grafana.dashboard.enable=true")
    assert proc.returncode != 0
    assert "additional properties 'enable' not allowed" in proc.stderr
