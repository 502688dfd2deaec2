"""Upstream's depth-first first-fit search (`allocateOne`/`allocateDevice`) with an explicit undo log.

Order: claims, then requests, then devices (pools by driver/pool, slices by name, devices in slice order,
unless the caller passes another candidate order); combinations, not permutations, within one request. Every
mutation made for a candidate (counters, constraints, in-use marks, in-flight capacity, results) is recorded
in the undo log and undone when the candidate is rejected or backtracked, fixing upstream's leaks (issue
kubernetes/kubernetes#140436).

The search is iterative: each `allocateOne` invocation is a generator frame on an explicit stack, so a pod
with thousands of devices needs no deeper Python recursion than a pod with one (upstream recurses: kubernetes
staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/allocator_incubating.go).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from fractions import Fraction

from allocator.structured.counters import CounterTotals, InFlightCounters
from allocator.structured.errors import AllocationError
from allocator.structured.features import Features
from allocator.structured.ids import DeviceID, PoolID
from allocator.structured.pools import DeviceRecord, NodePools
from allocator.structured.requests import ClaimPlan, RequestData, plan_claims
from allocator.structured.selection import ClassRecord, Matcher, per_device_node_matches
from allocator.structured.state import CommittedState
from resourceapi.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from resourceapi.api.resource_v1 import (
    ALLOCATION_MODE_ALL,
    DeviceToleration,
    ResourceClaim,
)
from resourceapi.capacity import fits
from resourceapi.machinery.quantity import Quantity
from resourceapi.tolerations import tolerates

SEARCH_TIMED_OUT = "timed out trying to allocate devices"
# Upstream bounds one node's allocation by time (the DynamicResources filter timeout, 10 s by default); we
# bound it by search steps so results stay deterministic. One step costs about 8 us here, so the default is
# under two seconds per node: a pathological claim makes that node unschedulable instead of hanging.
DEFAULT_MAX_STEPS = 200_000

# Outcomes of one allocateOne frame: upstream's (true, nil), (false, nil), errAllocationResultMaxSizeExceeded.
_DONE, _FAILED, _MAX_SIZE = 1, 0, 2
_Frame = Generator[tuple[int, int, int, int, bool, int], int, int]


class DeviceResult:
    """One allocated device of a claim, before conversion to the API result (share IDs are made then)."""

    __slots__ = ("admin", "consumed", "device", "multi", "request")

    def __init__(
        self, request: RequestData, device: DeviceRecord, multi: bool, consumed: dict[str, Quantity] | None
    ) -> None:
        self.request = request
        self.device = device
        self.multi = multi  # a share of an allowMultipleAllocations device: gets a shareID
        self.consumed = consumed
        self.admin = request.admin


def taint_prevents(device: DeviceRecord, tolerations: list[DeviceToleration] | None) -> bool:
    """Only NoSchedule and NoExecute taints block, unless tolerated."""
    for taint in device.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            tolerates(t, taint) for t in tolerations or ()
        ):
            return True
    return False


class Search:
    """One allocation attempt: one pod's claims on one node's devices, planned (upstream's pre-flight checks,
    which raise `AllocationError`) when constructed; `run()` searches."""

    def __init__(
        self,
        *,
        features: Features,
        pools: NodePools,
        claims: Sequence[ResourceClaim],
        classes: Mapping[str, ClassRecord],
        matcher: Matcher,
        state: CommittedState,
        available_counters: Callable[[PoolID], CounterTotals],
        node_name: str,
        labels: Mapping[str, str],
        max_steps: int | None = None,
        candidates: Sequence[DeviceRecord] | None = None,
    ) -> None:
        self.features = features
        self.pools = pools
        self.candidates: Sequence[DeviceRecord] = pools.candidates if candidates is None else candidates
        self.matcher = matcher
        self.state = state
        self.available_counters = available_counters
        self.node_name = node_name
        self.labels = labels
        self.undo: list[Callable[[], None]] = []
        self.allocating: dict[DeviceID, set[int]] = {}  # dedicated devices in flight -> claim indices
        self.in_flight_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.in_flight_shares: dict[DeviceID, int] = {}
        self.counters = InFlightCounters()
        self.calls = 0
        self.max_steps = sys.maxsize if max_steps is None else max_steps
        self.plans: list[ClaimPlan] = plan_claims(claims, features, classes, pools, self.all_mode_devices)
        self.results: list[list[DeviceResult]] = [[] for _ in self.plans]

    # --- entry ---------------------------------------------------------------------------------------------

    def run(self) -> bool:
        """True when a complete solution was found (results hold it)."""
        outcome = self._drive()
        if outcome == _MAX_SIZE:
            return False
        if outcome != _DONE:
            self._no_fit()
            return False
        return True

    def could_fit(self) -> bool:
        """A cheap necessary condition, checked before searching: every request (for a prioritized list: one
        of its subrequests) has a device it may take, not counting what the search itself would take.

        False only where `run()` would end with "no fit" too: if any selector fails on any device, or a
        request takes all devices, the answer is True and the search decides (and reports the error).
        """
        if any(d.mode == ALLOCATION_MODE_ALL for plan in self.plans for e in plan.requests for d in e):
            return True
        possible = True
        try:
            for plan in self.plans:
                for entries in plan.requests:
                    if not any(self._has_candidate(data) for data in entries):
                        possible = False
        except AllocationError:
            return True
        if not possible:
            self._no_fit()
        return possible

    def _has_candidate(self, data: RequestData) -> bool:
        """Some device is selectable, not in use, fits the committed capacity and is not tainted against
        the request. Every device is looked at, so that a selector error anywhere surfaces here."""
        found = False
        cc = self.features.consumable_capacity
        taints = self.features.device_taints
        for device in self.candidates:
            if not self.selectable(data, device):
                continue
            if found:
                continue
            if not data.admin and device.id in self.state.dedicated:
                continue
            if cc and not self.capacity_fits(data, device):
                continue
            if taints and taint_prevents(device, data.tolerations):
                continue
            found = True
        return found

    def _no_fit(self) -> None:
        if self.pools.any_invalid:
            raise AllocationError("invalid resource pools were encountered", node_failure=True)

    # --- checks --------------------------------------------------------------------------------------------

    def in_use(self, device: DeviceID) -> bool:
        return device in self.state.dedicated or bool(self.allocating.get(device))

    def _holds_share(self, device: DeviceID) -> bool:
        """Upstream `deviceCapacityInUse`: a committed share or consumed capacity, or one in flight."""
        return self.state.has_shares(device) or self.in_flight_shares.get(device, 0) > 0

    def selectable(self, data: RequestData, device: DeviceRecord) -> bool:
        """Binding conditions gate, class selectors, request selectors, per-device node selection."""
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        if data.cls is not None and not self.matcher.class_matches(device, data.cls):
            return False
        if not self.matcher.request_matches(device, data.selectors, data.claim):
            return False
        return per_device_node_matches(device, self.node_name, self.labels)

    def capacity_fits(self, data: RequestData, device: DeviceRecord) -> bool:
        """Upstream CmpRequestOverCapacity against committed and in-flight consumption."""
        consumption = data.consumption(device)
        if consumption is None:
            return False
        return fits(
            consumption,
            device.capacity,
            self.state.aggregated.get(device.id),
            self.in_flight_capacity.get(device.id),
        )

    def all_mode_devices(self, data: RequestData) -> list[DeviceRecord]:
        """The fixed device list of an `All` request (pool order): selectable and fitting the committed
        state."""
        out: list[DeviceRecord] = []
        for device in self.pools.candidates:
            if not self.selectable(data, device):
                continue
            if self.features.consumable_capacity and not self.capacity_fits(data, device):
                continue
            out.append(device)
        return out

    # --- search --------------------------------------------------------------------------------------------

    def _rollback(self, mark: int) -> None:
        undo = self.undo
        while len(undo) > mark:
            undo.pop()()

    def _drive(self) -> int:
        """Run allocateOne(0, ...) to completion on an explicit stack of frames."""
        stack: list[_Frame] = []
        args: tuple[int, int, int, int, bool, int] | None = (0, 0, 0, 0, False, 0)
        value = _FAILED
        while True:
            if args is not None:
                self.calls += 1
                if self.calls > self.max_steps:
                    # upstream's filter timeout (ctx deadline checked on every allocateOne call), in steps
                    raise AllocationError(SEARCH_TIMED_OUT, node_failure=True)
                frame = self._frame(*args)
                stack.append(frame)
                send: int | None = None
            else:
                if not stack:
                    return value
                frame = stack[-1]
                send = value
            try:
                args = frame.send(send)  # type: ignore[arg-type]
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                args = None

    def _frame(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> _Frame:
        """One allocateOne invocation: yields the next invocation's arguments, receives its outcome."""
        if ci >= len(self.plans):
            return _DONE
        plan = self.plans[ci]
        if ri >= len(plan.requests):
            outcome = yield (ci + 1, 0, 0, 0, False, 0)
            return _FAILED if outcome == _MAX_SIZE else outcome
        entries = plan.requests[ri]
        if not in_sub and entries[0].parent:
            all_exceeded = True
            for sub_index in range(len(entries)):
                outcome = yield (ci, ri, sub_index, 0, True, 0)
                if outcome == _MAX_SIZE:
                    continue
                all_exceeded = False
                if outcome == _DONE:
                    entries[0].selected_sub = sub_index
                    return _DONE
            return _MAX_SIZE if all_exceeded else _FAILED

        data = entries[si]
        all_mode = data.mode == ALLOCATION_MODE_ALL
        if all_mode and not data.all_devices:
            return _FAILED
        if di >= data.num_devices:
            return (yield (ci, ri + 1, 0, 0, False, 0))
        if len(self.results[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            return _MAX_SIZE

        if all_mode:
            mark = len(self.undo)
            if not self._allocate_device(data, data.all_devices[di], must=True):
                return _FAILED
            outcome = yield (ci, ri, si, di + 1, in_sub, 0)
            if outcome != _DONE:
                self._rollback(mark)
            return outcome

        candidates = self.candidates
        admin = data.admin
        cc = self.features.consumable_capacity
        for index in range(start, len(candidates)):
            device = candidates[index]
            dev_id = device.id
            if admin:
                if ci in self.allocating.get(dev_id, ()):
                    continue
            elif self.in_use(dev_id):
                continue
            if not self.selectable(data, device):
                continue
            if cc and not self.capacity_fits(data, device):
                continue
            mark = len(self.undo)
            if not self._allocate_device(data, device, must=False):
                continue
            outcome = yield (ci, ri, si, di + 1, in_sub, index + 1)
            if outcome == _DONE:
                return _DONE
            self._rollback(mark)
            if outcome == _MAX_SIZE:
                return _MAX_SIZE
        return _FAILED

    def _allocate_device(self, data: RequestData, device: DeviceRecord, must: bool) -> bool:
        """Check availability and constraints for one candidate and record it; False leaves no trace."""
        features = self.features
        dev_id = device.id
        ci = data.claim_index
        multi = features.consumable_capacity and device.allow_multi
        if not multi and data.admin and ci in self.allocating.get(dev_id, ()):
            return False
        if not data.admin and self.in_use(dev_id):
            return False
        if (
            features.live_share_blocks_exclusive
            and not data.admin
            and not multi
            and self._holds_share(dev_id)
        ):
            return False  # 1.38: a share left from before allowMultipleAllocations was turned off (#140798)
        if device.consumes and not features.partitionable_devices:
            return False
        mark = len(self.undo)
        undo = self.undo

        counters_paid = multi and (self.state.has_shares(dev_id) or self.in_flight_shares.get(dev_id, 0) > 0)
        if device.consumes and not counters_paid:
            if not self.counters.charge(device, self.available_counters(dev_id.pool_id)):
                return False
            undo.append(lambda: self.counters.release(device))

        if features.device_taints and taint_prevents(device, data.tolerations):
            self._rollback(mark)
            return False

        base, sub = data.base_name, data.sub_name
        for constraint in self.plans[ci].constraints:
            if not constraint.add(base, sub, device):
                self._rollback(mark)
                if must:
                    raise AllocationError(
                        f"claim {data.claim}, request {data.name}: cannot add device {dev_id} because a "
                        "claim constraint would not be satisfied"
                    )
                return False
            undo.append(lambda c=constraint: c.remove(base, sub))  # type: ignore[misc]

        if not multi:
            claims = self.allocating.setdefault(dev_id, set())
            if ci not in claims:
                claims.add(ci)
                undo.append(lambda: claims.discard(ci))

        consumed: dict[str, Quantity] | None = None
        if features.consumable_capacity:
            consumption = data.consumption(device)
            if consumption is None or not fits(
                consumption,
                device.capacity,
                self.state.aggregated.get(dev_id),
                self.in_flight_capacity.get(dev_id),
            ):
                self._rollback(mark)
                return False
            if multi:
                consumed = consumption.result or None
                if consumption.amounts:
                    flight = self.in_flight_capacity.setdefault(dev_id, {})
                    for name, amount in consumption.amounts:
                        flight[name] = flight.get(name, Fraction(0)) + amount
                    amounts = consumption.amounts

                    def release_capacity() -> None:
                        for cap_name, cap_amount in amounts:
                            flight[cap_name] -= cap_amount

                    undo.append(release_capacity)
                shares = self.in_flight_shares
                shares[dev_id] = shares.get(dev_id, 0) + 1
                undo.append(lambda: shares.__setitem__(dev_id, shares[dev_id] - 1))

        results = self.results[ci]
        results.append(DeviceResult(data, device, multi, consumed))
        undo.append(lambda: results.__delitem__(-1))
        return True
