"""Rendering the chart with the real helm binary (fetched into the venv by `make install`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "charts" / "dra-capacity"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
NAMESPACE = "dra-system"


def helm() -> str:
    beside = Path(sys.executable).parent / "helm"
    if beside.exists():
        return str(beside)
    found = shutil.which("helm")
    assert found, "helm is not installed: `make install` fetches it (scripts/fetch_helm.py)"
    return found


def template(
    *sets: str, values: Path | None = None, release: str = "rel", flags: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """`helm template` with `--set` SETS, a values file and `flags` (`--kube-version`, `--api-versions`)."""
    args = [helm(), "template", release, str(CHART), "--namespace", NAMESPACE, *flags]
    if values is not None:
        args += ["-f", str(values)]
    for s in sets:
        args += ["--set", s]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def objects(
    *sets: str, values: Path | None = None, release: str = "rel", flags: Sequence[str] = ()
) -> list[dict[str, Any]]:
    proc = template(*sets, values=values, release=release, flags=flags)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def one(objs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in of_kind(objs, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {[o['metadata']['name'] for o in found]}"
    return found[0]


def pod_specs(objs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every pod spec the chart renders (Deployments, Jobs, the test Pod), with the owner's name."""
    for o in objs:
        if o["kind"] in ("Deployment", "Job"):
            yield o["metadata"]["name"], o["spec"]["template"]["spec"]
        elif o["kind"] == "Pod":
            yield o["metadata"]["name"], o["spec"]


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def mounts_token(container: dict[str, Any]) -> bool:
    return any(
        m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"
        for m in container.get("volumeMounts", [])
    )
