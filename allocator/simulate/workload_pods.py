"""The pods a workload object stands for, named as their controllers name them, for what-if runs.

What-if users have manifests, not pods: a Deployment, ReplicaSet, StatefulSet or Job in the input stands for
the pods its controller would create from its pod template, with no rollout ordering and no autoscaling:

* ReplicaSet: `replicas` pods (default 1), `generateName: <replicaset>-` (pkg/controller/replicaset);
* Deployment: one ReplicaSet `<deployment>-<pod-template-hash>`, then as a ReplicaSet. Upstream hashes the Go
  pod template (fnv32a over its printed struct), which cannot be reproduced here: the hash is drawn from the
  seed instead, then encoded as upstream encodes it (`rand.SafeEncodeString`);
* StatefulSet: `replicas` pods `<statefulset>-<ordinal>`, ordinals from `spec.ordinals.start`;
* Job: `parallelism` pods (default 1) but never more than `completions`, `generateName: <job>-`
  (`<job>-<index>-` in Indexed mode).

Random suffixes and uids come from one `random.Random(seed)`, so a run is reproducible with `--seed`.
"""

from __future__ import annotations

import random
import uuid

from resourceapi.api.core_v1 import Pod
from resourceapi.api.meta import ObjectMeta
from resourceapi.api.workloads_v1 import Deployment, Job, PodTemplateSpec, ReplicaSet, StatefulSet, Workload
from resourceapi.machinery.names import NAME_GENERATOR_ALPHABET, generate_name

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
JOB_COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def safe_encode(text: str) -> str:
    """apimachinery `rand.SafeEncodeString`: every byte mapped onto the name generator's alphabet."""
    return "".join(NAME_GENERATOR_ALPHABET[b % len(NAME_GENERATOR_ALPHABET)] for b in text.encode())


def expand(workload: Workload, rng: random.Random) -> list[Pod]:
    """The pods `workload`'s controller would create, in creation order."""
    namespace = workload.metadata.namespace or "default"
    name = workload.metadata.name
    template = workload.spec.template
    if isinstance(workload, Deployment):
        pod_hash = safe_encode(str(rng.getrandbits(32)))
        rs = f"{name}-{pod_hash}"
        labels = {POD_TEMPLATE_HASH_LABEL: pod_hash}
        return [
            _pod(template, namespace, generate_name(f"{rs}-", rng), rng, labels) for _ in _count(workload)
        ]
    if isinstance(workload, ReplicaSet):
        return [_pod(template, namespace, generate_name(f"{name}-", rng), rng) for _ in _count(workload)]
    if isinstance(workload, StatefulSet):
        start = workload.spec.ordinals.start if workload.spec.ordinals else 0
        return [_pod(template, namespace, f"{name}-{start + i}", rng) for i in range(_replicas(workload))]
    indexed = workload.spec.completion_mode == "Indexed"
    pods = []
    for i in range(_job_pods(workload)):
        prefix = f"{name}-{i}-" if indexed else f"{name}-"
        notes = {JOB_COMPLETION_INDEX_ANNOTATION: str(i)} if indexed else None
        pods.append(_pod(template, namespace, generate_name(prefix, rng), rng, annotations=notes))
    return pods


def _replicas(workload: Deployment | ReplicaSet | StatefulSet) -> int:
    replicas = workload.spec.replicas
    return 1 if replicas is None else max(replicas, 0)


def _count(workload: Deployment | ReplicaSet) -> range:
    return range(_replicas(workload))


def _job_pods(job: Job) -> int:
    parallelism = 1 if job.spec.parallelism is None else max(job.spec.parallelism, 0)
    if job.spec.completions is not None:
        return min(parallelism, max(job.spec.completions, 0))
    return parallelism


def _pod(
    template: PodTemplateSpec,
    namespace: str,
    name: str,
    rng: random.Random,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Pod:
    meta = template.metadata
    return Pod(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace,
            uid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            labels={**(meta.labels or {}), **(labels or {})} or None,
            annotations={**(meta.annotations or {}), **(annotations or {})} or None,
        ),
        spec=template.spec.model_copy(deep=True),
    )
