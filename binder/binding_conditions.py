"""DynamicResources' PreBind wait for device binding conditions, which holds no bind thread.

Upstream: v1.38.0-beta.0 `pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go` (`PreBind`
:1648-1760, `isClaimReadyForBinding` :1975, `isClaimTimeout` :2010, `isPodReadyForBinding` :2034,
`listBindingConditionsStatus` / `formatBCStatusOneLine` :2139-2240). Upstream polls the claim every 5 s for up
to `bindingTimeout` on its binding goroutine; here one poller thread checks the waiting pods (every 5 s and on
every claim event) and the binding cycle resumes on a bind thread, as VolumeBinding's wait does
(binder/prebind_wait.py). Active when the gates turn on the allocator's DeviceBindingAndStatus feature.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from binder.context import BinderContext
from binder.hints import Key
from binder.prebind_wait import PreBindWait
from binder.scheduler_metrics import DYNAMIC_RESOURCES
from kubeio.informer import resource_version
from kubeio.kube import Obj
from resourceapi.machinery.objects import parse_time

log = logging.getLogger("dra_capacity.binder")
POLL_INTERVAL = 5.0  # wait.PollUntilContextTimeout(ctx, 5*time.Second, pl.bindingTimeout, true, ...)
BINDING_TIMEOUT_SECONDS = 600.0  # config.DynamicResourcesBindingTimeoutDefault (DynamicResourcesArgs)
REASON_PENDING = "BindingConditionsPending"
ERR_FAILED = "device binding failed"  # ErrDeviceBindingFailed
ERR_TIMEOUT = "device binding timeout"  # ErrDeviceBindingTimeout
# pkg/scheduler/metrics: BindingConditionsStatus{Success,Failed,Timeout,Error}
STATUS_SUCCESS, STATUS_FAILED, STATUS_TIMEOUT, STATUS_ERROR = "success", "failure", "timeout", "error"


class BindingConditionsError(Exception):
    """A binding failure condition is True, or the binding timed out; the message is upstream's error."""


def pending_message(node: str) -> str:
    """The Normal `BindingConditionsPending` Event's note (action `Scheduling`)."""
    return f"waiting for binding conditions for device on node {node}"


def prebind_message(detail: str) -> str:
    """The framework's PreBind failure text for DynamicResources."""
    return f'running PreBind plugin "{DYNAMIC_RESOURCES}": {detail}'


def _results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    alloc = (claim.get("status") or {}).get("allocation") or {}
    return list((alloc.get("devices") or {}).get("results") or [])


def has_binding_conditions(claim: Mapping[str, Any]) -> bool:
    """hasBindingConditions: some allocated device has binding conditions."""
    return any(r.get("bindingConditions") for r in _results(claim))


