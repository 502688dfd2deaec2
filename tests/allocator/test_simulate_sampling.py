"""`simulate --percentage-of-nodes-to-score`: kube-scheduler's node sampling from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from dra_capacity.cli import main


def _inputs(tmp_path: Path, nodes: int, pods: int) -> str:
    names = [f"n{i:03d}" for i in range(nodes)]
    objs = [gpu_class(), *(node(n) for n in names), *(gpu_slice(n, 1) for n in names)]
    objs += [pod(f"p{i}", {GPU_SHARED: 1}) for i in range(pods)]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([o.to_api() for o in objs], sort_keys=False))
    return str(path)


def _nodes(out: str) -> list[str]:
    return [p["node"] for p in json.loads(out)["pods"]]


def test_each_pod_searches_from_where_the_previous_one_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--percentage-of-nodes-to-score", "50", "-f", _inputs(tmp_path, 200, 3)]) == 0
    assert _nodes(capsys.readouterr().out) == ["n000", "n100", "n000"]


def test_by_default_every_node_is_examined(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", _inputs(tmp_path, 200, 3)]) == 0
    assert _nodes(capsys.readouterr().out) == ["n000"] * 3


@pytest.mark.parametrize("value", ["101", "-1", "half"])
def test_a_percentage_outside_0_to_100_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--percentage-of-nodes-to-score", value, "-f", _inputs(tmp_path, 1, 1)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"argument --percentage-of-nodes-to-score: invalid value '{value}': must be an integer from 0 to 100"
        in err
    )
