"""`dra-capacity sandbox` (`make run`): a local cluster with the product installed, in one command.

The real control plane (`localcluster`: kube-apiserver, kube-controller-manager, kube-scheduler v1.37 and
kwok's fake nodes), built on first use; NVIDIA-shaped ResourceSlices (2 nodes x 2 GPUs x 4 shares by default);
the product installed as the chart defines it (`localcluster.install`); a KEP-6406 DeviceClass in the
annotation carrier and an opted-in namespace. Then it prints the next steps and stays until Ctrl-C, when it
stops every process it started, by PID. State lives under `--dir` (default `.run/`): the next start reuses
the cluster's data, `--fresh` wipes it. Where the control plane cannot be built (no Go, or the build fails)
it runs the kube-apiserver test double instead and says so first. docs/sandbox.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from dra_capacity.cliopts import positive_int

PROG = "dra-capacity sandbox"
DEMO_NAMESPACE = "gpu-demo"
CLASS_NAME = "gpu-shared"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def add_commands(sub: Any) -> None:
    parser = sub.add_parser(
        "sandbox",
        help="a local cluster (real control plane, fake GPU nodes) with the product installed; Ctrl-C stops "
        "it",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="State: DIR/cluster (etcd data, certificates, logs), DIR/product (serving certificate, logs), "
        "DIR/kubeconfig (the admin's, current namespace the opted-in one). See docs/sandbox.md.",
    )
    parser.add_argument("--dir", type=Path, default=Path(".run"), help="state directory (default .run)")
    parser.add_argument("--fresh", action="store_true", help="wipe the state directory's cluster first")
    parser.add_argument("--nodes", type=positive_int, default=2, help="fake nodes (default 2)")
    parser.add_argument("--gpus", type=positive_int, default=2, help="GPUs per node (default 2)")
    parser.add_argument("--shares", type=positive_int, default=4, help="shares per GPU (default 4)")
    parser.add_argument(
        "--namespace", default=DEMO_NAMESPACE, help=f"the opted-in namespace (default {DEMO_NAMESPACE})"
    )
    parser.add_argument(
        "--no-build", action="store_true", help="never build the control plane (use the double when absent)"
    )
    parser.add_argument(
        "--real-node",
        action="store_true",
        help="also start one real node (kubelet, containerd, a DRA test plugin) beside the fake ones; "
        "needs root, changes host sysctls while it runs (restored at exit), one per machine "
        "(`make run REALNODE=1`)",
    )
    parser.set_defaults(func=run_sandbox)


def say(line: str) -> None:
    print(line, flush=True)


def _checkout() -> Path:
    from localcluster.cluster import ROOT

    return ROOT


def control_plane_unavailable(no_build: bool) -> str | None:
    """None when the control plane's binaries are there or can be built; else why not (one line)."""
    from localcluster.cluster import bin_dir

    try:
        binaries = bin_dir()
    except (OSError, RuntimeError) as error:
        return f"the control plane's Go modules are not here ({error}): this needs a checkout"
    if all((binaries / b).is_file() for b in BINARIES):
        return None
    if no_build:
        return f"the control plane is not built in {binaries} (--no-build)"
    if shutil.which("go") is None:
        return "Go is not installed, so the real control plane cannot be built"
    return None


def build_control_plane() -> str | None:
    """Run `scripts/controlplane.py build`, streaming its progress; None on success, else why it failed."""
    from localcluster.cluster import bin_dir

    if all((bin_dir() / b).is_file() for b in BINARIES):
        return None
    say(
        "building the real control plane on first use (kube-apiserver, kube-controller-manager, "
        "kube-scheduler, etcd, kwok): a cold build takes 10-25 min on 2 cores; cached after that"
    )
    script = _checkout() / "scripts" / "controlplane.py"
    done = subprocess.run([sys.executable, str(script), "build"], check=False)
    return None if done.returncode == 0 else f"the control plane build failed (exit {done.returncode})"


def real_node_unavailable() -> str | None:
    """None when a real node can start here (root); else why not. Its binaries are built on demand."""
    if os.geteuid() != 0:
        return (
            "a real node needs root: containerd and the kubelet mount filesystems, create cgroups and "
            "network namespaces, and the kubelet changes host sysctls. Run `make run` without REALNODE=1 "
            "for the fake nodes only, or as root"
        )
    return None


