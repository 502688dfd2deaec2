"""What the user sees, for every rule of docs/validation.md: the real kubectl 1.37 against a real
kube-apiserver v1.37.2 with the product's webhooks registered as the chart renders them (`dra-capacity
serve` on the host, reached through the chart's Service in the harness's network namespace).

Each case (tests/support/kubectl_cases.py) is applied with `kubectl apply -f dc.yaml`; the whole text kubectl
prints (stderr, then stdout) must equal the one recorded in `golden/kubectl_texts.json`, which the docs quote
(`scripts/kubectl_texts.py`). Native rules run with `--native-rules warn` (the default) and `deny`; the
KEP-6406 rules, which the webhook always denies, through the annotation carrier. A rule the API server
enforces itself shows the server's text in both modes, and the webhook is never asked (asserted from its
decision log).

Rewrite the golden file after a deliberate change: `DRA_CAPACITY_GOLDEN=update .venv/bin/pytest
tests/e2e/test_real_kubectl_texts.py`, then `.venv/bin/python scripts/kubectl_texts.py`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.chart_webhooks import NAMESPACE, SERVICE, ServedWebhook, chart_kubeconfig, register, unregister
from support.kubectl_cases import CASES, SERVER, WEBHOOK, Case, carrier, requests
from support.kubectl_cases import KUBECTL as BY_KUBECTL

from localcluster.cluster import KUBECTL, Cluster

pytestmark = pytest.mark.realcluster

GOLDEN = Path(__file__).parent / "golden" / "kubectl_texts.json"
UPDATE = os.environ.get("DRA_CAPACITY_GOLDEN") == "update"
MODES = ("warn", "deny")
# Grouped so that `serve` restarts once per mode and configuration; the cases without /mutate run last.
RUNS = [
    (case, mode) for mode in MODES for case in CASES if (mode == "warn" or case.native) and not case.serve
]
RUNS += sorted(((c, "warn") for c in CASES if c.serve), key=lambda run: (not run[0].mutate, run[0].serve))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster.start(tmp_path_factory.mktemp("realcluster")) as started:
        yield started


@pytest.fixture(scope="module")
def served(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedWebhook]:
    # As the chart's webhook ServiceAccount, under the chart's RBAC.
    webhook = ServedWebhook(
        cluster, tmp_path_factory.mktemp("serve"), kubeconfig=chart_kubeconfig(cluster, "webhook")
    )
    webhook.start(*_serve_args("warn"))
    register(cluster, webhook)
    _wait_until_called(cluster, webhook)
    try:
        yield webhook
    finally:
        unregister(cluster)
        webhook.stop()


@pytest.fixture(scope="module")
def recorded() -> Iterator[dict[str, Any]]:
    texts: dict[str, Any] = {}
    yield texts
    if UPDATE and texts:
        GOLDEN.parent.mkdir(exist_ok=True)
        ordered = {c.id: texts[c.id] for c in CASES if c.id in texts}  # the docs quote them in this order
        GOLDEN.write_text(json.dumps(ordered, indent=2, ensure_ascii=False) + "\n")


def _serve_args(mode: str) -> tuple[str, ...]:
    return ("--native-rules", mode)


def _kubectl(cluster: Cluster, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path), "HOME": str(cwd)}
    return subprocess.run(
        [str(KUBECTL), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _apply(
    cluster: Cluster, cwd: Path, manifest: dict[str, Any], *args: str
) -> subprocess.CompletedProcess[str]:
    (cwd / "dc.yaml").write_text(json.dumps(manifest, indent=2) + "\n")
    return _kubectl(cluster, cwd, "apply", *args, "-f", "dc.yaml")


def _delete(cluster: Cluster, *names: str) -> None:
    for name in names:
        if name:
            cluster.request("DELETE", f"/apis/resource.k8s.io/v1/deviceclasses/{name}")
    cluster.wait_for(
        "deleted classes",
        lambda: all(
            cluster.request("GET", f"/apis/resource.k8s.io/v1/deviceclasses/{n}")[0] == 404
            for n in names
            if n
        ),
    )


def _wait_until_called(cluster: Cluster, served: ServedWebhook) -> None:
    """The API server applies a new configuration once its informer has it; and the cluster view must be warm
    for the cluster warnings. A server-side dry run is retried until both show."""
    probe = carrier("probe", requests(shraes="1"))
    cwd = served.log.parent

    def warned() -> bool:
        done = _apply(cluster, cwd, probe, "--dry-run=server")
        return done.returncode == 0 and 'no device has capacity "shraes"' in done.stderr

    cluster.wait_for("the webhook called, with a warm cluster view", warned, timeout=90, interval=0.5)


def _validate_decisions(served: ServedWebhook, seen: int, expect: int) -> list[dict[str, Any]]:
    """The /validate decisions logged since `seen`, waiting (up to 2 s) for `expect` of them: the log line
    may follow the answer by a moment."""
    deadline = time.monotonic() + (2.0 if expect else 0.3)
    while True:
        asked = [d for d in served.decisions()[seen:] if d["endpoint"] == "validate"]
        if (len(asked) >= expect and (expect or time.monotonic() > deadline)) or time.monotonic() > deadline:
            return asked
        time.sleep(0.05)


def transcript(args: tuple[str, ...], done: subprocess.CompletedProcess[str]) -> str:
    """What the terminal shows: the command, kubectl's stderr (warnings and errors come first), its stdout."""
    command = " ".join(["kubectl", "apply", *args, "-f", "dc.yaml"])
    return f"$ {command}\n{done.stderr}{done.stdout}".rstrip("\n") + "\n"


