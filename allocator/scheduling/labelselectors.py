"""metav1.LabelSelector semantics (apimachinery LabelSelectorAsSelector): what a selector matches.

A nil selector matches nothing; `{}` matches everything; matchLabels and matchExpressions are ANDed.
"""

from __future__ import annotations

from collections.abc import Mapping

from resourceapi.api.meta import LabelSelector, LabelSelectorRequirement


def requirement_matches(req: LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(req.key)
    values = req.values or []
    if req.operator == "In":
        return value is not None and value in values
    if req.operator == "NotIn":
        return value is None or value not in values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    return False  # the API server refuses other operators


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    return all(requirement_matches(r, labels) for r in selector.match_expressions or [])


def selector_is_empty(selector: LabelSelector | None) -> bool:
    """labels.Selector.Empty(): `{}` (everything). A nil selector (nothing) is not empty."""
    return selector is not None and not selector.match_labels and not selector.match_expressions


def with_labels(selector: LabelSelector | None, extra: Mapping[str, str]) -> LabelSelector | None:
    """The selector ANDed with `key=value` requirements (matchLabelKeys merged into a selector, as
    podtopologyspread's mergeLabelSetWithSelector; a nil selector stays nil, matching nothing)."""
    if not extra or selector is None:
        return selector
    added = [LabelSelectorRequirement(key=k, operator="In", values=[v]) for k, v in extra.items()]
    return selector.model_copy(update={"match_expressions": [*(selector.match_expressions or []), *added]})
