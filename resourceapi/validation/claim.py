"""ResourceClaim and ResourceClaimTemplate create validation as kube-apiserver 1.37.2 runs it
(pkg/apis/resource/validation/validation.go `ValidateResourceClaim`, `ValidateResourceClaimTemplate`, and
pkg/apis/resource/v1/zz_generated.validations.go), on the decoded JSON object.

What the API server does first is done here first: v1 defaulting (`allocationMode` ExactCount, `count` 1 for
ExactCount, a toleration's `operator` Equal), then `PrepareForCreate`'s drops of fields whose feature gate is
off (`firstAvailable`, tolerations, `adminAccess`, capacity requests and `distinctAttribute`; derived
attributes always: their gate, alpha in 1.37, is off), then the strategy's admin-access check (the namespace
must carry `resource.kubernetes.io/admin-access: "true"`).

Errors come in the API server's order: the handwritten rules (metadata, then each request, constraint and
configuration entry), minus those 1.37 validates declaratively (`MarkCoveredByDeclarative`), then the
declarative rules (list sizes, duplicate request names with the whole request as the value, subrequest class
names, allocation-mode enums, toleration formats, attribute names, opaque drivers).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import partial
from typing import Any

from resourceapi.api.limits import (
    ATTRIBUTE_DOMAIN_MAX_LENGTH,
    CAPACITY_REQUESTS_MAX_SIZE,
    DEVICE_CONFIG_MAX_SIZE,
    DEVICE_CONSTRAINTS_MAX_SIZE,
    DEVICE_REQUESTS_MAX_SIZE,
    DEVICE_SELECTORS_MAX_SIZE,
    FIRST_AVAILABLE_MAX_SIZE,
)
from resourceapi.gates import (
    DRA_ADMIN_ACCESS,
    DRA_CONSUMABLE_CAPACITY,
    DRA_DEVICE_TAINTS,
    DRA_PRIORITIZED_LIST,
    FeatureGates,
)
from resourceapi.machinery.field import (
    FieldError,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from resourceapi.machinery.gojson import NULL, marshal
from resourceapi.machinery.goquantity import go_quantity, quantity_text
from resourceapi.machinery.names import (
    is_dns1123_subdomain,
    is_dns1123_subdomain_content,
    validate_c_identifier,
)
from resourceapi.machinery.objects import items, mapping, text
from resourceapi.releases import Validation, release
from resourceapi.validation.capacity_policy import IS_NEGATIVE_ERROR_MSG
from resourceapi.validation.device import Compiler, config_driver_errors, validate_config, validate_selector
from resourceapi.validation.device_fields import (
    device_name_errors,
    toleration_declarative,
    toleration_errors,
    toleration_errors_1_36,
)
from resourceapi.validation.lists import validate_set, validate_slice
from resourceapi.validation.object_meta import (
    GENERATE_NAME,
    object_meta_errors,
    owner_references_declarative,
    template_meta_errors,
)
from resourceapi.validation.slice_devices import key_errors

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
ADMIN_ACCESS_DETAIL = (
    f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"
)
ALLOCATION_MODES = ("All", "ExactCount")
EXACT_COUNT = "ExactCount"
ONE_OF = "exactly one of `exactly` or `firstAvailable` is required"
NAME_REF = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)
FULLY_QUALIFIED = "a fully qualified name must be a domain and a name separated by a slash"
METADATA = Path("metadata")
SPEC = Path("spec")

RequestNames = dict[str, set[str] | None]


def validate_resource_claim(
    obj: Mapping[str, Any],
    gates: FeatureGates,
    compiler: Compiler | None = None,
    *,
    admin_namespace: bool = False,
) -> list[FieldError]:
    """Every error kube-apiserver 1.37 reports on creating the claim `obj`, in its order. `admin_namespace`:
    the claim's namespace carries the admin-access label."""
    meta = mapping(obj.get("metadata"))
    devices = prepared_devices(mapping(obj.get("spec")), gates)
    errors = admin_access_errors(devices, admin_namespace)
    owners = release(gates.release).validation.declarative_owner_references
    old_texts = not release(gates.release).validation.declarative_texts
    errors.extend(object_meta_errors(meta, declarative_owners=owners, owners_1_36=old_texts))
    handwritten, declarative = claim_spec_errors(devices, SPEC, gates, compiler)
    if owners:
        declarative = owner_references_declarative(meta) + declarative
    found = errors + handwritten + declarative
    return reported_once(found) if not old_texts else found  # 1.36 reports a repeated error each time


