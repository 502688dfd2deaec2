"""Per-type REST strategies: decode-time defaults, PrepareForCreate/PrepareForUpdate, status-subresource
rules and the native validation the double performs.

Upstream homes: `staging/src/k8s.io/apiserver/pkg/registry/rest/create.go` and `update.go` (system metadata),
`pkg/registry/core/pod/strategy.go`, `pkg/registry/core/namespace/strategy.go`,
`pkg/registry/core/node/strategy.go`, `pkg/registry/resource/resourceclaim/strategy.go`,
`pkg/apis/core/v1/defaults.go`, `pkg/apis/admissionregistration/v1/defaults.go` and
`staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go`.
"""

from __future__ import annotations

import base64
import datetime
import re
from typing import Any

from resourceapi.machinery import names
from resourceapi.machinery.field import FieldError, Path, forbidden, invalid, required, too_long

from .codec import clone
from .resources import ResourceType
from .store import Obj

LABEL_VALUE_MAX = 63
LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
TOTAL_ANNOTATION_SIZE = 256 * 1024


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(obj: Obj) -> dict[str, Any]:
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = {}
        obj["metadata"] = m
    return m


# ---------------------------------------------------------------- defaults (applied when a body is decoded)


def _default_container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = str(c.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in c:
        c["imagePullPolicy"] = (
            "Always" if (":" not in tag or tag.endswith(":latest")) and "@" not in tag else "IfNotPresent"
        )
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def _default_pod(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _default_container(c)
    if spec.get("serviceAccountName") is None and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]


def _default_webhooks(obj: Obj, mutating: bool) -> None:
    for wh in obj.get("webhooks") or []:
        if not isinstance(wh, dict):
            continue
        wh.setdefault("failurePolicy", "Fail")
        wh.setdefault("matchPolicy", "Equivalent")
        wh.setdefault("namespaceSelector", {})
        wh.setdefault("objectSelector", {})
        wh.setdefault("timeoutSeconds", 10)
        if mutating:
            wh.setdefault("reinvocationPolicy", "Never")
        for rule in wh.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        svc = (wh.get("clientConfig") or {}).get("service")
        if isinstance(svc, dict):
            svc.setdefault("port", 443)


def _default_secret(obj: Obj) -> None:
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict):
        data = obj.setdefault("data", {})
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()


def apply_defaults(rt: ResourceType, obj: Obj) -> None:
    """The defaulting of the decoded body (`pkg/apis/*/v1/defaults.go`), before admission sees it."""
    if rt.key == "pods":
        _default_pod(obj)
    elif rt.key == "secrets":
        _default_secret(obj)
    elif rt.kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        _default_webhooks(obj, rt.kind.startswith("Mutating"))
    elif rt.key == "namespaces":
        name = meta(obj).get("name")
        if name:
            meta(obj).setdefault("labels", {})["kubernetes.io/metadata.name"] = name


# ---------------------------------------------------------------- prepare (strategy hooks)


def _qos_class(spec: dict[str, Any]) -> str:
    """`pkg/apis/core/helper/qos/qos.go` GetPodQOS, for cpu and memory."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    guaranteed = True
    containers = [
        c for c in (spec.get("containers") or []) + (spec.get("initContainers") or []) if isinstance(c, dict)
    ]
    for c in containers:
        res = c.get("resources") or {}
        req = {k: v for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
        requests.update(req)
        limits.update(lim)
        if set(lim) != {"cpu", "memory"} or any(req.get(k, lim[k]) != lim[k] for k in lim):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def prepare_for_create(rt: ResourceType, obj: Obj) -> None:
    if rt.key == "pods":
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj.get("spec") or {})}
        if (obj.get("spec") or {}).get("schedulingGates"):
            # applySchedulingGatedCondition (pkg/registry/core/pod/strategy.go)
            obj["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": now_rfc3339(),
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }
            ]
    elif rt.key == "resourceclaims.resource.k8s.io":
        obj.pop("status", None)
    elif rt.key == "namespaces":
        obj["status"] = {"phase": "Active"}
        obj["spec"] = {"finalizers": ["kubernetes"]}
    if rt.generation_fields:
        meta(obj)["generation"] = 1


def _copy_field(dst: Obj, src: Obj, key: str) -> None:
    if key in src:
        dst[key] = clone(src[key])
    else:
        dst.pop(key, None)


def prepare_for_update(rt: ResourceType, new: Obj, old: Obj) -> None:
    """The main endpoint: status is the status subresource's to change."""
    if rt.has_status:
        _copy_field(new, old, "status")
    if rt.key == "namespaces":
        _copy_field(new, old, "spec")
    bump_generation(rt, new, old)


