"""Cost of simulate's API-server-style input checks (the field-schema walk and the per-object validation
rules, called as simulate calls them: a pod spec repeated verbatim is walked once) next to the bare JSON
parse (`json.loads`) of the same cluster dump, next to the command's reader (`load_documents`), and next to
the pydantic model validation that loading also does. Prints CPU seconds (best of --repeat, the GC paused)
and ratios; targets: the checks well under 1x parse, and reading with the checks (the load budget they must
fit in) at most 2x parse.

    .venv/bin/python bench/simulate_input_checks.py [--nodes 200] [--pods 2000] [--repeat 9]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.workloads import GPU_SHARED, gpu_class, gpu_slice, node, pod

from allocator.simulate.inputs import KINDS, _shared_parts, _validate, object_problem
from resourceapi.manifests import apischema
from resourceapi.manifests.apischema import check_fields
from resourceapi.manifests.documents import load_documents


def _dump(nodes: int, pods: int) -> str:
    """A kubectl-get-like dump: nodes, one 8-GPU slice each, and pods with managedFields and defaults."""
    objs: list[dict[str, Any]] = [gpu_class().to_api()]
    objs += [node(f"n{i}").to_api() for i in range(nodes)]
    objs += [gpu_slice(f"n{i}", 8).to_api() for i in range(nodes)]
    for j in range(pods):
        p = pod(f"p{j}", {GPU_SHARED: 1, "cpu": "1"}).to_api()
        p["metadata"]["labels"] = {"app": "web", "pod-template-hash": "5d4f8"}
        p["metadata"]["managedFields"] = [
            {
                "manager": "kube-controller-manager",
                "operation": "Update",
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
            }
        ]
        p["spec"].update(
            {
                "restartPolicy": "Always",
                "dnsPolicy": "ClusterFirst",
                "schedulerName": "default-scheduler",
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
                ],
            }
        )
        p["spec"]["containers"][0].update(
            {"image": "nginx", "volumeMounts": [{"name": "token", "mountPath": "/var/run/secrets"}]}
        )
        objs.append(p)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})


def _best(fn: Callable[[], object], repeat: int) -> float:
    """Best of `repeat` CPU times, the cyclic GC paused as the command reads its input (its passes over a
    growing heap are no part of any of these costs)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        finally:
            gc.enable()
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    text = _dump(args.nodes, args.pods)
    docs = load_documents(text, "dump.json")
    parse = _best(lambda: json.loads(text), args.repeat)
    reader = _best(lambda: load_documents(text, "dump.json"), args.repeat)

    # The JSON text of each pod's spec and status: simulate computes it to share their models between the
    # pods of one ReplicaSet (the walk of an object that is not clean remembers parts by it too); part of the
    # cost of the models, not of the checks.
    with_parts = [(d, _shared_parts(d.kind, d.obj)) for d in docs]

    def walk_all() -> None:
        apischema._PARTS.clear()  # as a fresh run
        for d, parts in with_parts:
            check_fields(d.api_version, d.kind, d.obj, parts)

    walk = _best(walk_all, args.repeat)
    models = [(KINDS[d.kind][1], d.obj) for d in docs]
    validate = _best(lambda: [m.model_validate(o) for m, o in models], args.repeat)
    # as simulate builds them: the pods of one ReplicaSet share their spec's model, whose rules run once
    objects = [(_validate(KINDS[d.kind][1], d.kind, d.obj, parts), d.obj) for d, parts in with_parts]

    def rules_all() -> None:
        valid_specs: set[int] = set()
        for obj, raw in objects:
            object_problem(obj, raw, valid_specs)

    rules = _best(rules_all, args.repeat)
    print(f"{len(docs)} objects ({len(text) / 1e6:.1f} MB JSON)")
    print(f"  bare JSON parse       {parse:8.3f} s   1.00x")
    print(f"  the command's reader  {reader:8.3f} s   {reader / parse:.2f}x parse")
    print(f"  field-schema walk     {walk:8.3f} s   {walk / parse:.2f}x parse")
    print(f"  validation rules      {rules:8.3f} s   {rules / parse:.2f}x parse")
    print(f"  checks together       {walk + rules:8.3f} s   {(walk + rules) / parse:.2f}x parse (target < 1)")
    loading = reader + walk + rules
    print(f"  reader + checks       {loading:8.3f} s   {loading / parse:.2f}x parse (target <= 2)")
    print(
        f"  (pydantic models      {validate:8.3f} s   {validate / parse:.2f}x parse, not part of the checks)"
    )


if __name__ == "__main__":
    main()
