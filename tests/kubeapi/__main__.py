"""Run the kube-apiserver TEST DOUBLE as a process: `python -m tests.kubeapi --port N --kubeconfig PATH`."""

from __future__ import annotations

import argparse
import gc
import signal
import sys
import threading
from pathlib import Path

import yaml

from .double import KubeAPIServer
from .resources import KUBERNETES_VERSION


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kubeapi", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--kubeconfig", type=Path, required=True, help="where to write the kubeconfig")
    parser.add_argument(
        "--seed",
        type=Path,
        action="append",
        default=[],
        help="YAML/JSON manifests to create at start (no admission)",
    )
    args = parser.parse_args(argv)
    # The store and its watch history are long-lived acyclic JSON data: with the default young-generation
    # threshold (700) the collector's passes over them were a tenth of the double's CPU under load.
    gc.set_threshold(50_000, *gc.get_threshold()[1:])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with KubeAPIServer(host=args.host, port=args.port) as server:
        for path in args.seed:
            for doc in yaml.safe_load_all(path.read_text()):
                for obj in (doc.get("items") or []) if doc and doc.get("kind") == "List" else [doc]:
                    if obj:
                        server.seed(obj)
        server.write_kubeconfig(args.kubeconfig)
        print(
            f"kube-apiserver TEST DOUBLE (models Kubernetes {KUBERNETES_VERSION}) serving {server.url}; "
            f"kubeconfig {args.kubeconfig}",
            flush=True,
        )
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