def validate_resource_claim_template(
    obj: Mapping[str, Any],
    gates: FeatureGates,
    compiler: Compiler | None = None,
    *,
    admin_namespace: bool = False,
) -> list[FieldError]:
    """Every error kube-apiserver 1.37 reports on creating the template `obj`: its metadata, `spec.metadata`
    (labels and annotations only), and `spec.spec` judged as a claim's spec."""
    meta = mapping(obj.get("metadata"))
    spec = mapping(obj.get("spec"))
    devices = prepared_devices(mapping(spec.get("spec")), gates)
    errors = admin_access_errors(devices, admin_namespace)
    owners = release(gates.release).validation.declarative_owner_references
    old_texts = not release(gates.release).validation.declarative_texts
    errors.extend(object_meta_errors(meta, declarative_owners=owners, owners_1_36=old_texts))
    errors.extend(template_meta_errors(spec.get("metadata"), SPEC.child("metadata")))
    handwritten, declarative = claim_spec_errors(devices, SPEC.child("spec"), gates, compiler)
    if owners:
        declarative = owner_references_declarative(meta) + declarative
    found = errors + handwritten + declarative
    return reported_once(found) if not old_texts else found  # 1.36 reports a repeated error each time


def reported_once(errors: list[FieldError]) -> list[FieldError]:
    """Equal errors (two labels with the same bad value) reported once, the first kept, as the API server
    reports them. The generated name's errors are the server's `metadata.name` ones (object_meta), never
    equal to the prefix's."""
    seen: set[FieldError] = set()
    out: list[FieldError] = []
    for error in errors:
        if error in seen and error.field != GENERATE_NAME:
            continue
        seen.add(error)
        out.append(error)
    return out


# --- what the API server does before validating ----------------------------------------------------------


def prepared_devices(spec: Mapping[str, Any], gates: FeatureGates) -> dict[str, Any]:
    """`spec.devices` defaulted (v1 defaults) and with the fields of disabled gates dropped (a copy)."""
    devices = copy.deepcopy(dict(mapping(spec.get("devices"))))
    requests = devices.get("requests")
    if isinstance(requests, list):
        for request in requests:
            if not isinstance(request, dict):
                continue
            if not gates.enabled(DRA_PRIORITIZED_LIST):
                request.pop("firstAvailable", None)
            exactly = request.get("exactly")
            if isinstance(exactly, dict):
                _default_request(exactly, gates)
                if not gates.enabled(DRA_ADMIN_ACCESS):
                    exactly.pop("adminAccess", None)
            for sub in _dicts(request.get("firstAvailable")):
                _default_request(sub, gates)
    if not gates.enabled(DRA_CONSUMABLE_CAPACITY):
        for constraint in _dicts(devices.get("constraints")):
            constraint.pop("distinctAttribute", None)
    return devices


def _default_request(request: dict[str, Any], gates: FeatureGates) -> None:
    """`SetDefaults_ExactDeviceRequest` / `SetDefaults_DeviceSubRequest` and the toleration operator, then
    the drops of `dropDisabledFields` for this request."""
    mode = request.get("allocationMode") or ""
    if not mode:
        mode = request["allocationMode"] = EXACT_COUNT
    if mode == EXACT_COUNT and not request.get("count"):
        request["count"] = 1
    for toleration in _dicts(request.get("tolerations")):
        if not toleration.get("operator"):
            toleration["operator"] = "Equal"
    if not gates.enabled(DRA_DEVICE_TAINTS):
        request.pop("tolerations", None)
    if not gates.enabled(DRA_CONSUMABLE_CAPACITY):
        request.pop("capacity", None)
    request.pop("derivedAttributes", None)  # DRADerivedAttributes: alpha in 1.37, off


