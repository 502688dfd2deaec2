"""Object metadata shared by every API group's models: the pydantic base and `ObjectMeta`.

API field names are the aliases (`populate_by_name` also accepts the Python names); unknown fields are kept
(`extra="allow"`) so an object read from a newer API server round-trips unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from resourceapi.manifests.interning import interned_items


class ApiModel(BaseModel):
    """Base: camelCase aliases, population by name, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", arbitrary_types_allowed=True
    )

    def to_api(self) -> dict[str, Any]:
        """The object as the API server would serve it (aliases, no unset optional fields)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OwnerReference(ApiModel):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(ApiModel):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    # shared between the objects that repeat them (resourceapi/manifests/interning.py): never modify one
    owner_references: Annotated[list[OwnerReference], interned_items(OwnerReference)] | None = None
    finalizers: list[str] | None = None
    self_link: str | None = None
    deletion_grace_period_seconds: int | None = None
    managed_fields: list[Any] | None = None

    @property
    def display_name(self) -> str:
        """The name, or the generateName prefix while no name is assigned
        (`resourceapi.machinery.objects.display_name`
        for the same rule on raw dicts)."""
        return self.name or self.generate_name or ""


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(ApiModel):
    """metav1.LabelSelector: matchLabels and matchExpressions, ANDed; `{}` selects everything."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None
