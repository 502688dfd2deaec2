"""`localcluster.install.install_product` on a real control plane without a network namespace (where one
cannot be created: not root, no `ip`): the chart's webhook configurations fall back to the `url:` form, the
processes listen on free host ports, and the product works: the DeviceClass webhook denies a zero share
request in the annotation carrier, and an unchanged pod in an opted-in namespace is routed and bound."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from localcluster.cluster import Cluster, ClusterConfig, ClusterError
from localcluster.install import (
    ANNOTATION,
    install_product,
    opted_in_namespace,
    shared_gpu_class,
    wait_routed,
)


def test_without_a_network_namespace_the_webhooks_use_url_and_the_product_works(
    real_cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = real_cluster_factory(ClusterConfig(netns=False))
    installed = install_product(cluster, tmp_path / "product")
    try:
        assert installed.webhook_url.startswith("https://127.0.0.1:") and not installed.webhook_url.endswith(
            ":8443"
        )
        for kind, name in installed.webhook_configurations:
            plural = kind.lower() + "s"
            status, body = cluster.request("GET", f"/apis/admissionregistration.k8s.io/v1/{plural}/{name}")
            assert status == 200
            assert all(w["clientConfig"]["url"].startswith(installed.webhook_url) for w in body["webhooks"])
        bad = shared_gpu_class("zero-shares", shares="0")

        def denied() -> str:
            done = cluster.kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
            return done.stderr if done.returncode != 0 else ""

        message = cluster.wait_for("the DeviceClass webhook's denial", denied, 30, interval=0.5)
        assert f"metadata.annotations[{ANNOTATION}]" in message and "must be greater than zero" in message
        for obj in (opted_in_namespace("tenant"), shared_gpu_class()):
            cluster.create(obj)
        wait_routed(cluster, "tenant")
        cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "unchanged", "namespace": "tenant"},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"limits": {"nvidia.com/gpu.shared": "1"}},
                        }
                    ]
                },
            }
        )
        pod = cluster.wait_for(
            "the pod bound by the binder",
            lambda: (lambda p: p if p["spec"].get("nodeName") else None)(
                cluster.request("GET", "/api/v1/namespaces/tenant/pods/unchanged")[1]
            ),
            60,
        )
        assert pod["spec"]["schedulerName"] == "dra-capacity"
        assert pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"].startswith(
            "unchanged-extended-resources-"
        )
        try:
            cluster.expose("x", "y", 1)
        except ClusterError as error:
            assert "no network namespace" in str(error)
        else:
            raise AssertionError("expose() worked without a network namespace")
    finally:
        installed.stop()
    assert installed.alive() == []
