"""Start or stop a real control plane from the command line (the sandbox's `make run` reuses it).

    PYTHONPATH=tests .venv/bin/python -m realcluster up   .run/cluster [--nodes 2 --gpus 2 --shares 4]
    PYTHONPATH=tests .venv/bin/python -m realcluster env  .run/cluster     # KUBECONFIG=... and addresses
    PYTHONPATH=tests .venv/bin/python -m realcluster exec .run/cluster -- CMD ARGS  # inside the netns
    PYTHONPATH=tests .venv/bin/python -m realcluster down .run/cluster

`up` returns once the cluster is ready and leaves it running (state in DIR/state.json); `up --foreground`
stays until Ctrl-C or SIGTERM, then stops it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from localcluster.cluster import Cluster, ClusterConfig, ClusterError


def _env(cluster: Cluster) -> str:
    lines = [
        f"KUBECONFIG={cluster.kubeconfig_path}",
        f"REALCLUSTER_URL={cluster.url}",
        f"REALCLUSTER_VERSION={cluster.version}",
        f"REALCLUSTER_LISTEN_HOST={cluster.listen_host}",
        f"REALCLUSTER_NETNS={cluster.netns.name if cluster.netns else ''}",
        f"REALCLUSTER_LOGS={cluster.workdir / 'logs'}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m realcluster", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a cluster in DIR")
    up.add_argument("dir", type=Path)
    up.add_argument("--nodes", type=int, default=2)
    up.add_argument("--gpus", type=int, default=2, help="GPUs in each node's ResourceSlice (0: no slices)")
    up.add_argument("--shares", type=int, default=4, help="consumable shares per GPU (0: whole devices)")
    up.add_argument("--no-netns", action="store_true", help="no network namespace (webhooks use url:)")
    up.add_argument("--foreground", action="store_true", help="stay until Ctrl-C, then stop the cluster")
    for name in ("down", "env", "logs"):
        sub.add_parser(name).add_argument("dir", type=Path)
    ex = sub.add_parser("exec", help="run a command inside the cluster's network namespace")
    ex.add_argument("dir", type=Path)
    ex.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            config = ClusterConfig(
                nodes=args.nodes, gpus_per_node=args.gpus, shares=args.shares or None, netns=not args.no_netns
            )
            cluster = Cluster.launch(args.dir, config, detach=not args.foreground)
            print(f"# {cluster.version} ready in {cluster.startup_seconds:.1f} s; logs in {args.dir}/logs")
            print(_env(cluster), flush=True)
            if args.foreground:
                stop = threading.Event()
                signal.signal(signal.SIGTERM, lambda *_: stop.set())
                signal.signal(signal.SIGINT, lambda *_: stop.set())
                try:
                    stop.wait()
                finally:
                    cluster.stop()
            return 0
        cluster = Cluster.attach(args.dir.resolve())
        if args.command == "down":
            cluster.stop()
        elif args.command == "env":
            print(_env(cluster))
        elif args.command == "logs":
            print(cluster.logs())
        elif args.command == "exec":
            argv_ = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            os.execvp("ip", cluster.netns_argv(argv_)) if cluster.netns else os.execvp(argv_[0], argv_)
        return 0
    except ClusterError as error:
        print(f"realcluster: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
