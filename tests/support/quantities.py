"""`q("1Gi")`: the quantity tests' shorthand for `Quantity.parse` (resourceapi/machinery/quantity.py)."""

from __future__ import annotations

from resourceapi.machinery.quantity import Quantity


def q(text: str) -> Quantity:
    return Quantity.parse(text)