def admin_access_errors(devices: Mapping[str, Any], admin_namespace: bool) -> list[FieldError]:
    """`resourceutils.AuthorizedForAdmin`: the first request asking for admin access, Forbidden unless the
    namespace is labeled for it (its path is the claim's, `spec.devices...`, for templates too)."""
    if admin_namespace:
        return []
    for i, request in enumerate(items(devices.get("requests"))):
        exactly = request.get("exactly") if isinstance(request, dict) else None
        if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            path = SPEC.child("devices", "requests").index(i).child("adminAccess")
            return [forbidden(path, ADMIN_ACCESS_DETAIL)]
    return []


# --- handwritten --------------------------------------------------------------------------------------------


def claim_spec_errors(
    devices: Mapping[str, Any], spec_path: Path, gates: FeatureGates, compiler: Compiler | None = None
) -> tuple[list[FieldError], list[FieldError]]:
    """`validateResourceClaimSpec` (handwritten, covered parts left out) and `Validate_ResourceClaimSpec`
    (declarative) of prepared devices (`prepared_devices`)."""
    path = spec_path.child("devices")
    names = request_names(devices)
    requests = items(devices.get("requests"))
    constraints = items(devices.get("constraints"))
    config = items(devices.get("config"))

    rules = release(gates.release).validation
    # 1.36 enforces no declarative rule (v1.36.3 zz_generated: every one Alpha), so v1.36.3's handwritten
    # validation.go is the whole answer: its sizes, uniqueness and covered formats all reported.
    v1_36 = not rules.declarative_texts

    def check_request(item: Any, p: Path) -> list[FieldError]:
        return _request_errors(mapping(item), p, gates, compiler, v1_36)

    def check_constraint(item: Any, p: Path) -> list[FieldError]:
        return _constraint_errors(mapping(item), p, names, gates, v1_36)

    def check_config(item: Any, p: Path) -> list[FieldError]:
        entry = mapping(item)
        errors = _name_refs(entry.get("requests"), p.child("requests"), names, v1_36)
        return errors + validate_config(entry, p, handwritten_driver=v1_36)

    if v1_36:
        handwritten = validate_set(
            requests, DEVICE_REQUESTS_MAX_SIZE, check_request, _name_of, path.child("requests")
        )
    else:
        handwritten = validate_slice(
            requests, DEVICE_REQUESTS_MAX_SIZE, check_request, path.child("requests"), size_covered=True
        )
    handwritten += validate_slice(
        constraints,
        DEVICE_CONSTRAINTS_MAX_SIZE,
        check_constraint,
        path.child("constraints"),
        size_covered=not v1_36,
    )
    handwritten += validate_slice(
        config, DEVICE_CONFIG_MAX_SIZE, check_config, path.child("config"), size_covered=not v1_36
    )
    if v1_36:
        return handwritten, []
    return handwritten, _declarative(requests, constraints, config, path, rules)


def _name_of(item: Any) -> str:
    return text(mapping(item).get("name"))


def request_names(devices: Mapping[str, Any]) -> RequestNames:
    """`gatherRequestNames`: each request's name, with its subrequests' names when it has any."""
    names: RequestNames = {}
    for request in items(devices.get("requests")):
        request = mapping(request)
        subs = items(request.get("firstAvailable"))
        names[text(request.get("name"))] = {text(mapping(s).get("name")) for s in subs} if subs else None
    return names


def _has_name(names: RequestNames, ref: str) -> bool:
    segments = ref.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    subs = names[segments[0]]
    return subs is not None and segments[1] in subs


