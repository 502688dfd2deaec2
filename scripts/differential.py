#!/usr/bin/env python3
"""`make differential`: our validation against a real kube-apiserver, object by object.

    .venv/bin/python scripts/differential.py [--release 1.37] [--seed N] [--classes 10000] [--others 5000]
                                             [--no-corpus] [--workers 3] [--shrink]

`--release` picks the Kubernetes release (scripts/controlplane.py's pin table; the default is the newest GA
one): its kube-apiserver, and dra-capacity judging with that release's gates and semantics
(`--kubernetes-version`).

Starts the real control plane (tests/realcluster, `make controlplane` builds it), sends every
object as a dry-run create (`dryRun=All`, `fieldValidation=Strict`), judges it with dra-capacity's own
checkers (dra_capacity/apiverdict.py) and compares. Prints the objects compared, the verdict disagreements
and the disagreements by key, CEL compile-verdict and cost-limit agreement. Exit status: 0 when every
disagreement is listed in docs/divergences.md (`differential-key:` entries), 1 otherwise, 2 on bad usage or
a control plane that does not start.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from differential.compare import listed_keys  # noqa: E402
from differential.run import KINDS, Report, run_all, shrink  # noqa: E402
from differential.server import Server, ServerUnreachable  # noqa: E402

from dra_capacity.apiverdict import Judge  # noqa: E402
from localcluster.cluster import (  # noqa: E402
    FEATURE_GATES,
    RELEASE_ENV,
    Cluster,
    ClusterConfig,
    ClusterError,
    bin_dir,
    selected_release,
)
from resourceapi.gates import FeatureGates, GateError  # noqa: E402

VERDICT_CATEGORIES = ("we-allow", "we-deny")  # a 400 against a 422 is a refusal either way


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--release", default=None, help="Kubernetes release (1.36, 1.37, 1.38; default: the pinned default)"
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        help="gates set on the API server and on our side alike (A=true,B=false), e.g. one at a time",
    )
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default: random, printed)")
    parser.add_argument("--classes", type=int, default=10000, help="generated DeviceClasses")
    parser.add_argument(
        "--others", type=int, default=5000, help="generated claims, templates and slices, each"
    )
    parser.add_argument(
        "--kinds",
        default="",
        help="comma-separated kinds to run (DeviceClass, ResourceClaim, ResourceClaimTemplate, "
        "ResourceSlice, 'ResourceClaim status'; default: all)",
    )
    parser.add_argument(
        "--verdicts-only",
        action="store_true",
        help="fail only on verdict disagreements (1.36: texts and fields not ported, docs/testing.md)",
    )
    parser.add_argument("--no-corpus", action="store_true", help="skip the inputs extracted from the tests")
    parser.add_argument("--workers", type=int, default=3, help="concurrent requests to the API server")
    parser.add_argument("--shrink", action="store_true", help="shrink one example per unlisted disagreement")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    if args.release:
        os.environ[RELEASE_ENV] = args.release
    try:
        release = selected_release()
    except ClusterError as exc:
        print(f"differential: {exc}", file=sys.stderr)
        return 2
    try:
        FeatureGates.parse(args.feature_gates, release)
    except GateError as exc:
        print(f"differential: --feature-gates: {exc}", file=sys.stderr)
        return 2
    missing = [b for b in ("etcd", "kube-apiserver") if not (bin_dir() / b).is_file()]
    if missing:
        print(
            f"differential: {', '.join(missing)} not built in {bin_dir()}: run `make controlplane`",
            file=sys.stderr,
        )
        return 2
    print(
        f"differential: Kubernetes {release}, seed {seed} "
        f"(rerun: scripts/differential.py --release {release} --seed {seed})",
        flush=True,
    )
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="differential-"))
    try:
        gates = FeatureGates.parse(args.feature_gates, release)
        named = {e.partition("=")[0].strip() for e in args.feature_gates.split(",") if e.strip()}
        overrides = dict(FEATURE_GATES) | {k: v for k, v in gates.as_dict().items() if k in named}
        config = ClusterConfig(
            nodes=0,
            netns=False,
            apiserver_args=["--endpoint-reconciler-type=none"],
            feature_gates=overrides,
        )
        cluster = Cluster.launch(workdir, config)
    except ClusterError as exc:
        print(f"differential: the control plane did not start: {exc}", file=sys.stderr)
        return 2
    try:
        server = Server(cluster.api_client().configuration, workers=args.workers)
        server.ensure_namespace()
        judge = Judge(gates)
        report = Report(seed)

        def progress(what: str) -> None:
            print(f"  {what} ({time.monotonic() - started:.0f}s)", flush=True)

        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
        run_all(server, judge, report, args.classes, args.others, not args.no_corpus, progress, kinds)
        listed = listed_keys(release=release)
        for line in report.lines(listed):
            print(line)
        unlisted = report.unlisted(listed)
        if args.verdicts_only:  # texts and order are reported above, but only verdicts and codes fail
            unlisted = {k: n for k, n in unlisted.items() if k.split("|")[1] in VERDICT_CATEGORIES}
        if args.shrink:
            for key in unlisted:
                kind = key.split("|")[0]
                if kind in KINDS:
                    print(f"shrinking {key}: {shrink(server, judge, kind, key, seed)}")
        total = sum(k.compared for k in report.kinds.values())
        print(
            f"differential: {total} objects compared in {time.monotonic() - started:.0f}s; "
            f"{sum(unlisted.values())} unlisted disagreements ({len(unlisted)} keys)"
        )
        return 1 if unlisted else 0
    except ServerUnreachable as exc:
        print(f"differential: the API server stopped answering: {exc}\n{cluster.logs(20)}", file=sys.stderr)
        return 2
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.nice(10)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the control plane and remove its directory
    sys.exit(main())
