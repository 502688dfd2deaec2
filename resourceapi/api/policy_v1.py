"""policy/v1 PodDisruptionBudget: the fields preemption reads (k8s.io/api/policy/v1 types.go)."""

from __future__ import annotations

from pydantic import Field

from resourceapi.api.meta import ApiModel, LabelSelector, ObjectMeta


class PodDisruptionBudgetSpec(ApiModel):
    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(ApiModel):
    disruptions_allowed: int = 0
    disrupted_pods: dict[str, str] = Field(default_factory=dict)  # pod name -> time the eviction was seen


class PodDisruptionBudget(ApiModel):
    api_version: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)
