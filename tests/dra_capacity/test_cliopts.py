"""Manifest files are read as kubectl reads them; unreadable or empty input is a DocumentError naming it."""

from __future__ import annotations

import errno
import io
import sys
from pathlib import Path

import pytest

from dra_capacity.cliopts import OutputError, read_documents, write_output
from resourceapi.manifests.documents import DocumentError

CLASS = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: a\n"
JSON_CLASS = (
    '{\n\t"apiVersion": "resource.k8s.io/v1",\n\t"kind": "DeviceClass",\n\t"metadata": {"name": "a"}\n}\n'
)


@pytest.mark.parametrize(
    "data",
    [
        CLASS.encode(),
        b"\xef\xbb\xbf" + CLASS.encode(),
        b"\xef\xbb\xbf" + JSON_CLASS.encode(),
        CLASS.encode("utf-16"),
        b"\xfe\xff" + CLASS.encode("utf-16-be"),
        CLASS.replace("\n", "\r\n").encode(),
    ],
    ids=["utf-8", "utf-8-bom", "utf-8-bom-json-with-tabs", "utf-16-le-bom", "utf-16-be-bom", "crlf"],
)
def test_encodings_kubectl_reads_are_read(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "dc.yaml"
    path.write_bytes(data)
    (doc,) = read_documents([str(path)])
    assert (doc.kind, doc.name) == ("DeviceClass", "a")


def test_binary_data_names_the_file_and_the_first_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"abc\xff\xfe")
    with pytest.raises(
        DocumentError, match=r"blob: cannot read: not UTF-8 or UTF-16 text \(byte 0xff at offset 3\)"
    ):
        read_documents([str(path)])


def test_a_directory_reads_its_manifest_files_sorted_as_kubectl_does(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.json", "c.yml"):
        (tmp_path / name).write_text(f"kind: ConfigMap\nmetadata: {{name: {name.split('.')[0]}}}\n")
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.yaml").write_text("kind: ConfigMap\nmetadata: {name: d}\n")
    docs = read_documents([str(tmp_path)])
    assert [(Path(d.source).name, d.name) for d in docs] == [("a.json", "a"), ("b.yaml", "b"), ("c.yml", "c")]


def test_recursive_reads_subdirectories_in_walk_order(tmp_path: Path) -> None:
    (tmp_path / "z.yaml").write_text("kind: ConfigMap\nmetadata: {name: z}\n")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "d.yaml").write_text("kind: ConfigMap\nmetadata: {name: d}\n")
    docs = read_documents([str(tmp_path)], recursive=True)
    assert [d.name for d in docs] == ["d", "z"]


def test_an_empty_directory_holds_no_objects(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"no objects found \(empty input\)$"):
        read_documents([str(tmp_path)], require_objects=True)


def test_dash_reads_standard_input_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbf" + CLASS.encode())))
    (doc,) = read_documents(["-"])
    assert doc.where == "<stdin>: document 1"


def test_empty_input_is_allowed_unless_objects_are_required(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("")
    (tmp_path / "b.yaml").write_text("---\n# nothing\n")
    paths = [str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]
    assert read_documents(paths) == []
    with pytest.raises(DocumentError) as exc:
        read_documents(paths, require_objects=True)
    assert str(exc.value) == f"{paths[0]}, {paths[1]}: no objects found (empty input)"


def test_one_file_with_objects_satisfies_the_requirement(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("")
    (tmp_path / "b.yaml").write_text(CLASS)
    docs = read_documents([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")], require_objects=True)
    assert [d.name for d in docs] == ["a"]


def test_closed_standard_input_is_an_error_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(DocumentError, match=r"^<stdin>: cannot read: standard input is closed$"):
        read_documents(["-"])


class FailingStream(io.StringIO):
    """An output stream whose writes fail the way a full disk or a closed pipe does."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


def test_output_is_written_and_flushed() -> None:
    out = io.StringIO()
    write_output("a\nb\n", out)
    assert out.getvalue() == "a\nb\n"


def test_a_write_error_becomes_one_line_naming_the_cause() -> None:
    with pytest.raises(OutputError) as exc:
        write_output("x", FailingStream(OSError(errno.ENOSPC, "No space left on device")))
    assert exc.value.strerror == "cannot write output: No space left on device"


def test_a_closed_pipe_stays_a_broken_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", FailingStream(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    with pytest.raises(BrokenPipeError):
        write_output("x")


def test_a_batch_run_keeps_young_collections_and_restores_the_thresholds() -> None:
    import gc

    from dra_capacity.cliopts import young_collections_only

    before = gc.get_threshold()
    with young_collections_only():
        inside = gc.get_threshold()
    assert inside[:2] == before[:2] and inside[2] > before[2]
    assert gc.get_threshold() == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sandbox", "--nodes", "0"], "argument --nodes: '0' must be at least 1"),
        (["sandbox", "--gpus", "two"], "argument --gpus: 'two' is not a whole number"),
        (["top", "--interval", "0"], "argument --interval: '0' must be greater than zero"),
        (["top", "--interval", "soon"], "argument --interval: 'soon' is not a number"),
        (["serve", "--workers", "-1"], "argument --workers: '-1' must be at least 1"),
        (["serve", "--body-timeout", "nan"], "argument --body-timeout: 'nan' must be greater than zero"),
    ],
)
def test_counts_and_durations_must_be_positive_or_the_command_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    from dra_capacity.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
