"""A ResourceSlice device's capacity request policy (KEP-5075 consumable capacity), as
pkg/apis/resource/validation/validation.go judges it: `validateMultiAllocatableDeviceCapacity`,
`validateSingleAllocatableDeviceCapacity` and the `validateRequestPolicy*` rules under them.

Go reads quantities through `Quantity.Value()` (int64) in places; the rules guard those reads against
overflow first, so exact values give the same verdicts. The one place an overflowed int64 shows is the
duplicate key of a valid value past int64 (`quantityKeyInt`), printed as Go computes it
(goquantity.py `GoQuantity`).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from resourceapi.api.limits import CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS
from resourceapi.machinery.field import FieldError, Path, forbidden, invalid, required, too_many
from resourceapi.machinery.goquantity import GoQuantity, go_canonical, go_quantity
from resourceapi.machinery.quantity import MAX_INT64, MIN_INT64, Quantity
from resourceapi.validation.lists import duplicates

IS_NEGATIVE_ERROR_MSG = "must be greater than or equal to 0"  # apimachineryvalidation.IsNegativeErrorMsg
BOUND_OVER_INT64_MESSAGE = "must not be larger than 9223372036854775807"
_ZERO = Quantity(Fraction(0))


def _optional(raw: Any) -> GoQuantity | None:
    return None if raw is None else go_quantity(raw)


def single_allocatable_errors(capacity: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`validateSingleAllocatableDeviceCapacity`: a request policy needs `allowMultipleAllocations`."""
    if capacity.get("requestPolicy") is not None:
        return [forbidden(path.child("requestPolicy"), "allowMultipleAllocations must be true")]
    return []


def multi_allocatable_errors(
    capacity: Mapping[str, Any], path: Path, fractional: bool, v1_36: bool = False
) -> list[FieldError]:
    """`validateMultiAllocatableDeviceCapacity`: the request policy, if any, against the capacity's value.
    `fractional`: the DRAFractionalCapacityRange gate. `v1_36`: v1.36.3's range (`_range_errors`)."""
    policy = capacity.get("requestPolicy")
    if not isinstance(policy, Mapping):
        return []
    return request_policy_errors(
        go_quantity(capacity.get("value")), policy, path.child("requestPolicy"), fractional, v1_36
    )


def request_policy_errors(
    max_capacity: GoQuantity, policy: Mapping[str, Any], path: Path, fractional: bool, v1_36: bool = False
) -> list[FieldError]:
    """`validateRequestPolicy` + `validateValidRequestValues`: one of validValues / validRange, each with a
    default."""
    raw_values = policy.get("validValues")
    values = [go_quantity(v) for v in raw_values] if isinstance(raw_values, list) else []
    valid_range = policy.get("validRange")
    has_range = isinstance(valid_range, Mapping)
    if values and has_range:
        return [
            forbidden(
                path,
                'exactly one policy can be specified, cannot specify "validValues" and "validRange" '
                "at the same time",
            )
        ]
    default = _optional(policy.get("default"))
    if values:
        if default is None:
            return [required(path.child("default"), "required when validValues is defined")]
        return _valid_values_errors(default, max_capacity, values, path.child("validValues"), fractional)
    if has_range:
        assert isinstance(valid_range, Mapping)
        if default is None:
            return [required(path.child("default"), "required when validRange is defined")]
        return _range_errors(default, max_capacity, valid_range, path.child("validRange"), fractional, v1_36)
    return []


def _int_key(q: GoQuantity) -> str:
    """`quantityKeyInt`: `strconv.FormatInt(q.Value(), 10)`, int64 wrap-around included."""
    return str(q.value)


def _dec_key(q: GoQuantity) -> str:
    """`quantityKeyAsDec`: the exact decimal value (only its equality matters for duplicates)."""
    return str(q.q.value)


def _valid_values_errors(
    default: GoQuantity, max_capacity: GoQuantity, values: list[GoQuantity], path: Path, fractional: bool
) -> list[FieldError]:
    """`validateRequestPolicyValidValues`: ascending order, at most 10 options (a longer list is Too many and
    its options are not read, so the default is not found among them), none above the capacity, no
    duplicates (by integer value, or exact value with DRAFractionalCapacityRange), the default one of them."""
    errors: list[FieldError] = []
    for i in range(len(values) - 1):
        if values[i].q.cmp(values[i + 1].q) > 0:
            errors.append(
                invalid(path.index(i + 1), str(values[i + 1]), "values must be sorted in ascending order")
            )
    found_default = False
    if len(values) > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS:
        errors.append(too_many(path, len(values), CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS))
    else:
        for i, option in enumerate(values):
            if option.q.cmp(max_capacity.q) > 0:
                errors.append(
                    invalid(
                        path.index(i), str(option), f"option is larger than capacity value: {max_capacity}"
                    )
                )
            if option.q.cmp(default.q) == 0:
                found_default = True
        key = _dec_key if fractional else _int_key
        errors += duplicates(values, path, key, key)
    if not found_default:
        errors.append(
            invalid(path, str(default), "default value is not valid according to the requestPolicy")
        )
    return errors