def _request_errors(
    request: Mapping[str, Any],
    path: Path,
    gates: FeatureGates,
    compiler: Compiler | None,
    v1_36: bool = False,
) -> list[FieldError]:
    """`validateDeviceRequest` (`v1_36`: v1.36.3's, the subrequests a set judged whole: size, each
    subrequest's class, then their Duplicates)."""
    errors = device_name_errors(text(request.get("name")), path.child("name"))
    first = items(request.get("firstAvailable"))
    exactly = request.get("exactly")
    if first and exactly is not None:
        errors.append(invalid(path, NULL, ONE_OF + ", but multiple fields are set"))
    elif not first and exactly is None:
        errors.append(required(path, ONE_OF))
    elif first:

        def check_sub(item: Any, p: Path) -> list[FieldError]:
            sub = mapping(item)
            errs = device_name_errors(text(sub.get("name")), p.child("name"))
            return errs + _exact_errors(sub, p, gates, compiler, class_covered=not v1_36, v1_36=v1_36)

        if v1_36:
            errors += validate_set(
                first, FIRST_AVAILABLE_MAX_SIZE, check_sub, _name_of, path.child("firstAvailable")
            )
        else:
            errors += validate_slice(
                first, FIRST_AVAILABLE_MAX_SIZE, check_sub, path.child("firstAvailable"), size_covered=True
            )
    else:
        exact_path = path.child("exactly")
        errors += _exact_errors(
            mapping(exactly), exact_path, gates, compiler, class_covered=False, v1_36=v1_36
        )
    return errors


def _exact_errors(
    request: Mapping[str, Any],
    path: Path,
    gates: FeatureGates,
    compiler: Compiler | None,
    *,
    class_covered: bool,
    v1_36: bool = False,
) -> list[FieldError]:
    """`validateExactDeviceRequest` / `validateDeviceSubRequest` after the name: the class (declarative for a
    subrequest), the selectors, the allocation mode and count, the tolerations. `v1_36`: v1.36.3's, with the
    selectors' Too many, the mode's Unsupported and the tolerations' covered rules handwritten."""
    errors: list[FieldError] = []
    if not class_covered:
        class_name = text(request.get("deviceClassName"))
        class_path = path.child("deviceClassName")
        if not class_name:
            errors.append(required(class_path))
        else:
            errors.extend(invalid(class_path, class_name, msg) for msg in is_dns1123_subdomain(class_name))
    errors += validate_slice(
        items(request.get("selectors")),
        DEVICE_SELECTORS_MAX_SIZE,
        lambda item, p: validate_selector(item, p, gates, compiler),
        path.child("selectors"),
        size_covered=not v1_36,
    )
    mode = text(request.get("allocationMode"))
    count = request.get("count") or 0
    count_path = path.child("count")
    if mode == "All" and count != 0:
        errors.append(invalid(count_path, count, "must not be specified when allocationMode is 'All'"))
    elif mode == EXACT_COUNT and count <= 0:
        errors.append(invalid(count_path, count, "must be greater than zero"))
    elif v1_36 and mode not in ALLOCATION_MODES:
        errors.append(not_supported(path.child("allocationMode"), mode, ALLOCATION_MODES))
    check_toleration = toleration_errors_1_36 if v1_36 else toleration_errors
    for i, toleration in enumerate(items(request.get("tolerations"))):
        errors.extend(check_toleration(mapping(toleration), path.child("tolerations").index(i)))
    if release(gates.release).validation.capacity_request_names:
        errors += capacity_name_errors(request.get("capacity"), path.child("capacity"))
    return errors


def capacity_name_errors(capacity: Any, path: Path) -> list[FieldError]:
    """1.38's `validateCapacityNames` of `capacity.requests` (`path`: the `capacity` field): each key a
    qualified name with at most one slash. The count and the values are declarative
    (`capacity_requests_declarative`)."""
    if not isinstance(capacity, dict):
        return []
    return capacity_key_errors(capacity.get("requests"), path.child("requests"))


def capacity_key_errors(entries: Any, path: Path) -> list[FieldError]:
    """`validateCapacityNames` of a capacity map (`path`: the map; also an allocation result's
    `consumedCapacity`): each key a qualified name with at most one slash, its errors on the map's path."""
    return [e for key in sorted(mapping(entries)) for e in key_errors(key, path, one_slash=True)]


