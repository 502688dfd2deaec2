"""The realistic inputs as a user's export: the realistic DeviceClasses and ResourceSlices that the
validation accepts (the differential holds it to the real API server's verdicts), their nodes, and an
admin-access claim with its pod, in one `kind: List` with no Namespaces, as `kubectl get ... -A -o yaml`
writes it. `simulate` must take that export on each release, with each gate turned on alone (issue 39):
what it does not contain (the claim's namespace) is a warning, never a refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.simulate_cli import run_simulate

from differential.corpus import realistic
from dra_capacity.apiverdict import Judge
from resourceapi.gates import FeatureGates

GATES = (
    "",
    "DRAListTypeAttributes=true",
    "DRAFractionalCapacityRange=true",
    "DRAConsumableCapacity=true",
    "DRAPartitionableDevices=true",
    "DRADeviceTaints=true",
)


def _export(release: str, gates: str) -> tuple[dict[str, Any], int]:
    """The accepted realistic objects, their nodes and an admin-access claim, as one List; and how many
    ResourceSlices it holds."""
    judge = Judge(FeatureGates.parse(gates, release))
    accepted = [o for _, o in realistic() if judge.judge(o).allowed]
    nodes = sorted({str(o["spec"]["nodeName"]) for o in accepted if o["spec"].get("nodeName")})
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "debug", "namespace": "ops"},
        "spec": {
            "devices": {
                "requests": [{"name": "r", "exactly": {"deviceClassName": "admin", "adminAccess": True}}]
            }
        },
    }
    admin = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "admin"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]},
    }
    items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}} for n in nodes]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "debug", "namespace": "ops"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "debug"}],
        },
    }
    items += [*accepted, admin, claim, pod]
    slices = sum(1 for o in accepted if o["kind"] == "ResourceSlice")
    return {"apiVersion": "v1", "kind": "List", "items": items}, slices


@pytest.mark.parametrize("release", ["1.37", "1.38"])
@pytest.mark.parametrize("gates", GATES)
def test_simulate_takes_the_realistic_export_without_namespaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], release: str, gates: str
) -> None:
    export, slices = _export(release, gates)
    assert slices >= 40
    lists = [
        o
        for o in export["items"]
        if o["kind"] == "ResourceSlice" and '"strings"' in json.dumps(o["spec"].get("devices"))
    ]
    assert bool(lists) == gates.startswith("DRAListTypeAttributes")  # the gated input is there when it may be
    path = tmp_path / "export.yaml"
    path.write_text(yaml.safe_dump(export, sort_keys=False))
    argv = ["--kubernetes-version", release, *(["--feature-gates", gates] if gates else []), "-f", str(path)]
    code, out, err = run_simulate(capsys, *argv)
    assert code == 0, err
    assert [(p["name"], p["result"]) for p in json.loads(out)["pods"]] == [("debug", "bound")]
    assert 'namespace "ops" is not in the input' in err
