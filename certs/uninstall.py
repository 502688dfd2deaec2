"""What the chart's pre-delete hook does after removing the webhook configurations: stop the release's own
Deployments, then delete what the product made and Helm does not own (the Leases; the Secret is
`CertCluster.delete_secret`).

Stopping first is what makes the deletions stick and keeps the uninstall quiet: a running certificate
controller recreates a deleted Secret, a binder renews its deleted Lease, and Helm deletes the release's
Roles while the pods of a deleted Deployment still run, so their last requests are denied (403). Kyverno's
chart scales its controllers to zero in its pre-delete hook for the same reason. The webhook configurations
are gone by then, so no admission waits on the stopped webhook.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from kubeio.kube import LEASES, PODS, ApiError, Kube, Resource

DEPLOYMENTS = Resource("apps/v1", "deployments", True)


def stop_deployments(kube: Kube, namespace: str, names: Sequence[str], timeout: float) -> list[str]:
    """Scale each Deployment to 0 and wait until none of their pods is left (at most `timeout` seconds).
    Returns one line per Deployment saying what happened; a missing one is fine."""
    lines: list[str] = []
    selectors: list[str] = []
    for name in names:
        try:
            got = kube.request(
                "PATCH",
                DEPLOYMENTS.path(namespace, name),
                body={"spec": {"replicas": 0}},
                content_type="application/merge-patch+json",
            )
        except ApiError as exc:
            if exc.status != 404:
                raise
            lines.append(f"deployment {namespace}/{name} not found")
            continue
        labels = ((got.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selectors.append(",".join(f"{k}={v}" for k, v in sorted(labels.items())))
        lines.append(f"scaled deployment {namespace}/{name} to 0")
    deadline = time.monotonic() + timeout
    for selector in selectors:
        while selector:
            left = kube.list(PODS, {"labelSelector": selector}, namespace=namespace).get("items") or []
            if not left:
                break
            if time.monotonic() >= deadline:
                lines.append(f"{len(left)} pod(s) with {selector} still running after {timeout:.0f}s")
                break
            time.sleep(1.0)
    return lines


def delete_leases(kube: Kube, namespace: str, names: Sequence[str]) -> list[str]:
    """Delete each Lease; the names of those deleted (absent is fine)."""
    deleted: list[str] = []
    for name in names:
        try:
            kube.request("DELETE", LEASES.path(namespace, name))
        except ApiError as exc:
            if exc.status != 404:
                raise
            continue
        deleted.append(f"lease {namespace}/{name}")
    return deleted