def build_real_node() -> str | None:
    """Run `scripts/realnode.py build` when something is missing, streaming its progress."""
    from localcluster.realnode import host, node

    try:
        node.check_usable()
        return None
    except host.RealNodeUnavailable:
        pass
    say(
        "building the real node on first use (kubelet, containerd, the DRA test plugin, two images): about "
        "6 min cold once the control plane is built (kubelet 2 min, containerd 4 min); cached after that"
    )
    script = _checkout() / "scripts" / "realnode.py"
    done = subprocess.run([sys.executable, str(script), "build"], check=False)
    if done.returncode != 0:
        return f"the real node's build failed (exit {done.returncode})"
    try:
        node.check_usable()
    except host.RealNodeUnavailable as error:
        return str(error)
    return None


def run_sandbox(args: argparse.Namespace) -> int:
    started = time.monotonic()
    state = args.dir.resolve()
    if args.real_node:
        why_not = real_node_unavailable()
        if why_not is not None:
            print(f"{PROG}: --real-node: {why_not}", file=sys.stderr)
            return 2
    why = control_plane_unavailable(args.no_build)
    if why is None:
        why = build_control_plane()
    if why is None and args.real_node:
        failed = build_real_node()
        if failed is not None:
            print(f"{PROG}: --real-node: {failed}", file=sys.stderr)
            return 1
    if why is not None and args.real_node:
        print(f"{PROG}: --real-node needs the real control plane: {why}", file=sys.stderr)
        return 1
    if why is not None:
        say(
            f"USING THE API DOUBLE, not a real control plane: {why}. "
            "Deployments do not run there (no controllers)."
        )
        return _run_double(args, state)
    return _run_real(args, state, started)


def _stop_event() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


