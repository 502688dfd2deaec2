"""Which kinds have upstream's whole validation ported, and the entry that runs it.

`VALIDATORS` maps a kind to the validation kube-apiserver 1.37 runs on a create of that kind (defaults
applied, disabled fields dropped, handwritten then declarative errors, as the API server reports them). A kind
absent here is checked by simulate's subset (allocator/simulate/objectchecks.py) until it is ported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from resourceapi.gates import FeatureGates
from resourceapi.machinery.field import FieldError
from resourceapi.validation.claim import validate_resource_claim, validate_resource_claim_template
from resourceapi.validation.slice import validate_resource_slice

# (object as decoded JSON, served feature gates) -> every error, in the API server's order.
Validator = Callable[[Mapping[str, Any], FeatureGates], list[FieldError]]

VALIDATORS: dict[str, Validator] = {
    "ResourceClaim": validate_resource_claim,
    "ResourceClaimTemplate": validate_resource_claim_template,
    "ResourceSlice": validate_resource_slice,
}


def validate_create(
    kind: str, obj: Mapping[str, Any], gates: FeatureGates | None = None
) -> list[FieldError] | None:
    """Every error the API server reports on creating `obj`, or None when `kind` is not ported."""
    validator = VALIDATORS.get(kind)
    if validator is None:
        return None
    return validator(obj, gates or FeatureGates.defaults())
