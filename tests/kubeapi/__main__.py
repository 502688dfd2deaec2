"""Run the kube-apiserver TEST DOUBLE as a process: `python -m tests.kubeapi --port N --kubeconfig PATH`."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from .double import KubeAPIServer
from .resources import KUBERNETES_VERSION


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kubeapi", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--kubeconfig", type=Path, required=True, help="where to write the kubeconfig")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with KubeAPIServer(host=args.host, port=args.port) as server:
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
