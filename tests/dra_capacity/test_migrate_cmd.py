"""`dra-capacity migrate plan` through the real command: an export or a live cluster (the API-server double,
never written to), the three parts as a table and as `-o json|yaml`, `--write-classes`, and the CLI
contract's errors (one line naming file, object and field; exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubeapi import KubeAPIServer
from support.migrate_cluster import CLASS, RESOURCE, as_list, cluster, dp_node, gpu_pod, pdb, plugin_configmap
from support.simulate_cli import assert_unreadable_cluster_is_one_line

from dra_capacity.cli import main


def export(tmp_path: Path, objs: list[dict[str, Any]] | None = None, name: str = "cluster.yaml") -> str:
    path = tmp_path / name
    path.write_text(
        as_list(objs if objs is not None else [*cluster(), plugin_configmap(), pdb("web", "web")])
    )
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["migrate", "plan", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_table_has_the_classes_the_workloads_and_the_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "-f", export(tmp_path))
    assert code == 0
    assert err == "note: using the device plugin config in ConfigMap gpu-operator/time-slicing-config\n"
    parts = [line for line in out.splitlines() if line in ("CLASSES", "WORKLOADS", "STEPS")]
    assert parts == ["CLASSES", "WORKLOADS", "STEPS"]
    assert f"{CLASS}   {RESOURCE}" in out and "Deployment/web" in out
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"] and all("yes" in r for r in rows)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_the_document_has_classes_workloads_and_steps_each_with_node_and_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    code, out, _ = run(capsys, "-f", export(tmp_path), "-o", output)
    doc = json.loads(out) if output == "json" else yaml.safe_load(out)
    assert code == 0 and list(doc)[:3] == ["classes", "workloads", "steps"]
    assert [s["node"] for s in doc["steps"]] == [[], ["gpu-node-1"], ["gpu-node-2"], ["gpu-node-3"]]
    assert all(s["fits"] is True for s in doc["steps"])
    assert doc["steps"][1]["drain"]["disruptionBudgets"] == [
        {"name": "inference/web", "evicted": 3, "allowed": 1, "waits": True, "stalls": 0}
    ]


def test_write_classes_writes_manifests_validate_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "classes"
    code, _, _ = run(capsys, "-f", export(tmp_path), "--write-classes", str(out_dir), "-o", "json")
    assert code == 0
    assert sorted(p.name for p in out_dir.iterdir()) == [f"{CLASS}.yaml"]
    assert main(["validate", str(out_dir / f"{CLASS}.yaml")]) == 0
    assert f"deviceclass.resource.k8s.io/{CLASS} created" in capsys.readouterr().out


def test_a_step_that_cannot_keep_every_pod_exits_1_with_fail_unschedulable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objs = [dp_node("n1", gpus=1), dp_node("n2", gpus=1), gpu_pod("pair", "n1", 2), gpu_pod("one", "n2")]
    for o in objs[:2]:
        o["status"]["allocatable"][RESOURCE] = o["status"]["capacity"][RESOURCE] = "4"
    path = export(tmp_path, objs)
    code, out, _ = run(capsys, "-f", path)
    assert code == 0 and "step 2 (the first that cannot keep every pod):" in out
    assert "not placed: inference/pair" in out and "needs 2 devices" in out
    code, _, _ = run(capsys, "-f", path, "--fail-unschedulable", "-o", "json")
    assert code == 1


def test_a_plugin_config_file_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "plugin.yaml"
    config.write_text(yaml.safe_dump(plugin_configmap(replicas=4)))
    code, out, err = run(
        capsys, "-f", export(tmp_path, cluster()), "--plugin-config", str(config), "-o", "json"
    )
    assert (code, err) == (0, "")
    assert json.loads(out)["classes"][0]["sharesPerGPU"] == [4]


@pytest.mark.parametrize(
    ("objs", "flags", "message"),
    [
        ([*cluster(), plugin_configmap(replicas=0)], [],
         'ConfigMap "gpu-operator/time-slicing-config": data[any]: '
         "sharing.timeSlicing.resources[0].replicas: Invalid value: 0"),
        ([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-1"}, "status": {"allocatable": {}}}],
         [], "nothing to migrate"),
        (cluster(), ["--plugin-config", "gpu-operator/missing"],
         "--plugin-config gpu-operator/missing: no such ConfigMap in the input"),
        ([*cluster(), {**pdb("web", "web"), "spec": {"selector": {"matchLabels": "app"}}}], [],
         'PodDisruptionBudget "inference/web": spec.selector.matchLabels'),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    objs: list[dict[str, Any]],
    flags: list[str],
    message: str,
) -> None:
    code, out, err = run(capsys, "-f", export(tmp_path, objs), *flags)
    assert (code, out) == (2, "")
    assert err.startswith("dra-capacity migrate plan: error: ") and err.count("\n") == 1
    assert message in err


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        run(capsys, "-f", export(tmp_path), "--kubeconfig", "k")
    assert caught.value.code == 2 and "not both" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        run(capsys)
    assert caught.value.code == 2
    code, _, err = run(capsys, "-f", str(tmp_path / "missing.yaml"))
    assert code == 2 and "missing.yaml" in err


# --- a live cluster: the API-server double ------------------------------------------------------------------


def test_a_live_cluster_gives_the_exports_plan_and_is_never_written(
    kube_api: KubeAPIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the double serves no ReplicaSets, and its garbage collector removes pods whose owner is missing
    objs = [o for o in [*cluster(), plugin_configmap()] if o["kind"] != "ReplicaSet"]
    for obj in objs:
        obj["metadata"].pop("ownerReferences", None)
        kube_api.seed(obj)
    kube_api.clear_requests()
    flags = ("--plugin-config", "gpu-operator/time-slicing-config", "-o", "json")
    code, out, err = run(capsys, "--kubeconfig", str(kube_api.kubeconfig_path), *flags)
    assert code == 0, err
    live = json.loads(out)
    _, from_export, _ = run(capsys, "-f", export(tmp_path, objs), *flags)
    assert live == json.loads(from_export)
    assert [s["node"] for s in live["steps"]][1:] == [["gpu-node-1"], ["gpu-node-2"], ["gpu-node-3"]]
    assert (
        len(live["workloads"]) == 6 and "note: the cluster serves no replicasets" in err
    )  # the double serves PDBs
    assert {r.method for r in kube_api.requests} == {"GET"}


def test_a_cluster_that_cannot_be_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_unreadable_cluster_is_one_line(tmp_path, capsys, "migrate", "plan")