@pytest.mark.parametrize(("case", "mode"), RUNS, ids=[f"{c.id}-{m}" for c, m in RUNS])
def test_kubectl_prints(
    case: Case, mode: str, cluster: Cluster, served: ServedWebhook, recorded: dict[str, Any], tmp_path: Path
) -> None:
    if served.args != (*_serve_args(mode), *case.serve):
        served.restart(*_serve_args(mode), *case.serve)
    if not case.mutate:
        cluster.kubectl("delete", "mutatingwebhookconfiguration", SERVICE, "--ignore-not-found")
    for obj in case.setup:
        done = _apply(cluster, tmp_path, obj)
        assert done.returncode == 0, done.stderr
    if case.setup or not case.mutate:
        # The webhook's view must have the setup objects, the API server must have dropped /mutate.
        cluster.wait_for(
            "the webhook's view of the setup objects, or the API server without /mutate",
            lambda: "Warning:" in _apply(cluster, tmp_path, case.manifest, "--dry-run=server").stderr,
            timeout=30,
            interval=0.3,
        )
    seen = len(served.decisions())
    try:
        done = _apply(cluster, tmp_path, case.manifest, *case.args)
        text = transcript(case.args, done)
        asked = _validate_decisions(served, seen, expect=1 if case.by == WEBHOOK else 0)
    finally:
        _delete(cluster, case.name, *case.cleanup)

    assert (done.returncode == 0) is case.created, text
    if case.by == WEBHOOK:
        assert [d["allowed"] for d in asked] == [case.created], text
    elif case.by == SERVER and not case.created:
        assert asked == [], f"the webhook was asked, yet the API server should refuse first:\n{text}"
    elif case.by == BY_KUBECTL:
        assert asked == [] and done.stdout == "", text

    entry = recorded.setdefault(
        case.id, {"section": case.section, "rule": case.rule, "by": case.by, "texts": {}}
    )
    entry["texts"][mode] = text
    if not UPDATE:
        golden = json.loads(GOLDEN.read_text())
        assert case.id in golden, f"{case.id} is not in {GOLDEN}: rerun with DRA_CAPACITY_GOLDEN=update"
        assert text == golden[case.id]["texts"][mode]
        assert {k: golden[case.id][k] for k in ("section", "rule", "by")} == {
            "section": case.section,
            "rule": case.rule,
            "by": case.by,
        }


def test_the_webhook_needed_no_rule_the_chart_lacks(served: ServedWebhook) -> None:
    """It read the cluster as the chart's ServiceAccount throughout: not one 403 in its log."""
    log = served.log.read_text(errors="replace")
    assert '"admission decision"' in log
    assert not re.search(r"HTTP 403|403 Forbidden|is forbidden", log), log


def test_the_service_is_the_charts(cluster: Cluster, served: ServedWebhook) -> None:
    """The configurations registered are the chart's, calling its Service in its namespace."""
    done = cluster.kubectl("get", "validatingwebhookconfiguration", SERVICE, "-o", "json")
    hooks = json.loads(done.stdout)["webhooks"]
    assert [h["clientConfig"]["service"] for h in hooks] == [
        {"namespace": NAMESPACE, "name": SERVICE, "path": "/validate", "port": 443}
    ]
