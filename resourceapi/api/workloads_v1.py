"""pydantic models of the workload objects `simulate` expands into pods: apps/v1 Deployment, ReplicaSet and
StatefulSet, batch/v1 Job. Only what decides how many pods there are and what they look like is modelled;
unknown fields are kept, as everywhere in resourceapi."""

from __future__ import annotations

from pydantic import Field

from resourceapi.api.core_v1 import PodSpec
from resourceapi.api.meta import ApiModel, ObjectMeta


class PodTemplateSpec(ApiModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


class ReplicatedSpec(ApiModel):
    """Deployment and ReplicaSet: `replicas` pods (1 when unset, the API server's default)."""

    replicas: int | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class StatefulSetOrdinals(ApiModel):
    start: int = 0


class StatefulSetSpec(ReplicatedSpec):
    ordinals: StatefulSetOrdinals | None = None


class JobSpec(ApiModel):
    """A Job runs `parallelism` pods at once (1 when unset), never more than `completions`."""

    parallelism: int | None = None
    completions: int | None = None
    completion_mode: str | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class Deployment(ApiModel):
    api_version: str = "apps/v1"
    kind: str = "Deployment"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ReplicatedSpec = Field(default_factory=ReplicatedSpec)


class ReplicaSet(ApiModel):
    api_version: str = "apps/v1"
    kind: str = "ReplicaSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ReplicatedSpec = Field(default_factory=ReplicatedSpec)


class StatefulSet(ApiModel):
    api_version: str = "apps/v1"
    kind: str = "StatefulSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: StatefulSetSpec = Field(default_factory=StatefulSetSpec)


class Job(ApiModel):
    api_version: str = "batch/v1"
    kind: str = "Job"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSpec = Field(default_factory=JobSpec)


Workload = Deployment | ReplicaSet | StatefulSet | Job