def _device_status(claim: Mapping[str, Any], result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """getAllocatedDeviceStatus: the `status.devices[]` entry of the same driver, pool and device."""
    for dev in (claim.get("status") or {}).get("devices") or []:
        if all(dev.get(k) == result.get(k) for k in ("driver", "pool", "device")):
            return dev  # type: ignore[no-any-return]
    return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == kind:
            return cond  # type: ignore[no-any-return]
    return None


def _is_true(status: Mapping[str, Any] | None, kind: str) -> bool:
    cond = _condition(status, kind) if status is not None else None
    return cond is not None and cond.get("status") == "True"


def claim_ready(claim: Mapping[str, Any]) -> bool:
    """isClaimReadyForBinding: every binding condition of every allocated device True; a True failure
    condition raises BindingConditionsError."""
    if not (claim.get("status") or {}).get("allocation"):
        return False
    name = claim["metadata"]["name"]
    for result in _results(claim):
        if not result.get("bindingConditions"):
            continue
        status = _device_status(claim, result)
        if status is None:
            return False
        for kind in result.get("bindingFailureConditions") or []:
            failed = _condition(status, kind)
            if failed is not None and failed.get("status") == "True":
                reason, message = failed.get("reason", ""), failed.get("message", "")
                raise BindingConditionsError(
                    f'{ERR_FAILED}: claim={name}, reason={reason}, message="{message}"'
                )
        if not all(_is_true(status, kind) for kind in result["bindingConditions"]):
            return False
    return True


def claim_timed_out(claim: Mapping[str, Any], timeout: float, now: datetime | None = None) -> bool:
    """isClaimTimeout: `allocationTimestamp + bindingTimeout` has passed for a claim with binding
    conditions."""
    alloc = (claim.get("status") or {}).get("allocation") or {}
    stamp = parse_time(alloc.get("allocationTimestamp"))
    if stamp is None or not has_binding_conditions(claim):
        return False
    return (now or datetime.now(UTC)).timestamp() > stamp.timestamp() + timeout


def outcome_label(exc: BaseException | None, expired: bool) -> str:
    """The metrics' `status` (BindingConditionsStatus*): success, failure (a failure condition), timeout (the
    wait's deadline or the claim's own), or error (an API error, or the binder stopping)."""
    if expired or (isinstance(exc, BindingConditionsError) and str(exc).startswith(ERR_TIMEOUT)):
        return STATUS_TIMEOUT
    if exc is None:
        return STATUS_SUCCESS
    return STATUS_FAILED if isinstance(exc, BindingConditionsError) else STATUS_ERROR


def status_line(claim: Mapping[str, Any], failed_only: bool) -> str:
    """formatBCStatusOneLine over listBindingConditionsStatus, for the log: the failed devices (a failure),
    or the pending ones (a timeout)."""
    parts = []
    for result in _results(claim):
        if not result.get("bindingConditions"):
            continue
        status = _device_status(claim, result)
        failed = [c for c in result.get("bindingFailureConditions") or [] if _is_true(status, c)]
        pending = [c for c in result["bindingConditions"] if not _is_true(status, c)]
        if (failed_only and not failed) or (not failed_only and (failed or not pending)):
            continue
        base = f"<driver={result.get('driver')}, pool={result.get('pool')}> {result.get('device')}"
        if failed:
            base += f" failed=[{','.join(failed)}]"
        if pending and not failed_only:
            base += f" pending=[{','.join(pending)}]"
        parts.append(base)
    return "; ".join(parts)


class BindingConditions:
    """The pods whose PreBind waits for their devices' binding conditions, on their own poller
    (binder/prebind_wait.py)."""

    def __init__(
        self,
        ctx: BinderContext,
        submit: Callable[[Callable[[], None]], Any],
        timeout: float = BINDING_TIMEOUT_SECONDS,
        interval: float = POLL_INTERVAL,
    ) -> None:
        self.ctx = ctx
        self.waiter: PreBindWait[Obj] = PreBindWait(
            ctx,
            submit,
            self.check,
            BindingConditionsError,
            prebind_message,
            f"{ERR_TIMEOUT}: context deadline exceeded",
            timeout,
            interval,
            "binder-binding-conditions",
            self.observe,
        )
        self.wait, self.pending = self.waiter.wait, self.waiter.pending
        self.start, self.stop = self.waiter.start, self.waiter.stop
        ctx.informers.claims.handlers.append(lambda kind, old, new: self.waiter.wake())

    def current(self, written: Obj) -> Obj:
        """The claim as the informer shows it, unless the informer has not seen PreBind's write yet."""
        meta = written["metadata"]
        seen = self.ctx.informers.claims.get((meta.get("namespace", "default"), meta["name"]))
        if seen is None or resource_version(seen) < resource_version(written):
            return written
        return seen

    def check(self, key: Key, written: Obj) -> bool:
        """isPodReadyForBinding on the current claim: True when ready; BindingConditionsError (logged with
        the devices' status) on a failure condition or on the claim's own timeout."""
        try:
            claim = self.current(written)
            if claim_ready(claim):
                return True
            if claim_timed_out(claim, self.waiter.timeout):
                raise BindingConditionsError(f"{ERR_TIMEOUT}: claim={written['metadata']['name']}")
            return False
        except BindingConditionsError as exc:
            line = status_line(self.current(written), failed_only=str(exc).startswith(ERR_FAILED))
            log.info("binding conditions of %s/%s not met: %s (devices: %s)", *key, exc, line)
            raise

    def observe(self, written: Obj, exc: BaseException | None, expired: bool, seconds: float) -> None:
        """PreBind's two metrics, as upstream records them once the wait ends: the wait's duration per
        allocated device, and an allocation per device with binding conditions, by outcome."""
        label = outcome_label(exc, expired)
        claim = self.current(written)
        metrics, profile = self.ctx.metrics, self.ctx.scheduler_name
        for result in _results(claim):
            driver = str(result.get("driver", ""))
            metrics.binding_conditions_wait.labels(profile, driver, label).observe(seconds)
            if result.get("bindingConditions"):
                metrics.binding_conditions_allocations.labels(profile, driver, label).inc()
