"""`dra-capacity validate --cluster FILE`: the webhook's cluster-aware warnings offline, from a dump made with
`kubectl get resourceslices,deviceclasses -o yaml`; they never change the exit code."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import yaml

from dra_capacity.cli import main
from localcluster.objects import make_slice

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu-shared}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.nvidia.com"'}}]
  extendedResourceName: nvidia.com/gpu.shared
  extendedResourceCapacityRequests: {requests: {shraes: "1"}}
"""


def dump(tmp_path: Path) -> str:
    gpu = {
        "name": "gpu-0",
        "allowMultipleAllocations": True,
        "capacity": {"memory": {"value": "80Gi"}, "shares": {"value": "4"}},
    }
    items = [make_slice("node-1").name("node-1-gpus").devices(gpu).obj()]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", *args])
    return code, out.getvalue(), err.getvalue()


def test_a_capacity_no_device_has_is_a_warning_with_the_close_match(tmp_path: Path) -> None:
    manifest = tmp_path / "class.yaml"
    manifest.write_text(CLASS)
    code, out, err = run("--cluster", dump(tmp_path), str(manifest))
    assert code == 0
    assert out == "deviceclass.resource.k8s.io/gpu-shared created\n"
    assert err == (
        'Warning: DeviceClass gpu-shared: no device has capacity "shraes" (they have: memory, shares); '
        'did you mean "shares"?\n'
    )


def test_without_a_cluster_dump_there_is_no_such_warning(tmp_path: Path) -> None:
    manifest = tmp_path / "class.yaml"
    manifest.write_text(CLASS)
    code, out, err = run(str(manifest))
    assert (code, out, err) == (0, "deviceclass.resource.k8s.io/gpu-shared created\n", "")


def test_a_malformed_slice_in_the_dump_is_an_input_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {devices: 3}\n"
    )
    manifest = tmp_path / "class.yaml"
    manifest.write_text(CLASS)
    code, _, err = run("--cluster", str(bad), str(manifest))
    assert code == 2
    assert "ResourceSlice 's': spec.devices:" in err
