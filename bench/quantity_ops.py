"""Cost of the Quantity operations on the allocator's hot path, per call, next to the bare Fraction operation
each one wraps (the floor a Fraction-based Quantity cannot beat). Prints microseconds and ratios.

    .venv/bin/python bench/quantity_ops.py [--number N]
"""

from __future__ import annotations

import argparse
import timeit
from fractions import Fraction

from resourceapi.machinery.quantity import Quantity


def _per_call_us(stmt: str, env: dict[str, object], number: int) -> float:
    best = min(timeit.repeat(stmt, globals=env, number=number, repeat=5))
    return best / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=100_000)
    args = parser.parse_args()

    a, b = Quantity.parse("80Gi"), Quantity.parse("16Gi")
    fa, fb = a.value, b.value
    env: dict[str, object] = {"Quantity": Quantity, "Fraction": Fraction, "a": a, "b": b, "fa": fa, "fb": fb}
    rows = [
        ("parse 80Gi", 'Quantity.parse("80Gi")', "Fraction(80 << 30)"),
        ("parse 1500m", 'Quantity.parse("1500m")', "Fraction(1500, 1000)"),
        ("a + b", "a + b", "fa + fb"),
        ("a - b", "a - b", "fa - fb"),
        ("a.cmp(b)", "a.cmp(b)", "(fa > fb) - (fa < fb)"),
        ("a >= b", "a >= b", "fa >= fb"),
        ("a == b", "a == b", "fa == fb"),
        ("str (fresh)", "str(Quantity(fa))", "str(fa)"),
        ("value_ceil", "a.value_ceil()", "-(-fa.numerator // fa.denominator)"),
    ]
    print(f"{'operation':<14} {'Quantity us':>12} {'Fraction us':>12} {'ratio':>7}")
    for name, stmt, baseline in rows:
        ours = _per_call_us(stmt, env, args.number)
        floor = _per_call_us(baseline, env, args.number)
        print(f"{name:<14} {ours:>12.3f} {floor:>12.3f} {ours / floor:>7.2f}")


if __name__ == "__main__":
    main()