def _prepare(state: Path, fresh: bool) -> Path:
    """The cluster's directory, refused while another sandbox runs there; a stale state.json (its processes
    gone) cleared; with `fresh`, all of the state wiped."""
    from localcluster.cluster import Cluster, ClusterError

    cluster_dir = state / "cluster"
    if (cluster_dir / "state.json").exists():
        running = Cluster.attach(cluster_dir)
        alive = [p for p in running.processes if Path(f"/proc/{p.pid}").exists()]
        if alive:
            pids = ", ".join(str(p.pid) for p in alive)
            raise ClusterError(
                f"a sandbox already runs in {state} (PIDs {pids}): stop it with Ctrl-C first, "
                "or use another --dir"
            )
        running.stop()  # what a killed sandbox left: the network namespace
    if fresh:
        shutil.rmtree(state / "cluster", ignore_errors=True)
        shutil.rmtree(state / "product", ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            (state / "kubeconfig").unlink()
    return cluster_dir


def _user_kubeconfig(admin: Path, out: Path, namespace: str) -> Path:
    """The admin kubeconfig with `namespace` as the current one (what the next steps' kubectl uses)."""
    import yaml

    config = yaml.safe_load(admin.read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    tmp.chmod(0o600)
    os.replace(tmp, out)
    return out


NEXT_STEPS = (
    "export KUBECONFIG={kubeconfig}",
    "export PATH=$PWD/.venv/bin:$PATH",
    "kubectl apply -f docs/examples/gpu-shared/deployment.yaml",
    "kubectl get pods -o wide           # 16 Running, each on a node, and 1 Pending",
    "kubectl get resourceclaims -o custom-columns=NAME:.metadata.name,POD:.status.reservedFor[0].name,"
    "DEVICE:.status.allocation.devices.results[0].device,SHARE:.status.allocation.devices.results[0].shareID",
    "kubectl describe $(kubectl get pods --field-selector=status.phase=Pending -o name)"
    "   # the Event says why",
    "kubectl dra-capacity top           # 16 of 16 shares used, 1 pending, headroom 0",
)


REAL_NODE_STEPS = (
    "kubectl apply -f docs/examples/gpu-shared/real-node.yaml   # 4 pods on the real node's GPUs",
    "kubectl get pods -l app=gpu-real -o wide                   # Running, as its kubelet reports",
    "kubectl logs deploy/gpu-real | grep claim_                 # the CDI variable of the pod's share",
)


def next_steps(kubeconfig: Path | str) -> list[str]:
    """The README's sequence (its `sandbox-steps` block, with `$PWD/.run/kubeconfig` there), in its order."""
    return [line.format(kubeconfig=kubeconfig) for line in NEXT_STEPS]


def _run_real(args: argparse.Namespace, state: Path, started: float) -> int:
    from localcluster.cluster import Cluster, ClusterConfig, ClusterError
    from localcluster.install import install_product, opted_in_namespace, shared_gpu_class, wait_routed

    stop = _stop_event()
    cluster: Cluster | None = None
    installed = None
    real_node = None
    try:
        cluster_dir = _prepare(state, args.fresh)
        reused = (cluster_dir / "etcd").is_dir()
        say(
            f"starting the real control plane in {cluster_dir} ({'reusing its data' if reused else 'new'}): "
            f"{args.nodes} nodes x {args.gpus} GPUs x {args.shares} shares"
        )
        config = ClusterConfig(nodes=args.nodes, gpus_per_node=args.gpus, shares=args.shares, reuse=True)
        if args.real_node:
            from localcluster.realnode.node import APISERVER_ARGS

            config.apiserver_args = APISERVER_ARGS
        cluster = Cluster.launch(cluster_dir, config)
        say(f"  {cluster.version} ready in {cluster.startup_seconds:.1f} s; logs in {cluster_dir / 'logs'}")
        say(
            "installing dra-capacity as the chart defines it (RBAC, webhooks; serve and bind as its accounts)"
        )
        installed = install_product(cluster, state / "product")
        say(
            f"  serve (PID {installed.serve.pid}) and bind (PID {installed.bind.pid}) ready; "
            f"bind metrics {installed.metrics_url}/metrics"
        )
        cluster.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [opted_in_namespace(args.namespace), shared_gpu_class(CLASS_NAME)],
                }
            ),
        )
        wait_routed(cluster, args.namespace)
        say(
            f"  DeviceClass {CLASS_NAME} (nvidia.com/gpu.shared = 1 share, in the annotation carrier) and "
            f"namespace {args.namespace} (opted in to pod routing)"
        )
        if args.real_node:
            real_node = _start_real_node(cluster, state, args)
        kubeconfig = _user_kubeconfig(cluster.kubeconfig_path, state / "kubeconfig", args.namespace)
        say(f"ready in {time.monotonic() - started:.1f} s. Next, in another shell at the checkout:")
        for line in next_steps(kubeconfig):
            say(f"  {line}")
        if real_node is not None:
            say("  and on the real node:")
            for line in REAL_NODE_STEPS:
                say(f"  {line}")
        say("  (kubectl, helm and dra-capacity are in .venv/bin; the figures are for the default sizes)")
        say("Ctrl-C stops everything.")
        while not stop.wait(1.0):
            dead = installed.alive()
            if len(dead) < 2:
                say(
                    f"warning: only {dead or 'nothing'} of serve and bind still runs; "
                    f"see {state / 'product' / 'logs'}"
                )
                break
        return 0
    except ClusterError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1
    finally:
        pids = []
        if real_node is not None:
            pids += [p.popen.pid for p in real_node.procs.values()]
            left = real_node.stop()
            result = "nothing left" if left.empty() else f"LEFT {left}"
            say(f"stopped the real node: {result}, sysctls restored")
        if installed is not None:
            pids += installed.pids
            installed.stop()
        if cluster is not None:
            pids += [p.pid for p in cluster.processes]
            cluster.stop()
        if pids:
            say(f"stopped PIDs {' '.join(str(p) for p in pids)}; state kept in {state} (--fresh wipes it)")


def _start_real_node(cluster: Any, state: Path, args: argparse.Namespace) -> Any:
    from localcluster.cluster import ClusterError
    from localcluster.realnode.host import RealNodeUnavailable
    from localcluster.realnode.node import RealNode, RealNodeConfig

    say("starting the real node (containerd, kubelet, the DRA test plugin; host sysctls saved first)")
    try:
        node = RealNode.launch(
            cluster, state / "realnode", RealNodeConfig(gpus=args.gpus, shares=args.shares), "make run"
        )
    except RealNodeUnavailable as error:
        raise ClusterError(f"--real-node: {error}") from None
    info = (node.node() or {}).get("status", {}).get("nodeInfo", {})
    say(
        f"  {node.name} Ready in {node.startup_seconds:.1f} s (kubelet {info.get('kubeletVersion')}, "
        f"{info.get('containerRuntimeVersion')}), {args.gpus} GPUs x {args.shares} shares, tainted "
        f"dra-capacity.io/real-node:NoSchedule; logs in {node.workdir / 'logs'}"
    )
    return node


def _run_double(args: argparse.Namespace, state: Path) -> int:
    from localcluster.double import run_on_double

    return run_on_double(args, state, _stop_event(), say)