def capacity_requests_declarative(requests: Any, path: Path, e_notation: bool = False) -> list[FieldError]:
    """1.38's `Validate_CapacityRequirements` on a requests map (`path`: the map): at most 32 entries (then
    nothing else), each value at least 0 (shown as `go_quantity` prints it, `e_notation` as there). Also
    an allocation result's `consumedCapacity` (the same `MaxProperties` and `MinimumQuantity`)."""
    entries = mapping(requests)
    if len(entries) > CAPACITY_REQUESTS_MAX_SIZE:
        return [too_many(path, len(entries), CAPACITY_REQUESTS_MAX_SIZE)]
    errors: list[FieldError] = []
    for key in sorted(entries):
        quantity = go_quantity(entries[key], e_notation)
        if quantity.q.sign() < 0:
            errors.append(invalid(path.key(key), str(quantity), IS_NEGATIVE_ERROR_MSG))
    return errors


def _constraint_errors(
    constraint: Mapping[str, Any], path: Path, names: RequestNames, gates: FeatureGates, v1_36: bool = False
) -> list[FieldError]:
    """`validateDeviceConstraint`: the request references, then one attribute required (its format is
    declarative; `v1_36`: v1.36.3's handwritten `validateFullyQualifiedName`, its domain a driver name)."""
    errors = _name_refs(constraint.get("requests"), path.child("requests"), names, v1_36)
    for key in ("matchAttribute", "distinctAttribute"):
        value = constraint.get(key)
        if value is None:
            continue
        if v1_36:
            name = text(value)
            errors += key_errors(name, path.child(key))
            if "/" not in name:
                errors.append(invalid(path.child(key), name, FULLY_QUALIFIED))
        return errors
    if gates.enabled(DRA_CONSUMABLE_CAPACITY):
        errors.append(
            required(
                path,
                'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are '
                "set",
            )
        )
    else:
        errors.append(required(path.child("matchAttribute")))
    return errors


def _name_refs(refs: Any, path: Path, names: RequestNames, v1_36: bool = False) -> list[FieldError]:
    """A constraint's or configuration entry's `requests` (size and uniqueness are declarative; `v1_36`:
    v1.36.3's handwritten `validateSet`, Too many or the references then their Duplicates)."""
    entries = items(refs)
    if v1_36:
        return validate_set(
            entries,
            DEVICE_REQUESTS_MAX_SIZE,
            lambda r, p: request_name_ref_errors(text(r), p, names),
            text,
            path,
        )
    if len(entries) > DEVICE_REQUESTS_MAX_SIZE:
        return []
    errors: list[FieldError] = []
    for i, ref in enumerate(entries):
        errors.extend(request_name_ref_errors(text(ref), path.index(i), names))
    return errors


def request_name_ref_errors(ref: str, path: Path, names: RequestNames) -> list[FieldError]:
    """`validateRequestNameRef` (constraints and config here, allocation results and device statuses in
    claim_status.py)."""
    segments = ref.split("/")
    if len(segments) > 2:
        return [invalid(path, ref, NAME_REF)]
    errors: list[FieldError] = []
    for segment in segments:
        errors.extend(device_name_errors(segment, path))
    if not _has_name(names, ref):
        errors.append(invalid(path, ref, NAME_REF))
    return errors


# --- declarative ------------------------------------------------------------------------------------------


