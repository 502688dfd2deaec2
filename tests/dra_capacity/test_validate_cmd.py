"""`dra-capacity validate`: the webhook's mutation + validation offline (docs/validation.md, section
`dra-capacity validate`)."""

from __future__ import annotations

import errno
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.deviceclasses import shared_gpu_class_yaml

from dra_capacity.cli import build_parser, main
from dra_capacity.validate_cmd import run_validate

GOOD = "\n" + shared_gpu_class_yaml("gpu.nvidia.com-shared-1")
BAD_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {name}}}
spec:
  selectors: [{{}}]
"""
ONE_ERROR = BAD_CLASS.format(name="bad-one")
TWO_ERRORS = BAD_CLASS.format(name="bad-two") + "  extendedResourceName: example.com\n"
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
    path = write(tmp_path, "dc.yaml", ONE_ERROR)
    assert main(["validate", path]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # rejections go to stderr, as kubectl prints them
    assert captured.err == (
        'The DeviceClass "bad-one" is invalid: spec.selectors[0].cel: Required value\n'
        + native_note(path, "bad-one", "spec.selectors[0].cel", document=1)
    )


def test_several_causes_are_printed_as_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "dc.yaml", TWO_ERRORS)
    assert main(["validate", path]) == 1
    assert capsys.readouterr().err == (
        'The DeviceClass "bad-two" is invalid: \n'
        "* spec.selectors[0].cel: Required value\n"
        '* spec.extendedResourceName: Invalid value: "example.com": a name must be a domain-prefixed path, '
        "such as 'example.com/my-prop'\n"
        + native_note(path, "bad-two", "spec.selectors[0].cel, spec.extendedResourceName", document=1)
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
    captured = capsys.readouterr()
    assert captured.out == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created\n"
    assert captured.err == (
        'The DeviceClass "bad-one" is invalid: spec.selectors[0].cel: Required value\n'
        + native_note("<stdin>", "bad-one", "spec.selectors[0].cel")
    )


def test_a_run_that_validated_no_device_class_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "cm.yaml", CONFIGMAP)
    assert main(["validate", "-o", "json", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "skipping ConfigMap 'cm': not a DeviceClass" in captured.err
    assert captured.err.endswith(
        f"dra-capacity validate: error: {path}: no DeviceClass found: nothing was validated\n"
    )


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
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "Warning: capacity requests apply only to deviceclass.resource.kubernetes.io/gpu-shared: "
        "extendedResourceName is unset",
    ]
    assert captured.out == "deviceclass.resource.k8s.io/gpu-shared created\n"


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
                "file": path,
                "document": 1,
                "item": None,
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
                        "native": True,
                    }
                ],
                "patch": [],
                "file": path,
                "document": 2,
                "item": None,
            },
        ]
    }


def test_an_unparseable_file_is_reported_and_the_others_are_still_validated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, "bad.yaml", "kind: DeviceClass\n  - : [")
    assert main(["validate", write(tmp_path, "dc.yaml", GOOD), bad]) == 2
    captured = capsys.readouterr()
    assert captured.out == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created\n"
    assert captured.err.startswith(f"dra-capacity validate: error: {bad}: not valid YAML or JSON (line 2")


def test_a_directory_with_a_non_kubernetes_yaml_reports_that_file_checks_the_rest_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As kubeconform does (and `kubectl apply -f DIR`): one line per file left out, every other file
    judged and printed, a non-zero exit at the end."""
    d = tmp_path / "manifests"
    d.mkdir()
    write(d, "a-class.yaml", GOOD)
    values = write(d, "b-values.yaml", "replicaCount: 2\nimage: {tag: v1}\n")
    write(d, "c-rejected.yaml", ONE_ERROR)
    broken = write(d, "d-broken.yaml", "a: [\n")
    write(d, "e-configmap.yaml", CONFIGMAP)
    assert main(["validate", "-f", str(d)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created\n"
    err = captured.err.splitlines()
    assert err[:2] == [
        f"dra-capacity validate: error: {values}: document 1: missing field 'kind'",
        f"dra-capacity validate: error: {broken}: not valid YAML or JSON (line 2, column 1): did not find "
        "expected node content",
    ]
    assert 'The DeviceClass "bad-one" is invalid: spec.selectors[0].cel: Required value' in err
    assert any("skipping ConfigMap 'cm'" in line for line in err)
    assert err[-1] == (
        "dra-capacity validate: error: left out 2 inputs that are not Kubernetes objects (see above); "
        "validated the 2 DeviceClasses in the rest"
    )

    assert main(["validate", "-o", "json", str(d)]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["allowed"]) for r in doc["results"]] == [
        ("gpu.nvidia.com-shared-1", True),
        ("bad-one", False),
    ]
    assert [e["file"] for e in doc["errors"]] == [values, broken]
    assert doc["errors"][0]["message"] == f"{values}: document 1: missing field 'kind'"


def test_only_non_kubernetes_files_exit_2_without_claiming_no_device_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = write(tmp_path, "values.yaml", "replicaCount: 2\n")
    assert main(["validate", values]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"dra-capacity validate: error: {values}: document 1: missing field 'kind'\n"


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: cannot read" in capsys.readouterr().err


def test_input_without_any_object_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = write(tmp_path, "empty.yaml", "# a glob that matched the wrong file\n")
    assert main(["validate", "-o", "json", empty]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"dra-capacity validate: error: {empty}: no objects found (empty input)\n"


def test_object_without_api_version_is_left_out_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = write(tmp_path, "dc.yaml", GOOD, "\nkind: DeviceClass\nmetadata: {name: bare}\n")
    assert main(["validate", bare]) == 2
    captured = capsys.readouterr()
    assert captured.out == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created\n"
    assert captured.err.splitlines() == [
        f"dra-capacity validate: error: {bare}: document 2: DeviceClass 'bare': missing field 'apiVersion'",
        "dra-capacity validate: error: left out 1 input that is not a Kubernetes object (see above); "
        "validated the 1 DeviceClass in the rest",
    ]


def test_unknown_fields_are_warned_as_kubectl_field_validation_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = GOOD.replace("  selectors:\n  - cel:\n", "  selector: []\n  selectors:\n  - cell: {}\n    cel:\n")
    assert main(["validate", write(tmp_path, "dc.yaml", typo)]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        'Warning: unknown field "spec.selector"',
        'Warning: unknown field "spec.selectors[0].cell"',
    ]
    assert captured.out == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created\n"


def test_unknown_keys_of_the_capacity_requests_are_left_to_their_own_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown key there is reported once, by the carrier's rule (resourceapi/capacity_requests.py), not
    twice: no unknown-field warning, and under --strict the rule's rejection, not a strict decoding error."""
    extra = GOOD.replace("    requests:\n", "    limits: {}\n    requests:\n")
    path = write(tmp_path, "dc.yaml", extra)
    for flags in ([], ["--strict"]):
        assert main(["validate", *flags, "-o", "json", path]) == 1
        (result,) = json.loads(capsys.readouterr().out)["results"]
        assert result["warnings"] == []
        assert [(c["field"], c["message"]) for c in result["causes"]] == [
            (
                "spec.extendedResourceCapacityRequests",
                'Invalid value: "<value omitted>": unknown field "limits"',
            )
        ]


def test_every_served_device_class_version_is_checked_for_unknown_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for version in ("v1beta1", "v1beta2"):
        typo = GOOD.replace("resource.k8s.io/v1", f"resource.k8s.io/{version}").replace(
            "  selectors:\n", "  selector: []\n  selectors:\n"
        )
        assert main(["validate", write(tmp_path, f"{version}.yaml", typo)]) == 0
        assert capsys.readouterr().err.splitlines() == ['Warning: unknown field "spec.selector"']


def test_fields_kubectl_get_prints_are_known(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exported = GOOD.replace(
        "  name: gpu.nvidia.com-shared-1\n",
        "  name: gpu.nvidia.com-shared-1\n  uid: 3b0c6c3e\n  resourceVersion: '12'\n  generation: 1\n"
        "  creationTimestamp: 2026-03-01T00:00:00Z\n  annotations: {a: b}\n"
        "  managedFields: [{manager: kubectl, operation: Update, fieldsV1: {f:spec: {}}}]\n",
    )
    assert main(["validate", "-o", "json", write(tmp_path, "dc.yaml", exported)]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["warnings"] == []


class FullDisk(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_an_output_write_error_exits_2_with_one_line(tmp_path: Path) -> None:
    args = build_parser().parse_args(["validate", write(tmp_path, "dc.yaml", GOOD)])
    err = io.StringIO()
    assert run_validate(args, out=FullDisk(), err=err) == 2
    assert err.getvalue() == "dra-capacity validate: error: cannot write output: No space left on device\n"


def test_unknown_gate_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate", "--feature-gates", "NoSuchGate=true", write(tmp_path, "dc.yaml", GOOD)])
    assert exc.value.code == 2
    assert "NoSuchGate" in capsys.readouterr().err


def test_console_script_runs_validate(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "dra-capacity"
    path = write(tmp_path, "dc.yaml", GOOD, ONE_ERROR)
    proc = subprocess.run(
        [str(script), "validate", path],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout == "deviceclass.resource.k8s.io/gpu.nvidia.com-shared-1 created\n"
    assert proc.stderr == (
        'The DeviceClass "bad-one" is invalid: spec.selectors[0].cel: Required value\n'
        + native_note(str(path), "bad-one", "spec.selectors[0].cel")
    )


# --- docs/validation.md shows real output -------------------------------------------------------------------

VALIDATION_DOC = Path(__file__).resolve().parents[2] / "docs" / "validation.md"


def _class(meta: str, spec: str = "") -> str:
    return f"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {meta}\n" + (
        f"spec: {spec}\n" if spec else ""
    )


ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"
DOC_EXAMPLES = [
    pytest.param(_class("{}"), "", id="name-required"),
    pytest.param(_class("{name: GPU_1}"), "", id="name-format"),
    pytest.param(_class("{name: gpu}", "{selectors: [{}]}"), "", id="selector-needs-cel"),
    pytest.param(
        _class("{name: gpu}", "{selectors: [" + ", ".join(["{cel: {expression: 'true'}}"] * 33) + "]}"),
        "",
        id="too-many-selectors",
    ),
    pytest.param(
        _class(
            "{name: gpu}",
            "{selectors: [{cel: {expression: "
            """'device.capacity["shares"].isGreaterThan(quantity("0"))'}}]}""",
        ),
        "",
        id="kep-story-1-selector-compile-error",
    ),
    pytest.param(_class("{name: gpu}", "{config: [{}]}"), "", id="config-needs-opaque"),
    pytest.param(
        _class(
            "{name: gpu}",
            "{config: [{opaque: {driver: a.com}}, {opaque: {driver: a.com, parameters: [1]}}, "
            "{opaque: {driver: a.com, parameters: {x: " + "y" * 10240 + "}}}]}",
        ),
        "",
        id="several-config-errors",
    ),
    pytest.param(_class("{name: gpu}", "{extendedResourceName: gpu}"), "", id="extended-resource-name"),
    pytest.param(
        _class("{name: gpu, annotations: {" + ANNOTATION + ": '{\"requests\": {shares: 1}}'}}"),
        "",
        id="annotation-not-json",
    ),
    pytest.param(
        _class("{name: gpu, annotations: {" + ANNOTATION + ': \'{"requests": {"shares": "0"}}\'}}'),
        "",
        id="annotation-zero",
    ),
    pytest.param(
        _class(
            "{name: gpu, annotations: {" + ANNOTATION + ': \'{"requests": {"shares": "1"}}\'}}',
            "{extendedResourceName: example.com/gpu, "
            "extendedResourceCapacityRequests: {requests: {shares: 1}}}",
        ),
        "",
        id="field-wins-over-annotation",
    ),
    pytest.param(
        _class("{name: gpu}", "{extendedResourceCapacityRequests: {requests: {shares: 1}}}"),
        "DRAConsumableCapacity=false",
        id="field-needs-consumable-capacity",
    ),
    pytest.param(
        _class("{name: smoke-test}", '{extendedResourceCapacityRequests: {requests: {shares: "0"}}}'),
        "",
        id="install-smoke-test",
    ),
]


@pytest.mark.parametrize(("manifest", "gates"), DOC_EXAMPLES)
def test_documented_output_is_what_validate_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], manifest: str, gates: str
) -> None:
    main(["validate", "--feature-gates", gates, write(tmp_path, "dc.yaml", manifest)])
    captured = capsys.readouterr()
    out = captured.out + captured.err
    doc = VALIDATION_DOC.read_text() + (VALIDATION_DOC.parent / "install.md").read_text()
    lines = [line for line in out.splitlines() if "deviceclass.resource.k8s.io/" not in line]
    assert lines
    for line in lines:
        cause = re.sub(r'^The DeviceClass "[^"]*" is invalid: (?=.)', "", line)
        assert line in doc.replace("\n# ", "\n") or f"`{cause}`" in doc


def native_note(source: str, name: str, field: str, document: int = 2) -> str:
    """The stderr line that says a rejection's cause is a rule the API server enforces itself."""
    return (
        f"{source}: document {document}: deviceclass.resource.k8s.io/{name}: {field}: native rule: the API "
        "server refuses this object too, with or without the webhook\n"
    )


def test_a_native_rule_is_named_as_such_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Offline every rule rejects (CI stands in for the API server); native ones are said to be native."""
    assert main(["validate", write(tmp_path, "dc.yaml", ONE_ERROR)]) == 1
    err = capsys.readouterr().err
    assert 'The DeviceClass "bad-one" is invalid' in err
    assert (
        "deviceclass.resource.k8s.io/bad-one: spec.selectors[0].cel: native rule: the API server refuses"
        in err
    )


def test_a_kep_6406_rule_is_not_native(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = GOOD.replace('shares: "1"', 'shares: "0"')
    assert bad != GOOD
    assert main(["validate", "-o", "json", write(tmp_path, "dc.yaml", bad)]) == 1
    causes = json.loads(capsys.readouterr().out)["results"][0]["causes"]
    assert [c["native"] for c in causes] == [False]


INCLUDES = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: listed}
spec:
  selectors:
  - cel:
      expression: device.attributes["gpu.nvidia.com"].models.includes("a100")
"""


def test_kubernetes_1_38_declares_includes_without_the_list_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1.38 compiles new selectors at compatibility version 1.37, which has Lists v1: `includes()` is declared
    with DRAListTypeAttributes off; 1.37 (the default) declares it only with the gate."""
    path = write(tmp_path, "dc.yaml", INCLUDES)
    assert main(["validate", "--kubernetes-version", "1.38", path]) == 0
    out, err = capsys.readouterr()
    assert out == "deviceclass.resource.k8s.io/listed created\n" and "warning" not in err
    assert main(["validate", "--kubernetes-version", "1.37", path]) == 1
    assert "includes" in capsys.readouterr().err
    assert main(["validate", "--feature-gates", "DRAListTypeAttributes=true", path]) == 0
    capsys.readouterr()


def test_an_untested_release_is_accepted_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = GOOD.split("  extendedResourceName")[0]  # no 1.37 field: 1.35's gates are off
    assert main(["validate", "--kubernetes-version", "1.35", write(tmp_path, "dc.yaml", plain)]) == 0
    err = capsys.readouterr().err
    assert (
        "dra-capacity validate: warning: Kubernetes 1.35 is untested: dra-capacity is tested on 1.36" in err
    )


def test_a_gate_set_against_its_release_lock_is_a_warning_not_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "dc.yaml", GOOD)
    assert (
        main(["validate", "--kubernetes-version", "1.38", "--feature-gates", "DRADeviceTaints=false", path])
        == 0
    )
    assert "warning: DRADeviceTaints is locked to true in Kubernetes 1.38" in capsys.readouterr().err
    assert (
        main(["validate", "--kubernetes-version", "1.37", "--feature-gates", "DRADeviceTaints=false", path])
        == 0
    )
    assert "locked" not in capsys.readouterr().err


def test_the_binding_condition_gates_are_accepted_and_warned_against_their_locks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "dc.yaml", GOOD)
    off = "DRADeviceBindingConditions=false"
    assert main(["validate", "--kubernetes-version", "1.37", "--feature-gates", off, path]) == 0
    assert "locked" not in capsys.readouterr().err
    assert main(["validate", "--kubernetes-version", "1.38", "--feature-gates", off, path]) == 0
    assert (
        "warning: DRADeviceBindingConditions is locked to true in Kubernetes 1.38" in capsys.readouterr().err
    )
    status_off = "DRAResourceClaimDeviceStatus=false"
    assert main(["validate", "--kubernetes-version", "1.37", "--feature-gates", status_off, path]) == 0
    assert "warning: DRAResourceClaimDeviceStatus is locked to true in Kubernetes 1.37" in (
        capsys.readouterr().err
    )


def test_an_unknown_release_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate", "--kubernetes-version", "1.39", write(tmp_path, "dc.yaml", GOOD)])
    assert exc.value.code == 2
    assert "--kubernetes-version" in capsys.readouterr().err
