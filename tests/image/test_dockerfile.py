"""The Dockerfile's promises, checked on its text (`make image-test` builds and runs it for real)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
PACKAGES = ("resourceapi", "kubeio", "webhook", "allocator", "certs", "dra_capacity")


def _final_stage() -> str:
    return DOCKERFILE.rsplit("\nFROM ", 1)[1]


def test_the_base_is_an_argument_with_a_slim_python_default() -> None:
    match = re.search(r"^ARG BASE_IMAGE=(\S+)$", DOCKERFILE, re.MULTILINE)
    assert match and "python:3.11-slim" in match.group(1)
    assert DOCKERFILE.count("FROM ${BASE_IMAGE}") == 2


def test_the_final_stage_runs_nothing_and_starts_the_cli_as_65532_without_a_shell() -> None:
    final = _final_stage()
    assert "\nRUN " not in final  # no shell, no package manager, no registry in the final stage
    assert "COPY --from=build /opt/dra-capacity /opt/dra-capacity" in final
    assert re.search(r"^USER 65532:65532$", final, re.MULTILINE)
    (entrypoint,) = re.findall(r"^ENTRYPOINT (.+)$", final, re.MULTILINE)
    assert json.loads(entrypoint) == ["dra-capacity"]  # exec form: no /bin/sh -c
    (cmd,) = re.findall(r"^CMD (.+)$", final, re.MULTILINE)
    assert json.loads(cmd)[0] == "serve"


def test_every_run_is_exec_form_and_installs_from_wheels_only() -> None:
    runs = re.findall(r"^RUN (.+)$", DOCKERFILE, re.MULTILINE)
    assert runs and all(r.startswith("[") for r in runs)  # works on a base without a shell
    assert json.loads(runs[0]) == ["python3", "/src/scripts/image_build_stage.py"]
    stage = (ROOT / "scripts" / "image_build_stage.py").read_text()
    install = re.search(r'"install",\s*"--quiet",\s*"--no-index",\s*"--find-links",\s*"/wheels"', stage)
    assert install, "the image's virtualenv must be installed from the built wheels only"


def test_the_build_context_holds_every_package() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[0].startswith("#") and "*" in ignore and "!scripts/image_build_stage.py" in ignore
    for package in PACKAGES:
        assert f"!{package}/" in ignore, package


def test_nothing_imports_the_asyncio_client_the_image_leaves_out() -> None:
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text()
            assert "kubernetes.aio" not in text and "from kubernetes import aio" not in text, path
