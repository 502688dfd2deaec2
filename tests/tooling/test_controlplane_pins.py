"""scripts/controlplane.py's pin table is the one place the releases are pinned: each release's go.mod
follows it, the harness reads it, and a stale go.mod is an error naming the fix."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from localcluster import cluster
from resourceapi.releases import RELEASES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "controlplane.py"
PINS = cluster._pins()


@pytest.mark.parametrize("release", sorted(PINS.RELEASES))
def test_each_release_go_mod_follows_its_pin(release: str) -> None:
    pin = PINS.RELEASES[release]
    text = (PINS.module_dir(release) / "go.mod").read_text()
    assert re.search(rf"^\s*k8s\.io/kubernetes {re.escape(pin.version)}\b", text, re.MULTILINE)
    staging = "v0." + pin.version.removeprefix("v1.")
    replaced = re.findall(r"^\s*(k8s\.io/\S+) => \1 (v\S+)$", text, re.MULTILINE)
    assert replaced and {v for _, v in replaced} == {staging}
    assert pin.version.startswith(f"v{release}.")


def test_the_pinned_releases_are_the_tested_ones_and_the_default_is_the_newest_ga() -> None:
    assert set(PINS.RELEASES) == {r.name for r in RELEASES.values() if r.tested}
    from resourceapi.gates import DEFAULT_RELEASE

    assert PINS.DEFAULT_RELEASE == DEFAULT_RELEASE
    assert "-" not in PINS.RELEASES[PINS.DEFAULT_RELEASE].version  # no pre-release as the default


def test_a_release_that_needs_a_newer_go_names_its_toolchain() -> None:
    for release, pin in PINS.RELEASES.items():
        go_line = re.search(r"^go (\d+)\.(\d+)", (PINS.module_dir(release) / "go.mod").read_text(), re.M)
        assert go_line
        needs = (int(go_line.group(1)), int(go_line.group(2)))
        if needs > PINS.MIN_GO:
            assert re.fullmatch(rf"go{needs[0]}\.{needs[1]}\.\d+", pin.toolchain), release
        else:
            assert pin.toolchain == "local", release


def test_dir_prints_each_release_directory() -> None:
    for release, pin in PINS.RELEASES.items():
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "dir", "--release", release], capture_output=True, text=True
        )
        assert done.returncode == 0 and done.stdout.strip().endswith(f"/controlplane/{pin.version}")


def test_the_harness_runs_the_release_the_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRA_CAPACITY_CONTROLPLANE_DIR", raising=False)
    monkeypatch.setenv(cluster.RELEASE_ENV, "1.38")
    assert cluster.kubernetes_version() == PINS.RELEASES["1.38"].version
    assert cluster.bin_dir().name == PINS.RELEASES["1.38"].version
    monkeypatch.setenv(cluster.RELEASE_ENV, "1.99")
    with pytest.raises(cluster.ClusterError, match="names no pinned release"):
        cluster.bin_dir()


def test_a_stale_go_mod_is_an_error_naming_gomod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PINS.RELEASES, "1.38", PINS.Pin("v1.38.0-rc.0", "go1.27.3", "k8s-1.38"))
    with pytest.raises(PINS.StepFailed, match=r"gomod --release 1.38"):
        PINS.kubernetes_version("1.38")
