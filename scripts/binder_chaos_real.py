"""The full chaos run of the binder on the real control plane (issue 25): two real `dra-capacity bind`
processes as the chart's binder ServiceAccount, the leader SIGKILLed or SIGSTOPped past its lease at a random
point of every cycle, pods arriving and leaving; in a share of the cycles (`--preemption`) a pod of priority
1000 arrives on the full cluster and the leader is killed once it has nominated a node, before binding; then
the invariants of tests/binder/test_binder_chaos.py on the real API server's objects, and no victim evicted
for a pod bound elsewhere (support.binder_harness.check_preemptions). CI runs a seeded 10-cycle version
(tests/binder/test_binder_realcluster.py).

    make binder-chaos-real [CYCLES=30] [SEED=N]

Prints the seed, the actions, the pods and the time; exits 1 when an invariant breaks (the binders' logs stay
in the printed work directory).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from support.real_binders import Chaos, install_binder_rbac

from localcluster.cluster import Cluster, ClusterConfig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--preemption",
        type=float,
        default=0.4,
        help="the chance a cycle (from the third on) brings a preemptor and kills the leader once it has "
        "nominated (default 0.4; 0: no preemption)",
    )
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    workdir = Path(tempfile.mkdtemp(prefix="binder-chaos-real-"))
    print(f"binder chaos on the real control plane: seed {seed}, {args.cycles} cycles, in {workdir}")
    with Cluster.start(workdir / "cluster", ClusterConfig(nodes=2, gpus_per_node=2, shares=4)) as cluster:
        kubeconfig = install_binder_rbac(cluster)
        chaos = Chaos(cluster, kubeconfig, "chaos", workdir / "binders", seed, args.preemption)
        try:
            result = chaos.run(args.cycles)
        except AssertionError as exc:
            print("\n".join(chaos.log))
            print(f"FAILED (seed {seed}): {exc}")
            return 1
    print("\n".join(chaos.log))
    print(
        f"OK: {result.cycles} cycles ({', '.join(f'{k} {v}' for k, v in sorted(result.actions.items()))}), "
        f"{result.pods_created} pods created, {result.bound} bound at the end, {result.seconds:.0f} s; "
        f"victims by their preemptor's fate: {dict(result.preemptions)}; invariants held on the real objects"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
