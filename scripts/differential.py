#!/usr/bin/env python3
"""`make differential`: our validation against a real kube-apiserver v1.37, object by object.

    .venv/bin/python scripts/differential.py [--seed N] [--classes 10000] [--others 5000] [--no-corpus]
                                             [--kubeconfig-url URL --token T --ca FILE] [--shrink]

Starts etcd + kube-apiserver (tests/differential/apiserver.py) unless pointed at a running one, sends every
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
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from differential.apiserver import ControlPlane, available  # noqa: E402
from differential.compare import listed_keys  # noqa: E402
from differential.corpus import corpus_objects  # noqa: E402
from differential.run import KINDS, Report, draw_many, run, shrink  # noqa: E402
from differential.server import Server  # noqa: E402

from dra_capacity.apiverdict import Judge  # noqa: E402
from resourceapi.gates import FeatureGates  # noqa: E402

BATCH = 500


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default: random, printed)")
    parser.add_argument("--classes", type=int, default=10000, help="generated DeviceClasses")
    parser.add_argument(
        "--others", type=int, default=5000, help="generated claims, templates and slices, each"
    )
    parser.add_argument("--no-corpus", action="store_true", help="skip the inputs extracted from the tests")
    parser.add_argument("--workers", type=int, default=3, help="concurrent requests to the API server")
    parser.add_argument("--shrink", action="store_true", help="shrink one example per unlisted disagreement")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    missing = available()
    if missing:
        print(f"differential: {missing}", file=sys.stderr)
        return 2
    print(f"differential: seed {seed} (rerun: scripts/differential.py --seed {seed})", flush=True)
    started = time.monotonic()
    plane = ControlPlane()
    try:
        plane.start()
    except (RuntimeError, TimeoutError) as exc:
        print(f"differential: the control plane did not start: {exc}", file=sys.stderr)
        return 2
    try:
        server = Server(plane.configuration(), workers=args.workers)
        server.ensure_namespace()
        judge = Judge(FeatureGates.defaults())
        report = Report(seed)
        if not args.no_corpus:
            run(server, judge, corpus_objects(), report)
            print(f"  corpus done ({time.monotonic() - started:.0f}s)", flush=True)
        counts = {kind: args.classes if kind == "DeviceClass" else args.others for kind in KINDS}
        for index, (kind, count) in enumerate(counts.items()):
            done = 0
            while done < count:
                n = min(BATCH, count - done)
                objs = draw_many(kind, n, seed + index * 1_000_003 + done)
                run(server, judge, ((kind, o) for o in objs), report)
                done += n
            print(f"  {kind}: {count} drawn ({time.monotonic() - started:.0f}s)", flush=True)
        listed = listed_keys()
        for line in report.lines(listed):
            print(line)
        unlisted = report.unlisted(listed)
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
    finally:
        plane.stop()


if __name__ == "__main__":
    os.nice(10)
    sys.exit(main())