def prepare_for_status_update(rt: ResourceType, new: Obj, old: Obj) -> None:
    """The status endpoint: only status changes (plus, for pods, labels and annotations)."""
    keep = {k: v for k, v in new.items() if k == "status"}
    new_meta = clone(meta(new))
    for k in list(new):
        if k != "status":
            del new[k]
    for k, v in old.items():
        if k != "status":
            new[k] = clone(v)
    new.update(keep)
    if rt.key == "pods":
        # podStatusStrategy: labels and annotations may change through pods/status; owner refs may not.
        for field in ("labels", "annotations"):
            if field in new_meta:
                meta(new)[field] = new_meta[field]
            else:
                meta(new).pop(field, None)
        status = new.setdefault("status", {})
        if isinstance(status, dict) and not status.get("qosClass"):
            old_qos = (old.get("status") or {}).get("qosClass")
            if old_qos:
                status["qosClass"] = old_qos
        # A removal of extendedResourceClaimStatus is accepted and not applied (kube-apiserver v1.37.2 keeps
        # the old value: tests/e2e/test_sandbox_realcluster.py); a new value replaces it.
        old_ext = (old.get("status") or {}).get("extendedResourceClaimStatus")
        if (
            isinstance(status, dict)
            and old_ext is not None
            and status.get("extendedResourceClaimStatus") is None
        ):
            status["extendedResourceClaimStatus"] = old_ext
    meta(new)["resourceVersion"] = new_meta.get("resourceVersion", meta(old).get("resourceVersion"))


def bump_generation(rt: ResourceType, new: Obj, old: Obj) -> None:
    if not rt.generation_fields:
        return
    gen = int(meta(old).get("generation") or 0)
    if any(new.get(f) != old.get(f) for f in rt.generation_fields):
        gen += 1
    meta(new)["generation"] = gen


# ---------------------------------------------------------------- validation


def _name_errors(rt: ResourceType, name: str, path: Path) -> list[FieldError]:
    if rt.key == "namespaces":
        return [invalid(path, name, m) for m in names.is_dns1123_label(name)]
    if rt.key in ("events", "events.events.k8s.io"):
        return []
    return [invalid(path, name, m) for m in names.is_dns1123_subdomain(name)]


def validate_object_meta(rt: ResourceType, obj: Obj) -> list[FieldError]:
    """`ValidateObjectMeta`: name, namespace, labels, annotations, finalizers."""
    m = meta(obj)
    path = Path("metadata")
    errs: list[FieldError] = []
    name = str(m.get("name") or "")
    if not name:
        if m.get("generateName"):
            errs.extend(_name_errors(rt, str(m["generateName"]), path.child("generateName")))
        errs.append(required(path.child("name"), "name or generateName is required"))
    else:
        errs.extend(_name_errors(rt, name, path.child("name")))
    if rt.namespaced and not m.get("namespace"):
        errs.append(required(path.child("namespace")))
    labels = m.get("labels") or {}
    if isinstance(labels, dict):
        for k, v in labels.items():
            errs.extend(invalid(path.child("labels"), str(k), msg) for msg in names.is_qualified_name(str(k)))
            value = str(v)
            if len(value) > LABEL_VALUE_MAX:
                errs.append(invalid(path.child("labels"), value, names.max_len_error(LABEL_VALUE_MAX)))
            elif value and not _LABEL_VALUE_RE.fullmatch(value):
                errs.append(
                    invalid(
                        path.child("labels"),
                        value,
                        names.regex_error(
                            "a valid label must be an empty string or consist of alphanumeric characters, "
                            "'-', '_' or '.', and must start and end with an alphanumeric character",
                            LABEL_VALUE_FMT,
                            "MyValue",
                            "my_value",
                            "12345",
                        ),
                    )
                )
    annotations = m.get("annotations") or {}
    if isinstance(annotations, dict):
        total = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
        if total > TOTAL_ANNOTATION_SIZE:
            errs.append(too_long(path.child("annotations"), TOTAL_ANNOTATION_SIZE))
    return errs


def validate_object_meta_update(rt: ResourceType, new: Obj, old: Obj) -> list[FieldError]:
    """`ValidateObjectMetaUpdate`: immutable uid/name/namespace/creationTimestamp; no new finalizers while
    the object is being deleted."""
    errs: list[FieldError] = []
    nm, om = meta(new), meta(old)
    path = Path("metadata")
    for field in ("uid", "creationTimestamp"):
        if nm.get(field) != om.get(field):
            errs.append(invalid(path.child(field), nm.get(field), "field is immutable"))
    if om.get("deletionTimestamp"):
        added = [f for f in nm.get("finalizers") or [] if f not in (om.get("finalizers") or [])]
        if added:
            go = "[]string{" + ", ".join(f'"{f}"' for f in added) + "}"
            errs.append(
                forbidden(
                    path.child("finalizers"),
                    "no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {go}",
                )
            )
    return errs


def validate_create(rt: ResourceType, obj: Obj) -> list[FieldError]:
    errs = validate_object_meta(rt, obj)
    from . import validation

    errs.extend(validation.validate_type(rt, obj, None))
    return errs


def validate_update(rt: ResourceType, new: Obj, old: Obj, subresource: str) -> list[FieldError]:
    errs = validate_object_meta(rt, new)
    errs.extend(validate_object_meta_update(rt, new, old))
    from . import validation

    if subresource == "status":
        errs.extend(validation.validate_status_update(rt, new, old))
    elif subresource == "":
        errs.extend(validation.validate_type(rt, new, old))
    return errs
