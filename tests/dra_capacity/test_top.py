"""`dra-capacity top`: figures from a dump (simulate's inputs) and from a live cluster (the API-server double,
through informers, never written to), kubectl-style columns and -o wide|json|yaml, and the CLI contract's
errors (one line, exit 2)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubeapi import KubeAPIServer
from support.capacity_cluster import CLASS, RESOURCE, node, pod, three_shares_on_node_a
from support.simulate_cli import assert_unreadable_cluster_is_one_line

from dra_capacity.cli import main


def cluster() -> list[dict[str, Any]]:
    """2 nodes x 2 GPUs x 4 shares; node-a's gpu-0 holds 3 shares of 3 running pods; 2 pods pending."""
    return [*three_shares_on_node_a(pods=True), pod("wait-0"), pod("wait-1")]


def dump(tmp_path: Path, objs: list[dict[str, Any]] | None = None) -> Path:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs or cluster()}))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["top", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_table_shows_classes_then_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(dump(tmp_path)))
    assert (code, err) == (0, "")
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert lines[0] == ["CLASS", "RESOURCE", "TOTAL", "USED", "FREE", "PENDING", "HEADROOM"]
    assert lines[1] == [CLASS, RESOURCE, "16", "3", "13", "2", "13"]
    assert lines[2] == ["NODE", "RESOURCE", "TOTAL", "USED", "FREE"]
    assert lines[3:] == [["node-a", RESOURCE, "8", "3", "5"], ["node-b", RESOURCE, "8", "0", "8"]]


def test_wide_adds_the_devices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(dump(tmp_path)), "-o", "wide")
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert code == 0
    assert lines[0][-1] == "DEVICES" and lines[1][-1] == "4"
    assert lines[2] == ["NODE", "CLASS", "RESOURCE", "TOTAL", "USED", "FREE", "DEVICES"]
    assert lines[3] == ["node-a", CLASS, RESOURCE, "8", "3", "5", "2"]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_json_and_yaml_carry_the_same_figures(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "-f", str(dump(tmp_path)), "-o", fmt)
    doc = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert code == 0
    assert doc["classes"] == [
        {
            "name": CLASS,
            "resource": RESOURCE,
            "total": 16,
            "used": 3,
            "free": 13,
            "devices": 4,
            "pending": 2,
            "headroom": 13,
            "headroomCapped": False,
        }
    ]
    assert [(n["node"], n["used"], n["free"]) for n in doc["nodes"]] == [("node-a", 3, 5), ("node-b", 0, 8)]


def test_a_shape_is_counted_by_placement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shape = tmp_path / "shape.yaml"
    shape.write_text(yaml.safe_dump(pod("big", units=2)))
    code, out, _ = run(capsys, "-f", str(dump(tmp_path)), "--shape", str(shape), "-o", "json")
    assert code == 0
    # two shares on two distinct GPUs: node-a has one share left on gpu-0 (1 pod), node-b 4 + 4 (4 pods)
    assert json.loads(out)["shape"] == {"name": "big", "headroom": 5, "headroomCapped": False}


def test_no_headroom_skips_the_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(dump(tmp_path)), "--no-headroom")
    assert code == 0
    assert out.splitlines()[1].split()[-1] == "-"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "no input"),
        (("-f", "x.yaml", "--kubeconfig", "k"), "not both"),
        (("--interval", "0", "-f", "x.yaml"), "greater than zero"),
    ],
)
def test_usage_errors_exit_2(argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["top", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_unreadable_input_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "-f", str(tmp_path / "missing.yaml"))
    assert (code, out) == (2, "")
    assert err.startswith("dra-capacity top: error: ") and "missing.yaml" in err and err.count("\n") == 1


def test_a_shape_file_without_one_pod_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shape = tmp_path / "shape.yaml"
    shape.write_text(yaml.safe_dump(node("n")))
    code, out, err = run(capsys, "-f", str(dump(tmp_path)), "--shape", str(shape))
    assert (code, out) == (2, "")
    assert "--shape" in err and "expected one Pod" in err


def test_an_empty_cluster_says_there_is_nothing_to_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "-f", str(dump(tmp_path, [node("n")])))
    assert code == 0 and out.startswith("No capacity-backed extended resources")