def _is_fractional(q: GoQuantity) -> bool:
    return q.q.value.denominator != 1


def _milli_exact(q: GoQuantity) -> bool:
    """`q.Cmp(NewMilliQuantity(q.MilliValue(), q.Format)) == 0`: q in whole thousandths within int64."""
    milli = q.q.value * 1000
    return milli.denominator == 1 and MIN_INT64 <= milli.numerator <= MAX_INT64


def _range_errors(
    default: GoQuantity,
    max_capacity: GoQuantity,
    rng: Mapping[str, Any],
    path: Path,
    fractional: bool,
    v1_36: bool = False,
) -> list[FieldError]:
    """`validateRequestPolicyRange`. `v1_36`: v1.36.3 reports the default's bound errors at `min` and `max`
    (1.37 moved them to `default`). Its range has none of 1.37's guards (step sign, int64 and milli bounds):
    there a zero step divides by zero and overflowing bounds wrap, so the guards stay on every release
    (docs/divergences.md "1.36's capacity range guards")."""
    low = _optional(rng.get("min"))
    if low is None:
        return [required(path.child("min"), "required when validRange is defined")]
    high = _optional(rng.get("max"))
    step = _optional(rng.get("step"))
    errors: list[FieldError] = []
    if low.q.cmp(max_capacity.q) > 0:
        errors.append(
            invalid(path.child("min"), str(low), f"min is larger than capacity value: {max_capacity}")
        )
    if default.q.cmp(low.q) < 0:
        at = path.child("min" if v1_36 else "default")
        errors.append(invalid(at, str(default), f"default is less than min: {low}"))
    if high is not None:
        if low.q.cmp(high.q) > 0:
            errors.append(invalid(path.child("max"), str(low), f"min is larger than max: {high}"))
        if high.q.cmp(max_capacity.q) > 0:
            errors.append(
                invalid(path.child("max"), str(high), f"max is larger than capacity value: {max_capacity}")
            )
        if default.q.cmp(high.q) > 0:
            at = path.child("max" if v1_36 else "default")
            errors.append(invalid(at, str(default), f"default is more than max: {high}"))
    bounds = (("default", default), ("min", low), ("max", high), ("step", step))
    use_milli = False
    if fractional:
        use_milli = any(q is not None and _is_fractional(q) for q in (low, high, step, default))
        if use_milli:
            unsafe = [
                invalid(path.child(name), str(q), "value cannot be represented as a milli value")
                for name, q in bounds
                if q is not None and not _milli_exact(q)
            ]
            if unsafe:
                return errors + unsafe
    if step is None:
        return errors
    if step.q.sign() <= 0:
        errors.append(invalid(path.child("step"), str(step), "must be greater than zero"))
        return errors
    added = low.q + step.q  # Add forgets the text: canonical
    if added.cmp(max_capacity.q) > 0:
        errors.append(
            invalid(
                path.child("step"),
                str(step),
                f"one step {go_canonical(added)} is larger than capacity value: {max_capacity}",
            )
        )
    if not use_milli:
        out_of_range = [
            e for name, q in bounds if q is not None for e in _int64_range_errors(q, path.child(name))
        ]
        if out_of_range:
            return errors + out_of_range
    errors.extend(_step_errors(default, low, step, use_milli, path.child("step")))
    if high is not None:
        errors.extend(_step_errors(high, low, step, use_milli, path.child("step")))
    return errors


def _int64_range_errors(q: GoQuantity, path: Path) -> list[FieldError]:
    """`validateInt64Range`: in [0, MaxInt64], where `Quantity.Value()` is exact enough to reason with."""
    if q.q.sign() < 0:
        return [invalid(path, str(q), IS_NEGATIVE_ERROR_MSG)]
    if q.q.value > MAX_INT64:
        return [invalid(path, str(q), BOUND_OVER_INT64_MESSAGE)]
    return []


def _step_errors(
    value: GoQuantity, low: GoQuantity, step: GoQuantity, use_milli: bool, path: Path
) -> list[FieldError]:
    """`validateRequestPolicyRangeStep`: `value - min` a multiple of the step, in whole units (`Value()`,
    rounded up) or thousandths (`MilliValue()`)."""
    if use_milli:
        v, m, s = value.q.milli_value_ceil(), low.q.milli_value_ceil(), step.q.milli_value_ceil()
    else:
        v, m, s = value.q.value_ceil(), low.q.value_ceil(), step.q.value_ceil()
    if (v - m) % s != 0:
        return [invalid(path, str(value), f"value is not a multiple of a given step ({step}) from ({low})")]
    return []
