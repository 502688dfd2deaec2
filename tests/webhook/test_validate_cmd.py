"""`dra-capacity validate`: the webhook's mutation + validation offline (cli-contract.md)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dra_capacity.cli import main

GOOD = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com-shared-1
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.nvidia.com"
  extendedResourceName: nvidia.com/gpu.shared
  extendedResourceCapacityRequests:
    requests:
      shares: "1"
"""
ONE_ERROR = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: bad-one}
spec:
  selectors: [{}]
"""
TWO_ERRORS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: bad-two}
spec:
  selectors: [{}]
  extendedResourceName: example.com
"""
CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
"""


def write(tmp_path: Path, name: str, *docs: str) -> str:
    path = tmp_path / name
    path.write_text("---".join(docs))
    return str(path)


def test_valid_class_prints_created_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", write(tmp_path, "dc.yaml", GOOD)]) == 0
    assert capsys.readouterr().out == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created\n"


def test_one_cause_is_printed_inline_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", write(tmp_path, "dc.yaml", ONE_ERROR)]) == 1
    assert (
        capsys.readouterr().out
        == 'The DeviceClass "bad-one" is invalid: spec.selectors[0].cel: Required value\n'
    )


def test_several_causes_are_printed_as_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", write(tmp_path, "dc.yaml", TWO_ERRORS)]) == 1
    assert capsys.readouterr().out == (
        'The DeviceClass "bad-two" is invalid: \n'
        "* spec.selectors[0].cel: Required value\n"
        '* spec.extendedResourceName: Invalid value: "example.com": must be a valid extended resource name\n'
    )


def test_old_file_turns_the_create_into_an_update(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write(tmp_path, "old.yaml", GOOD)
    assert main(["validate", "--old", old, write(tmp_path, "dc.yaml", GOOD)]) == 0
    assert capsys.readouterr().out == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 configured\n"


def test_old_objects_are_matched_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = yaml.safe_load(GOOD)
    other["metadata"]["name"] = "gpu-other"
    old = write(tmp_path, "old.yaml", "\n" + yaml.safe_dump(other), CONFIGMAP)
    assert (
        main(["validate", "--old", old, write(tmp_path, "dc.yaml", GOOD, "\n" + yaml.safe_dump(other))]) == 0
    )
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created",
        "deviceclass.resource.k8s.io/gpu-other configured",
    ]
    assert "old.yaml: document 2: skipping ConfigMap 'cm' (--old): not a DeviceClass" in captured.err


def test_generate_name_is_never_matched_to_an_old_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(GOOD)
    doc["metadata"] = {"generateName": "gpu-"}
    manifest = yaml.safe_dump(doc)
    assert (
        main(
            ["validate", "--old", write(tmp_path, "old.yaml", manifest), write(tmp_path, "dc.yaml", manifest)]
        )
        == 0
    )
    assert capsys.readouterr().out == "deviceclass.resource.k8s.io/gpu- created\n"


def test_dash_reads_the_manifests_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(GOOD + "---" + ONE_ERROR))
    assert main(["validate", "-"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created",
        'The DeviceClass "bad-one" is invalid: spec.selectors[0].cel: Required value',
    ]


def test_only_skipped_documents_exit_0_with_no_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "-o", "json", write(tmp_path, "cm.yaml", CONFIGMAP)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"results": []}
    assert "skipping ConfigMap 'cm': not a DeviceClass" in captured.err


def test_update_ratchets_an_unchanged_invalid_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.yaml", TWO_ERRORS)
    new = yaml.safe_load(TWO_ERRORS)
    new["metadata"]["labels"] = {"team": "gpu"}
    assert main(["validate", "--old", old, write(tmp_path, "dc.yaml", yaml.safe_dump(new))]) == 0
    assert capsys.readouterr().out == "deviceclass.resource.k8s.io/bad-two configured\n"


def test_warnings_come_before_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(GOOD)
    del doc["spec"]["extendedResourceName"]
    doc["metadata"]["name"] = "gpu-shared"
    assert main(["validate", write(tmp_path, "dc.yaml", yaml.safe_dump(doc))]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Warning: capacity requests apply only to deviceclass.resource.kubernetes.io/gpu-shared: "
        "extendedResourceName is unset",
        "deviceclass.resource.k8s.io/gpu-shared created",
    ]


def test_other_kinds_are_skipped_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", write(tmp_path, "all.yaml", CONFIGMAP, GOOD)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created\n"
    assert "all.yaml: document 1: skipping ConfigMap 'cm': not a DeviceClass" in captured.err


def test_json_output_has_the_contract_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "dc.yaml", GOOD, ONE_ERROR)
    assert main(["validate", "-o", "json", "--feature-gates", "DRAExtendedResourceCapacity=false", path]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "results": [
            {
                "name": "gpu.nvidia.com-shared-1",
                "allowed": True,
                "warnings": [],
                "causes": [],
                "patch": [{"op": "remove", "path": "/spec/extendedResourceCapacityRequests"}],
            },
            {
                "name": "bad-one",
                "allowed": False,
                "warnings": [],
                "causes": [
                    {
                        "field": "spec.selectors[0].cel",
                        "type": "FieldValueRequired",
                        "message": "Required value",
                    }
                ],
                "patch": [],
            },
        ]
    }


def test_unreadable_input_exits_2_and_prints_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, "bad.yaml", "kind: DeviceClass\n  - : [")
    assert main(["validate", write(tmp_path, "dc.yaml", GOOD), bad]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "bad.yaml" in captured.err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: cannot read" in capsys.readouterr().err


def test_unknown_gate_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate", "--feature-gates", "NoSuchGate=true", write(tmp_path, "dc.yaml", GOOD)])
    assert exc.value.code == 2
    assert "NoSuchGate" in capsys.readouterr().err


def test_console_script_runs_validate(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "dra-capacity"
    proc = subprocess.run(
        [str(script), "validate", write(tmp_path, "dc.yaml", GOOD, ONE_ERROR)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created",
        'The DeviceClass "bad-one" is invalid: spec.selectors[0].cel: Required value',
    ]
