"""The conventions kubectl users expect, shared by `validate` and `simulate` (docs/simulate.md, "Input, output
and exit codes"; docs/validation.md, `dra-capacity validate`): input reading, streams, exit codes, machine
output, version and help."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from support.deviceclasses import shared_gpu_class_yaml

from dra_capacity.cli import main
from localcluster.objects import make_claim

ROOT = Path(__file__).resolve().parents[2]
GPU_CLUSTER = str(ROOT / "docs" / "examples" / "gpu-shared" / "cluster.yaml")
GPU_PODS = str(ROOT / "docs" / "examples" / "gpu-shared" / "pods.yaml")

CLASS = shared_gpu_class_yaml("gpu-shared")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- version and help ---------------------------------------------------------------------------------------


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"dra-capacity {version('dra-capacity')}\n"


@pytest.mark.parametrize(
    "argv", [[], ["serve"], ["validate"], ["simulate"]], ids=lambda a: " ".join(a) or "main"
)
def test_help_ends_with_a_newline_and_documents_exit_status(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert out.endswith("\n") and not out.endswith("\n\n")
    assert "exit status" in out


def test_the_command_list_names_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("serve", "validate", "simulate"):
        assert f"    {command} " in out


# --- input: -f, positional, stdin, directories, -R ---------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_dash_f_repeated_and_positional_files_are_read_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    if command == "validate":
        (tmp_path / "a.yaml").write_text(CLASS)
        (tmp_path / "b.yaml").write_text(CLASS.replace("name: gpu-shared", "name: other"))
        code, out, _ = run(capsys, command, "-f", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"))
        assert code == 0 and out.count(" created") == 2
    else:
        code, out, _ = run(capsys, command, "-f", GPU_CLUSTER, GPU_PODS)
        assert code == 0 and len(json.loads(out)["pods"]) == 6


@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_dash_f_dash_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    text = (
        CLASS
        if command == "validate"
        else Path(GPU_CLUSTER).read_text() + "---\n" + Path(GPU_PODS).read_text()
    )
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code, out, _ = run(capsys, command, "-f", "-")
    assert code == 0 and out


@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_a_directory_is_read_sorted_and_recursively_with_R(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    (tmp_path / "sub").mkdir()
    if command == "validate":
        (tmp_path / "b.yaml").write_text(CLASS.replace("name: gpu-shared", "name: b"))
        (tmp_path / "a.json").write_text(
            json.dumps(yaml.safe_load(CLASS.replace("name: gpu-shared", "name: a")))
        )
        (tmp_path / "sub" / "c.yml").write_text(CLASS.replace("name: gpu-shared", "name: c"))
        names = lambda out: [line.split("/")[1].split()[0] for line in out.splitlines()]  # noqa: E731
        assert names(run(capsys, command, str(tmp_path))[1]) == ["a", "b"]
        assert names(run(capsys, command, "-R", "-f", str(tmp_path))[1]) == ["a", "b", "c"]
    else:
        (tmp_path / "cluster.yaml").write_text(Path(GPU_CLUSTER).read_text())
        (tmp_path / "sub" / "pods.yaml").write_text(Path(GPU_PODS).read_text())
        code, out, _ = run(capsys, command, "-f", str(tmp_path))
        assert code == 0 and json.loads(out)["pods"] == []
        code, out, _ = run(capsys, command, "-R", "-f", str(tmp_path))
        assert code == 0 and len(json.loads(out)["pods"]) == 6


# --- strictness, streams and exit codes ---------------------------------------------------------------------


def test_validate_strict_fails_a_typo_as_kubectl_validate_strict_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "dc.yaml"
    typo.write_text(CLASS.replace("extendedResourceName:", "extendedResourceNmae:"))
    code, out, err = run(capsys, "validate", str(typo))
    assert code == 0 and 'Warning: unknown field "spec.extendedResourceNmae"' in err
    code, out, err = run(capsys, "validate", "--strict", str(typo))
    assert (code, out) == (1, "")
    assert err == (
        'Error from server (BadRequest): DeviceClass in version "v1" cannot be handled as a DeviceClass: '
        'strict decoding error: unknown field "spec.extendedResourceNmae"\n'
    )
    code, out, _ = run(capsys, "validate", "--strict", "-o", "json", str(typo))
    [result] = json.loads(out)["results"]
    assert result["allowed"] is False
    assert result["causes"] == [
        {
            "field": "spec.extendedResourceNmae",
            "type": "FieldValueInvalid",
            "message": "unknown field",
            "native": False,
        }
    ]


def test_validate_says_in_words_which_field_its_gate_drops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "dc.yaml"
    path.write_text(CLASS)
    code, out, err = run(
        capsys, "validate", "--feature-gates", "DRAExtendedResourceCapacity=false", str(path)
    )
    assert (code, out) == (0, "deviceclass.resource.k8s.io/gpu-shared created\n")
    assert err == (
        f"{path}: document 1: deviceclass.resource.k8s.io/gpu-shared: spec.extendedResourceCapacityRequests "
        "dropped: feature gate DRAExtendedResourceCapacity is disabled, so the API server does not store it\n"
    )


@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_errors_have_one_prefix_style(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [\n")
    code, out, err = run(capsys, command, "-f", str(bad))
    assert (code, out) == (2, "")
    assert err.startswith(f"dra-capacity {command}: error: {bad}: not valid YAML or JSON (line ")


def test_simulate_fail_unschedulable_exits_1_only_when_something_is_not_placed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "simulate", "--fail-unschedulable", "-f", GPU_CLUSTER, "-f", GPU_PODS)[0] == 0
    pods = [p for p in yaml.safe_load_all(Path(GPU_PODS).read_text()) if p]
    many = []
    for i in range(4):  # four more copies of the workload: more shares than the two nodes have
        for p in pods:
            q = json.loads(json.dumps(p))
            q["metadata"]["name"] += f"-{i}"
            many.append(q)
    extra = tmp_path / "more.yaml"
    extra.write_text(yaml.safe_dump_all(many))
    code, out, _ = run(capsys, "simulate", "-f", GPU_CLUSTER, "-f", GPU_PODS, "-f", str(extra))
    assert code == 0 and any(p["result"] == "unschedulable" for p in json.loads(out)["pods"])
    code, out, _ = run(
        capsys, "simulate", "--fail-unschedulable", "-f", GPU_CLUSTER, "-f", GPU_PODS, "-f", str(extra)
    )
    assert code == 1 and json.loads(out)["pods"]  # the result is still printed


def test_claim_mode_fail_unschedulable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claim = make_claim("big").request("gpu", "gpu.nvidia.com-shared-1", {"shares": "5"}).obj()
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(claim))
    args = ["simulate", "--node", "gpu-node-1", "-f", GPU_CLUSTER, "-f", str(path)]
    code, out, _ = run(capsys, *args)
    assert code == 0 and json.loads(out)["result"] != "allocated"
    assert run(capsys, *args, "--fail-unschedulable")[0] == 1


# --- machine output -----------------------------------------------------------------------------------------


def test_simulate_json_carries_sources_and_the_device_summary_of_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "simulate", "-f", GPU_CLUSTER, "-f", GPU_PODS)
    result = json.loads(out)
    assert code == 0
    assert [(p["file"], p["document"], p["item"]) for p in result["pods"]] == [
        (GPU_PODS, i, None) for i in range(1, 7)
    ]
    _, table, _ = run(capsys, "simulate", "-f", GPU_CLUSTER, "-f", GPU_PODS, "-o", "table")
    summary = table.split("DEVICE                            CAPACITY")[1].splitlines()[1:]
    rows = [line.split() for line in summary if line.strip()]
    assert [
        [f"{d['driver']}/{d['pool']}/{d['device']}", d["capacity"], str(d["used"]), str(d["total"])]
        for d in result["devices"]
    ] == rows


def test_simulate_yaml_is_the_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "simulate", "-f", GPU_CLUSTER, "-f", GPU_PODS, "-o", "yaml")
    doc = yaml.safe_load(out)
    assert doc["mode"] == "pods" and len(doc["pods"]) == 6 and doc["devices"]
    assert doc["pods"][0]["file"] == GPU_PODS


def test_validate_yaml_and_json_name_the_file_document_and_list_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = tmp_path / "list.yaml"
    listed.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [yaml.safe_load(CLASS)] * 2}).replace(
            "gpu-shared", "a", 1
        )
    )
    code, out, _ = run(capsys, "validate", "-o", "yaml", str(listed))
    assert code == 0
    assert [(r["file"], r["document"], r["item"]) for r in yaml.safe_load(out)["results"]] == [
        (str(listed), 1, 0),
        (str(listed), 1, 1),
    ]


def test_a_pod_served_by_the_device_plugin_is_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [d for d in yaml.safe_load_all(Path(GPU_CLUSTER).read_text()) if d]
    for d in docs:
        if d["kind"] == "Node":
            d["status"]["allocatable"]["nvidia.com/gpu.shared"] = "16"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(docs))
    code, out, err = run(capsys, "simulate", "-f", str(cluster), "-f", GPU_PODS)
    pods = json.loads(out)["pods"]
    assert code == 0
    assert all(p["devicePlugin"] == ["nvidia.com/gpu.shared"] and p["claim"] is None for p in pods)
    assert (
        f"note: inference/web-0: nvidia.com/gpu.shared served by the device plugin on node {pods[0]['node']}"
        in err
    )


def test_simulate_strict_names_every_unknown_field_of_the_first_bad_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = [p for p in yaml.safe_load_all(Path(GPU_PODS).read_text()) if p]
    pods[1]["spec"]["nodeNmae"] = "gpu-node-1"
    pods[1]["spec"]["containers"][0]["resoures"] = {}
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all(pods))
    assert run(capsys, "simulate", "-f", GPU_CLUSTER, "-f", str(path))[0] == 0  # typos are ignored...
    code, out, err = run(capsys, "simulate", "--strict", "-f", GPU_CLUSTER, "-f", str(path))
    assert (code, out) == (2, "")  # ...unless --strict
    assert err == (
        f'dra-capacity simulate: error: {path}: document 2: Pod "inference/web-1": strict decoding error: '
        'unknown field "spec.containers[0].resoures", unknown field "spec.nodeNmae"\n'
    )


def test_simulate_strict_knows_every_field_of_the_examples_and_the_kep_6406_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert run(capsys, "simulate", "--strict", "-f", GPU_CLUSTER, "-f", GPU_PODS)[0] == 0
    # the examples carry the capacity request in the annotation (what released API servers keep); the field
    # itself is known too
    docs = [d for d in yaml.safe_load_all(Path(GPU_CLUSTER).read_text()) if d]
    cls = docs[0]
    carried = json.loads(
        cls["metadata"]["annotations"].pop("dra-capacity.io/extended-resource-capacity-requests")
    )
    cls["spec"]["extendedResourceCapacityRequests"] = carried
    field = tmp_path / "cluster.yaml"
    field.write_text(yaml.safe_dump_all(docs))
    code, out, err = run(capsys, "simulate", "--strict", "-f", str(field), "-f", GPU_PODS, "-o", "table")
    assert code == 0 and err == ""
    annotated = run(capsys, "simulate", "-f", GPU_CLUSTER, "-f", GPU_PODS, "-o", "table")[1]
    share_id = re.compile(r"(?<= )[0-9a-f]{8}(?= )")
    assert "shares=1" in out and share_id.sub("-", out) == share_id.sub("-", annotated)
