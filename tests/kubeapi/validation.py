"""Native type validation the TEST DOUBLE performs: the rules our components rely on, not all of upstream's.

* ResourceClaim (`pkg/apis/resource/validation/validation.go` ValidateResourceClaim,
  ValidateResourceClaimUpdate, ValidateResourceClaimStatusUpdate): spec immutable; `status.allocation`
  immutable once set; `reservedFor` needs an allocation, is a set keyed by uid (at most 256), gains no
  entries while the claim is being deleted, and each entry names resource, name and uid; `shareID` must be a
  lowercase UUID.
* Pod status (`pkg/apis/core/validation/validation.go` ValidatePodStatusUpdate):
  `status.extendedResourceClaimStatus` needs a DNS-subdomain claim name and at least one request mapping,
  each with a known container name, an extended resource name and a DNS-label request name, unique per
  (container, resource); it may change once set, as v1.37.2 allows (a removal is not applied: strategies).
* Pod spec (`ValidatePodSpec`, `ValidatePodUpdate`): at least one container, each with a unique DNS-label name
  and an image; on update the spec is immutable except images, activeDeadlineSeconds, added tolerations and
  removed schedulingGates (upstream appends a Go diff to the message; the double lists the changed paths).
* DeviceClass basics (`ValidateDeviceClass`): at most 32 selectors each with `cel.expression`, at most 32
  configs each with an opaque driver, a valid `extendedResourceName`.

A struct-valued bad value (Go prints it with %#v) is rendered as JSON here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from resourceapi.machinery import names
from resourceapi.machinery.field import (
    ErrorType,
    FieldError,
    Path,
    duplicate,
    forbidden,
    invalid,
    required,
    too_many,
)

from .codec import clone
from .resources import ResourceType
from .store import Obj

RESERVED_FOR_MAX = 256
DEVICE_SELECTORS_MAX = 32
DEVICE_CONFIG_MAX = 32
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
UUID_DETAIL = "must be a lowercase UUID in 8-4-4-4-12 format"


def _struct(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


class _GoStruct:
    """A bad value apimachinery prints with `%v` of a struct whose `String()` is its JSON (fields in the Go
    struct's order, `omitempty` ones left out when empty)."""

    def __init__(self, value: dict[str, Any]) -> None:
        self.text = json.dumps(value, separators=(",", ":"))

    def __str__(self) -> str:
        return self.text


def immutable(path: Path | str, new: Any, old: Any) -> list[FieldError]:
    """`ValidateImmutableField`."""
    if new == old:
        return []
    shown = new if isinstance(new, str | int | bool) or new is None else _struct(new)
    return [invalid(path, shown, "field is immutable")]


def validate_type(rt: ResourceType, new: Obj, old: Obj | None) -> list[FieldError]:
    """Spec validation on create (old is None) or main-endpoint update."""
    if rt.key == "resourceclaims.resource.k8s.io" and old is not None:
        return immutable("spec", new.get("spec"), old.get("spec"))
    if rt.key == "deviceclasses.resource.k8s.io":
        return validate_device_class(new)
    if rt.key == "pods":
        errs = validate_pod_spec(new.get("spec") or {})
        if old is not None:
            errs.extend(validate_pod_spec_update(new.get("spec") or {}, old.get("spec") or {}))
        return errs
    return []


def validate_status_update(rt: ResourceType, new: Obj, old: Obj) -> list[FieldError]:
    if rt.key == "resourceclaims.resource.k8s.io":
        deleting = bool((new.get("metadata") or {}).get("deletionTimestamp"))
        return validate_claim_status(new.get("status") or {}, old.get("status") or {}, deleting)
    if rt.key == "pods":
        return validate_pod_status(new, old)
    return []


# ------------------------------------------------------------------ ResourceClaim


def _validate_consumer(ref: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(ref, dict):
        return [required(path)]
    group = str(ref.get("apiGroup") or "")
    if group:
        errs.extend(invalid(path.child("apiGroup"), group, m) for m in names.is_dns1123_subdomain(group))
    for key in ("resource", "name", "uid"):
        if not ref.get(key):
            errs.append(required(path.child(key)))
    return errs


def _share_ids(status: dict[str, Any]) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    for i, r in enumerate(results):
        if isinstance(r, dict) and r.get("shareID") is not None:
            out.append(
                (Path("status.allocation.devices.results").index(i).child("shareID"), str(r["shareID"]))
            )
    for i, d in enumerate(status.get("devices") or []):
        if isinstance(d, dict) and d.get("shareID") is not None:
            out.append((Path("status.devices").index(i).child("shareID"), str(d["shareID"])))
    return out


def validate_claim_status(status: dict[str, Any], old: dict[str, Any], deleting: bool) -> list[FieldError]:
    path = Path("status")
    errs: list[FieldError] = []
    reserved = status.get("reservedFor") or []
    rpath = path.child("reservedFor")
    if len(reserved) > RESERVED_FOR_MAX:  # validateSet: the size check short-circuits
        return [too_many(rpath, len(reserved), RESERVED_FOR_MAX)]
    seen: set[str] = set()
    for i, ref in enumerate(reserved):
        errs.extend(_validate_consumer(ref, rpath.index(i)))
    for i, ref in enumerate(reserved):
        uid = str(ref.get("uid") or "") if isinstance(ref, dict) else ""
        if uid in seen:
            # the whole ResourceClaimConsumerReference, as v1.37.2 prints it
            shown = {k: ref[k] for k in ("apiGroup", "resource", "name", "uid") if ref.get(k)}
            errs.append(duplicate(rpath.index(i), _GoStruct(shown)))
        seen.add(uid)
    # An unchanged stored allocation is not validated again (it is immutable instead).
    checked = status if old.get("allocation") is None else {"devices": status.get("devices")}
    for p, share in _share_ids(checked):
        if not _UUID.fullmatch(share):
            errs.append(invalid(p, share, UUID_DETAIL))
    if reserved:
        if status.get("allocation") is None:
            errs.append(forbidden(rpath, "may not be specified when `allocated` is not set"))
        elif deleting:
            old_uids = {str(r.get("uid")) for r in old.get("reservedFor") or [] if isinstance(r, dict)}
            if any(isinstance(r, dict) and str(r.get("uid")) not in old_uids for r in reserved):
                errs.append(
                    forbidden(
                        rpath,
                        "new entries may not be added while `deallocationRequested` or "
                        "`deletionTimestamp` are set",
                    )
                )
    if old.get("allocation") is not None and status.get("allocation") is not None:
        errs.extend(immutable(path.child("allocation"), status["allocation"], old["allocation"]))
    return errs


# ------------------------------------------------------------------ Pod spec

POD_UPDATABLE = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def validate_pod_spec(spec: dict[str, Any]) -> list[FieldError]:
    """ValidatePodSpec, the container basics: at least one container, each named (a unique DNS label) with
    an image."""
    path = Path("spec")
    errs: list[FieldError] = []
    containers = spec.get("containers") or []
    if not containers:
        errs.append(required(path.child("containers")))
    seen: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            cpath = path.child(key).index(i)
            if not isinstance(c, dict):
                errs.append(required(cpath))
                continue
            name = str(c.get("name") or "")
            if not name:
                errs.append(required(cpath.child("name")))
            else:
                errs.extend(invalid(cpath.child("name"), name, m) for m in names.is_dns1123_label(name))
                if name in seen:
                    errs.append(duplicate(cpath.child("name"), name))
                seen.add(name)
            if not c.get("image") and key == "containers":
                errs.append(required(cpath.child("image")))
    return errs


def _changed_paths(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for k in sorted(set(old) | set(new)):
            out.extend(_changed_paths(old.get(k), new.get(k), f"{path}.{k}"))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            out.extend(_changed_paths(a, b, f"{path}[{i}]"))
        return out
    return [] if old == new else [path]


def validate_pod_spec_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """ValidatePodUpdate: the spec is immutable except for the fields in POD_UPDATABLE (and removing
    schedulingGates). Setting spec.nodeName is the binding subresource's job."""
    munged = clone(new)
    for key in ("containers", "initContainers"):
        for c_new, c_old in zip(munged.get(key) or [], old.get(key) or [], strict=False):
            if isinstance(c_new, dict) and isinstance(c_old, dict) and "image" in c_old:
                c_new["image"] = c_old["image"]
    if munged.get("activeDeadlineSeconds") is not None:
        munged["activeDeadlineSeconds"] = old.get("activeDeadlineSeconds")
        if munged["activeDeadlineSeconds"] is None:
            del munged["activeDeadlineSeconds"]
    old_tol = old.get("tolerations") or []
    new_tol = munged.get("tolerations") or []
    if all(t in new_tol for t in old_tol):
        if old_tol:
            munged["tolerations"] = old_tol
        else:
            munged.pop("tolerations", None)
    old_gates = old.get("schedulingGates") or []
    new_gates = munged.get("schedulingGates") or []
    if all(g in old_gates for g in new_gates):
        if old_gates:
            munged["schedulingGates"] = old_gates
        else:
            munged.pop("schedulingGates", None)
    if (old.get("terminationGracePeriodSeconds") or 0) < 0 and munged.get(
        "terminationGracePeriodSeconds"
    ) == 1:
        munged["terminationGracePeriodSeconds"] = old["terminationGracePeriodSeconds"]
    if munged == old:
        return []
    changed = ", ".join(_changed_paths(old, munged, "spec"))
    return [
        forbidden(
            "spec",
            f"pod updates may not change fields other than {','.join(POD_UPDATABLE)}\nchanged: {changed}",
        )
    ]


# ------------------------------------------------------------------ Pod status


def validate_pod_status(new: Obj, old: Obj) -> list[FieldError]:
    status = new.get("status") or {}
    ext = status.get("extendedResourceClaimStatus")
    path = Path("status.extendedResourceClaimStatus")
    # Not immutable: kube-apiserver v1.37.2 accepts a change once it is set (measured by
    # tests/e2e/test_sandbox_realcluster.py); each new value is validated as a first one.
    if ext is None:
        return []
    errs: list[FieldError] = []
    if not isinstance(ext, dict):
        return [invalid(path, _struct(ext), "must be an object")]
    claim_name = str(ext.get("resourceClaimName") or "")
    if not claim_name:
        errs.append(required(path.child("resourceClaimName")))
    else:
        errs.extend(
            invalid(path.child("resourceClaimName"), claim_name, m)
            for m in names.is_dns1123_subdomain(claim_name)
        )
    mappings = ext.get("requestMappings") or []
    mpath = path.child("requestMappings")
    if not mappings:
        errs.append(required(mpath, "at least one request mapping is required"))
    spec = new.get("spec") or {}
    containers = {
        str(c.get("name"))
        for key in ("initContainers", "containers")
        for c in spec.get(key) or []
        if isinstance(c, dict)
    }
    seen: set[tuple[str, str]] = set()
    for i, m in enumerate(mappings):
        ipath = mpath.index(i)
        if not isinstance(m, dict):
            errs.append(required(ipath))
            continue
        cname = str(m.get("containerName") or "")
        if not cname:
            errs.append(required(ipath.child("containerName")))
        elif cname not in containers:
            errs.append(
                FieldError(
                    ErrorType.INVALID,
                    str(ipath.child("containerName")),
                    cname,
                    "must match the name of an entry in `spec.initContainers.name` or `spec.containers.name`",
                )
            )
        rname = str(m.get("resourceName") or "")
        if not rname:
            errs.append(required(ipath.child("resourceName")))
        else:
            errs.extend(names.validate_extended_resource_name(rname, ipath.child("resourceName")))
        req = str(m.get("requestName") or "")
        if not req:
            errs.append(required(ipath.child("requestName")))
        else:
            errs.extend(invalid(ipath.child("requestName"), req, msg) for msg in names.is_dns1123_label(req))
        key = (cname, rname)
        if key in seen:
            errs.append(duplicate(ipath, _struct({"containerName": cname, "resourceName": rname})))
        seen.add(key)
    return errs


# ------------------------------------------------------------------ DeviceClass


def validate_device_class(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    path = Path("spec")
    errs: list[FieldError] = []
    selectors = spec.get("selectors") or []
    if len(selectors) > DEVICE_SELECTORS_MAX:
        errs.append(too_many(path.child("selectors"), len(selectors), DEVICE_SELECTORS_MAX))
    for i, sel in enumerate(selectors):
        spath = path.child("selectors").index(i)
        cel = sel.get("cel") if isinstance(sel, dict) else None
        if not isinstance(cel, dict):
            errs.append(required(spath.child("cel")))
        elif not cel.get("expression"):
            errs.append(required(spath.child("cel", "expression")))
    configs = spec.get("config") or []
    if len(configs) > DEVICE_CONFIG_MAX:
        errs.append(too_many(path.child("config"), len(configs), DEVICE_CONFIG_MAX))
    for i, cfg in enumerate(configs):
        cpath = path.child("config").index(i)
        opaque = cfg.get("opaque") if isinstance(cfg, dict) else None
        if not isinstance(opaque, dict):
            errs.append(required(cpath.child("opaque")))
            continue
        errs.extend(
            names.validate_driver_name(str(opaque.get("driver") or ""), cpath.child("opaque", "driver"))
        )
        if opaque.get("parameters") is None:
            errs.append(required(cpath.child("opaque", "parameters")))
    ern = spec.get("extendedResourceName")
    if ern is not None:
        errs.extend(names.validate_extended_resource_name(str(ern), path.child("extendedResourceName")))
    return errs
