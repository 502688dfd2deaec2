"""The sandbox's fallback where the real control plane cannot be built (no Go, or the build failed): the
kube-apiserver test double of the checkout (tests/kubeapi, run as a process: product code never imports it)
with the same nodes and ResourceSlices, the chart's webhook configurations in their `url:` form, and the
product's processes on 127.0.0.1. The double runs no controllers and no kubelet: a Deployment makes no pods
there, so the sandbox writes the Deployment's 17 pods to a file, and bound pods stay Pending with a node."""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from . import nodes as nodes_mod
from .cluster import ROOT, ClusterError, free_port
from .install import (
    NAMESPACE,
    RELEASE,
    SCHEDULER_NAME,
    WEBHOOK_KINDS,
    _is_hook,
    _ready,
    opted_in_namespace,
    render_chart,
    shared_gpu_class,
    tool,
)
from .objects import gpu_slice

DEPLOYMENT = ROOT / "docs" / "examples" / "gpu-shared" / "deployment.yaml"


def _ready_node(name: str) -> dict[str, Any]:
    node = nodes_mod.node(name)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    return node


def deployment_pods(namespace: str) -> list[dict[str, Any]]:
    """The shipped Deployment's pods, as its ReplicaSet would create them (the double has no controllers)."""
    deployment = yaml.safe_load(DEPLOYMENT.read_text())
    name = deployment["metadata"]["name"]
    template = deployment["spec"]["template"]
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **copy.deepcopy(template["metadata"]),
                "name": f"{name}-{i}",
                "namespace": namespace,
            },
            "spec": copy.deepcopy(template["spec"]),
        }
        for i in range(int(deployment["spec"]["replicas"]))
    ]


def _spawn(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _wait(
    what: str, check: Callable[[], bool], procs: list[subprocess.Popen[bytes]], timeout: float = 90
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            raise ClusterError(f"{what} did not come up (logs in the state directory's double/logs)")
        time.sleep(0.1)


def run_on_double(
    args: argparse.Namespace, state: Path, stop: threading.Event, say: Callable[[str], None]
) -> int:
    """Start the double, seed it, install the product on it, print the next steps, stay until `stop`."""
    work = state / "double"
    shutil.rmtree(work, ignore_errors=True)  # the double keeps nothing: every start is fresh
    logs = work / "logs"
    names = [f"{nodes_mod.NODE_PREFIX}{i}" for i in range(args.nodes)]
    seed = [_ready_node(n) for n in names]
    seed += [gpu_slice(n, args.gpus, args.shares) for n in names]
    seed += [
        opted_in_namespace(args.namespace),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    ]
    work.mkdir(parents=True)
    (work / "seed.yaml").write_text(yaml.safe_dump_all(seed, sort_keys=False))
    kubeconfig = work / "kubeconfig"
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(
            _spawn(
                [
                    sys.executable,
                    "-m",
                    "kubeapi",
                    "--port",
                    str(port),
                    "--kubeconfig",
                    str(kubeconfig),
                    "--seed",
                    str(work / "seed.yaml"),
                ],
                logs / "kubeapi.log",
                env,
            )
        )
        _wait("the API double", kubeconfig.exists, procs)
        tls = work / "tls"
        webhook_port, health_port, metrics_port = free_port(), free_port(), free_port()
        procs.append(
            _spawn(
                [
                    tool("dra-capacity"),
                    "serve",
                    f"--listen=127.0.0.1:{webhook_port}",
                    f"--health-listen=127.0.0.1:{health_port}",
                    f"--tls-dir={tls}",
                    "--self-signed",
                    f"--kubeconfig={kubeconfig}",
                    f"--scheduler-name={SCHEDULER_NAME}",
                ],
                logs / "serve.log",
            )
        )
        procs.append(
            _spawn(
                [
                    tool("dra-capacity"),
                    "bind",
                    f"--kubeconfig={kubeconfig}",
                    f"--lease-namespace={NAMESPACE}",
                    f"--scheduler-name={SCHEDULER_NAME}",
                    f"--metrics-listen=127.0.0.1:{metrics_port}",
                ],
                logs / "bind.log",
            )
        )
        _wait("serve", lambda: _ready(f"http://127.0.0.1:{health_port}/readyz"), procs)
        _wait("bind", lambda: _ready(f"http://127.0.0.1:{metrics_port}/readyz"), procs)
        ca = base64.b64encode((tls / "ca.crt").read_bytes()).decode()
        configurations = [
            o for o in render_chart(RELEASE, NAMESPACE) if o["kind"] in WEBHOOK_KINDS and not _is_hook(o)
        ]
        for config in configurations:
            for webhook in config["webhooks"]:
                path = webhook["clientConfig"]["service"].get("path", "/")
                webhook["clientConfig"] = {"url": f"https://127.0.0.1:{webhook_port}{path}", "caBundle": ca}
        items = [*configurations, shared_gpu_class()]
        subprocess.run(
            [tool("kubectl"), "--kubeconfig", str(kubeconfig), "create", "--validate=false", "-f", "-"],
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
            text=True,
            check=True,
            capture_output=True,
            timeout=60,
        )
        pods = work / "pods.yaml"
        pods.write_text(yaml.safe_dump_all(deployment_pods(args.namespace), sort_keys=False))
        config = yaml.safe_load(kubeconfig.read_text())
        for context in config["contexts"]:
            context["context"]["namespace"] = args.namespace
        user_kubeconfig = state / "kubeconfig"
        user_kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        pids = f"serve PID {procs[1].pid}, bind PID {procs[2].pid}"
        say(f"ready (the double on 127.0.0.1:{port}; {pids}). Next:")
        for line in (
            f"export KUBECONFIG={user_kubeconfig}",
            "export PATH=$PWD/.venv/bin:$PATH      # kubectl, helm and dra-capacity are there",
            f"kubectl create --validate=false -f {pods}   # the Deployment's 17 pods (no controllers)",
            "kubectl get pods -o wide              # 16 bound to a node (no kubelet: still Pending), 1 not",
            "kubectl get resourceclaims            # 16 allocated claims",
            "kubectl get events                    # FailedScheduling for the 17th",
        ):
            say(f"  {line}")
        say("Ctrl-C stops everything.")
        while not stop.wait(1.0):
            if any(p.poll() is not None for p in procs):
                say(f"warning: a process exited; see {logs}")
                break
        return 0
    except (ClusterError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or ""
        print(f"dra-capacity sandbox: {error} {detail}".rstrip(), file=sys.stderr)
        return 1
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if procs:
            say(f"stopped PIDs {' '.join(str(p.pid) for p in procs)}")