def _declarative(
    requests: list[Any], constraints: list[Any], config: list[Any], path: Path, rules: Validation
) -> list[FieldError]:
    """`Validate_DeviceClaim` (zz_generated, 1.37): reported after every handwritten error."""

    def check_constraint(item: Any, p: Path) -> list[FieldError]:
        constraint = mapping(item)
        errors = _refs_declarative(constraint.get("requests"), p.child("requests"))
        for key in ("matchAttribute", "distinctAttribute"):
            value = constraint.get(key)
            if isinstance(value, str):
                errors += fully_qualified_name_declarative(value, p.child(key), rules.one_slash)
        return errors

    def check_config(item: Any, p: Path) -> list[FieldError]:
        entry = mapping(item)
        errors = _refs_declarative(entry.get("requests"), p.child("requests"))
        return errors + (config_driver_errors(entry, p) if rules.declarative_texts else [])

    errors = validate_set(
        requests,
        DEVICE_REQUESTS_MAX_SIZE,
        lambda item, p: _request_declarative(mapping(item), p, rules),
        lambda r: text(mapping(r).get("name")),
        path.child("requests"),
        shown=partial(_request_json, e_notation=rules.quantity_e_notation)
        if rules.declarative_texts
        else None,  # 1.36's handwritten set shows the name
        unique_first=True,
    )
    errors += validate_slice(
        constraints, DEVICE_CONSTRAINTS_MAX_SIZE, check_constraint, path.child("constraints")
    )
    return errors + validate_slice(config, DEVICE_CONFIG_MAX_SIZE, check_config, path.child("config"))


def _request_declarative(request: Mapping[str, Any], path: Path, rules: Validation) -> list[FieldError]:
    """`Validate_DeviceRequest`: `exactly`, then `firstAvailable` (size, unique names, each subrequest)."""
    capacity, e_notation = rules.capacity_request_names, rules.quantity_e_notation
    errors: list[FieldError] = []
    exactly = request.get("exactly")
    if isinstance(exactly, dict):
        errors += _exact_declarative(
            exactly, path.child("exactly"), subrequest=False, capacity=capacity, e_notation=e_notation
        )
    return errors + validate_set(
        items(request.get("firstAvailable")),
        FIRST_AVAILABLE_MAX_SIZE,
        lambda item, p: _exact_declarative(
            mapping(item), p, subrequest=True, capacity=capacity, e_notation=e_notation
        ),
        lambda s: text(mapping(s).get("name")),
        path.child("firstAvailable"),
        shown=partial(_sub_json, e_notation=rules.quantity_e_notation) if rules.declarative_texts else None,
        unique_first=True,
    )


def _exact_declarative(
    request: Mapping[str, Any], path: Path, *, subrequest: bool, capacity: bool, e_notation: bool = False
) -> list[FieldError]:
    """`Validate_ExactDeviceRequest` / `Validate_DeviceSubRequest`: a subrequest's class (Required, then
    `validate.LongName`), the selectors' count, the allocation mode's enum, each toleration, and with
    `capacity` (1.38) the capacity requests."""
    errors: list[FieldError] = []
    if subrequest:
        class_name = text(request.get("deviceClassName"))
        class_path = path.child("deviceClassName")
        if not class_name:
            errors.append(required(class_path))
        else:
            errors.extend(
                invalid(class_path, class_name, msg) for msg in is_dns1123_subdomain_content(class_name)
            )
    errors += validate_slice(
        items(request.get("selectors")), DEVICE_SELECTORS_MAX_SIZE, None, path.child("selectors")
    )
    mode = text(request.get("allocationMode"))
    if mode and mode not in ALLOCATION_MODES:
        errors.append(not_supported(path.child("allocationMode"), mode, ALLOCATION_MODES))
    for i, toleration in enumerate(items(request.get("tolerations"))):
        errors += toleration_declarative(mapping(toleration), path.child("tolerations").index(i))
    requested = request.get("capacity")
    if capacity and isinstance(requested, dict) and requested.get("requests") is not None:
        errors += capacity_requests_declarative(
            requested["requests"], path.child("capacity", "requests"), e_notation
        )
    return errors


def _refs_declarative(refs: Any, path: Path) -> list[FieldError]:
    """A `requests` list of names: at most 32, no repeats (`Duplicate value` with the name)."""
    return validate_set(items(refs), DEVICE_REQUESTS_MAX_SIZE, None, text, path)