# --- a live cluster: the API-server double ------------------------------------------------------------------


def seed(api: KubeAPIServer, objs: list[dict[str, Any]]) -> None:
    for obj in objs:
        api.seed(obj)


def test_a_live_cluster_gives_the_dumps_figures_and_is_never_written(
    kube_api: KubeAPIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(kube_api, cluster())
    kube_api.clear_requests()
    code, out, err = run(capsys, "--kubeconfig", str(kube_api.kubeconfig_path), "-o", "json")
    assert (code, err) == (0, "")
    live = json.loads(out)
    _, from_dump, _ = run(capsys, "-f", str(dump(tmp_path)), "-o", "json")
    assert live == json.loads(from_dump)
    assert live["classes"][0]["headroom"] == 13
    assert {r.method for r in kube_api.requests} == {"GET"}


def test_the_live_view_follows_the_cluster(kube_api: KubeAPIServer) -> None:
    from dra_capacity.top_live import LiveView
    from resourceapi.gates import FeatureGates

    seed(kube_api, cluster())
    live = LiveView(str(kube_api.kubeconfig_path), None, FeatureGates.defaults(), "binpack")
    try:
        live.start(30)
        assert _headroom(live) == 13
        kube_api.delete("resourceclaims", "a0")
        kube_api.delete("pods", "run-0", grace_period_seconds=0)
        deadline = time.monotonic() + 10
        while _headroom(live) != 14 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _headroom(live) == 14
    finally:
        live.stop()


def _headroom(live: Any) -> int:
    with live.feed.lock:
        room = live.feed.view.report().classes[0].headroom
    return int(room.count)


def test_a_cluster_that_cannot_be_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_unreadable_cluster_is_one_line(tmp_path, capsys, "top")


# --- --watch: a real process, read as a pipeline reads it ---------------------------------------------------


class Watching:
    """`dra-capacity top --watch -o json` in a subprocess; each redraw's document, from a reader thread."""

    def __init__(self, *argv: str) -> None:
        import queue
        import subprocess
        import threading

        exe = Path(sys.executable).with_name("dra-capacity")
        self.proc = subprocess.Popen(
            [str(exe), "top", "--watch", "--interval", "0.1", "-o", "json", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.docs: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        lines: list[str] = []
        for line in self.proc.stdout:
            if line == "---\n":
                continue
            lines.append(line)
            if line == "}\n":
                self.docs.put(json.loads("".join(lines)))
                lines = []

    def next(self, timeout: float = 30) -> dict[str, Any]:
        return self.docs.get(timeout=timeout)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def test_watch_redraws_a_live_cluster_as_it_changes(kube_api: KubeAPIServer) -> None:
    seed(kube_api, cluster())
    watching = Watching("--kubeconfig", str(kube_api.kubeconfig_path))
    try:
        first = watching.next()["classes"][0]
        assert (first["used"], first["headroom"], first["pending"]) == (3, 13, 2)
        kube_api.delete("resourceclaims", "a0")
        kube_api.delete("pods", "run-0", grace_period_seconds=0)
        kube_api.delete("pods", "wait-0", grace_period_seconds=0)
        deadline = time.monotonic() + 10
        row = first
        while (row["used"], row["headroom"], row["pending"]) != (2, 14, 1) and time.monotonic() < deadline:
            row = watching.next(timeout=10)["classes"][0]
        assert (row["used"], row["headroom"], row["pending"]) == (2, 14, 1)
    finally:
        watching.stop()


def test_watch_on_files_redraws_when_a_file_changes(tmp_path: Path) -> None:
    path = dump(tmp_path)
    watching = Watching("-f", str(path))
    try:
        assert watching.next()["classes"][0]["used"] == 3
        fewer = [o for o in cluster() if o["metadata"]["name"] not in ("a0", "a1")]
        time.sleep(0.05)  # a new modification time
        dump(tmp_path, fewer)
        assert watching.next()["classes"][0]["used"] == 1
    finally:
        watching.stop()


def test_the_real_kubectl_runs_it_as_a_plugin(tmp_path: Path) -> None:
    import os
    import subprocess

    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        [str(bin_dir / "kubectl"), "dra-capacity", "top", "-f", str(dump(tmp_path)), "-o", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["classes"][0]["headroom"] == 13
