"""Native type validation the double performs (kept small: the rules our components rely on).

Upstream homes are cited per rule. Unknown types validate nothing beyond object metadata.
"""

from __future__ import annotations

from resourceapi.field import FieldError

from .resources import ResourceType
from .store import Obj


def validate_type(rt: ResourceType, new: Obj, old: Obj | None) -> list[FieldError]:
    """Spec validation on create (old is None) or main-endpoint update."""
    return []


def validate_status_update(rt: ResourceType, new: Obj, old: Obj) -> list[FieldError]:
    """Status-subresource validation."""
    return []