def fully_qualified_name_declarative(name: str, path: Path, one_slash: bool = False) -> list[FieldError]:
    """`validate.ResourceFullyQualifiedName` (format `k8s-resource-fully-qualified-name`): a C identifier, or
    a domain (at most 63 bytes, a DNS subdomain: `prefix: ` before the message) and a C identifier; a slash
    required."""
    errors: list[FieldError] = []
    parts = name.split("/")
    if len(parts) == 1:
        errors += validate_c_identifier(parts[0], path)
    elif len(parts) == 2:
        domain, identifier = parts
        if not domain:
            errors.append(invalid(path, "", "prefix must not be empty"))
        else:
            if len(domain.encode("utf-8")) > ATTRIBUTE_DOMAIN_MAX_LENGTH:
                errors.append(too_long(path, ATTRIBUTE_DOMAIN_MAX_LENGTH))
            errors.extend(
                invalid(path, domain, "prefix: " + msg) for msg in is_dns1123_subdomain_content(domain)
            )
        if not identifier:
            errors.append(invalid(path, "", "name must not be empty"))
        else:
            errors += validate_c_identifier(identifier, path)
    elif one_slash:  # 1.38 (`Validation.one_slash`); before, upstream's TODO left it unjudged
        errors.append(invalid(path, name, "must not contain more than one slash"))
    if "/" not in name:
        errors.append(invalid(path, name, FULLY_QUALIFIED))
    return errors


# --- a request as json.Marshal renders the v1 struct (a Duplicate's value) ---------------------------------


def _request_json(item: Any, e_notation: bool = False) -> Any:
    request = mapping(item)
    out: dict[str, Any] = {"name": text(request.get("name"))}
    exactly = request.get("exactly")
    if isinstance(exactly, dict):
        out["exactly"] = _exact_json(exactly, sub=False, e_notation=e_notation)
    first = items(request.get("firstAvailable"))
    if first:
        out["firstAvailable"] = [_exact_json(mapping(s), sub=True, e_notation=e_notation) for s in first]
    return marshal(out)


def _sub_json(item: Any, e_notation: bool = False) -> Any:
    return marshal(_exact_json(mapping(item), sub=True, e_notation=e_notation))


def _exact_json(request: Mapping[str, Any], *, sub: bool, e_notation: bool = False) -> dict[str, Any]:
    """`ExactDeviceRequest` / `DeviceSubRequest` in Go field order, with `omitempty` honored; quantities as
    `quantity_text` prints them (`e_notation`: 1.38's, resourceapi/releases.py)."""
    out: dict[str, Any] = {}
    if sub:
        out["name"] = text(request.get("name"))
    out["deviceClassName"] = text(request.get("deviceClassName"))
    selectors = items(request.get("selectors"))
    if selectors:
        out["selectors"] = [_selector_json(mapping(s)) for s in selectors]
    if request.get("allocationMode"):
        out["allocationMode"] = request["allocationMode"]
    if request.get("count"):
        out["count"] = request["count"]
    if not sub and isinstance(request.get("adminAccess"), bool):
        out["adminAccess"] = request["adminAccess"]
    tolerations = items(request.get("tolerations"))
    if tolerations:
        out["tolerations"] = [_toleration_json(mapping(t)) for t in tolerations]
    capacity = request.get("capacity")
    if isinstance(capacity, dict):
        requests = mapping(capacity.get("requests"))
        out["capacity"] = (
            {"requests": {k: quantity_text(requests[k], e_notation) for k in sorted(requests)}}
            if requests
            else {}
        )
    return out


def _selector_json(selector: Mapping[str, Any]) -> dict[str, Any]:
    cel = selector.get("cel")
    if isinstance(cel, dict):
        return {"cel": {"expression": text(cel.get("expression"))}}
    return {}


def _toleration_json(toleration: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("key", "operator", "value", "effect"):
        if toleration.get(key):
            out[key] = toleration[key]
    if toleration.get("tolerationSeconds") is not None:
        out["tolerationSeconds"] = toleration["tolerationSeconds"]
    return out


# --- decoded-JSON helpers ----------------------------------------------------------------------------------


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in items(value) if isinstance(v, dict)]


__all__ = [
    "claim_spec_errors",
    "prepared_devices",
    "validate_resource_claim",
    "validate_resource_claim_template",
]
