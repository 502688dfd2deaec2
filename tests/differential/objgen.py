"""Hypothesis strategies over the resource.k8s.io/v1 schema, biased to the rules' boundaries: DeviceClasses,
ResourceClaims, ResourceClaimTemplates and ResourceSlices (names around 63 and 253, lists at their maximum
and one over, 10 KiB CEL and parameters, odd qualified names, quantities of every form, unknown fields,
wrong JSON types now and then: `wrong_typed`).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from differential.celgen import selector_expression

API = "resource.k8s.io/v1"
NAMESPACE = "differential"
CEL_MAX = 10240
PARAMS_MAX = 10240


_LABELS = st.sampled_from(["a", "b1", "gpu", "x-y", "0", "dra", "k8s", "n1-2"])


def _label(n: int, ch: str = "a") -> str:
    return ch * n


@st.composite
def dns_subdomain(draw: st.DrawFn, valid_bias: int = 4) -> str:
    """A DNS-1123 subdomain, mostly valid, with lengths around 63 and 253 and odd characters."""
    kind = draw(st.integers(0, valid_bias + 6))
    if kind <= valid_bias:
        parts = draw(st.lists(_LABELS, min_size=1, max_size=3))
        return ".".join(parts)
    n = draw(st.sampled_from([62, 63, 64, 252, 253, 254]))
    if kind == valid_bias + 1:
        return _label(n)
    if kind == valid_bias + 2:  # dotted, to the exact length
        text = ".".join(_label(63) for _ in range(4))[:n]
        return text.rstrip(".") + "a" * (n - len(text.rstrip(".")))
    return draw(
        st.sampled_from(["A", "a_b", "-a", "a-", "a..b", ".a", "a.", "ä", "a b", "", "a/b", "1.2.3.4"])
    )


@st.composite
def qualified_name(draw: st.DrawFn) -> str:
    """Label/annotation keys: `prefix/name` forms, with odd characters and boundary lengths."""
    return draw(
        st.one_of(
            st.sampled_from(
                ["a", "a.b/c", "example.com/x_y-z.1", "A", "x/", "/x", "a/b/c", "_a", "a_", "a b", "ä"]
            ),
            st.sampled_from(
                [_label(63), _label(64), "example.com/" + _label(63), "example.com/" + _label(64)]
            ),
            st.sampled_from([_label(253) + "/a", _label(254) + "/a", "Example.com/a", "kubernetes.io/a"]),
            st.tuples(_LABELS, st.sampled_from(["a", "B", "x_y", "a.b", "z-9", "Q"])).map(
                lambda t: f"{t[0]}.io/{t[1]}"
            ),
        )
    )


@st.composite
def label_value(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(["", "a", "A-b_c.d", "-a", "a b", _label(63), _label(64), "ä"]))


@st.composite
def metadata(draw: st.DrawFn, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    choice = draw(st.integers(0, 19))
    if choice == 0:
        meta["generateName"] = draw(dns_subdomain())
    elif choice != 1:
        meta["name"] = draw(dns_subdomain())
    if namespace is not None:
        meta["namespace"] = namespace
    if draw(st.integers(0, 5)) == 0:
        meta["labels"] = draw(st.dictionaries(qualified_name(), label_value(), max_size=3))
    if draw(st.integers(0, 7)) == 0:
        meta["annotations"] = draw(
            st.dictionaries(qualified_name(), st.sampled_from(["", "x", "{}"]), max_size=3)
        )
    return meta


def _sized_expression(size: int) -> str:
    """A valid expression of exactly `size` UTF-8 bytes."""
    head = 'device.driver == "'
    return head + "a" * (size - len(head) - 1) + '"'


@st.composite
def cel_selector(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.integers(0, 30))
    if kind == 0:
        return {"cel": {"expression": _sized_expression(draw(st.sampled_from([CEL_MAX, CEL_MAX + 1])))}}
    if kind == 1:
        return draw(st.sampled_from([{}, {"cel": {}}, {"cel": {"expression": ""}}]))
    if kind == 2:  # multi-byte characters at the boundary
        n = draw(st.sampled_from([CEL_MAX // 2 - 10, CEL_MAX // 2 - 9]))
        return {"cel": {"expression": f'device.driver != "{"é" * n}"'}}
    return {"cel": {"expression": draw(selector_expression())}}


@st.composite
def selectors(draw: st.DrawFn) -> list[dict[str, Any]]:
    if draw(st.integers(0, 40)) == 0:
        n = draw(st.sampled_from([32, 33]))
        return [{"cel": {"expression": "true"}}] * n
    return draw(st.lists(cel_selector(), max_size=3))


@st.composite
def driver_name(draw: st.DrawFn) -> str:
    return draw(
        st.one_of(
            st.sampled_from(["gpu.example.com", "dra.net", "foo", "Gpu.Example.com", "", "-bad", "a_b.com"]),
            st.sampled_from([_label(63), _label(64), "a." + _label(61), "a." + _label(62), "x..y"]),
        )
    )


@st.composite
def parameters(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 12))
    if kind == 0:
        size = draw(st.sampled_from([PARAMS_MAX, PARAMS_MAX + 1]))
        return {"a": "x" * (size - len('{"a":""}'))}
    if kind == 1:
        return draw(st.sampled_from([None, [], [1], "s", 1, True]))
    return draw(
        st.dictionaries(
            st.sampled_from(["kind", "apiVersion", "a", "b", "é"]),
            st.one_of(st.integers(-5, 5), st.text(max_size=5), st.booleans(), st.none()),
            max_size=3,
        )
    )


@st.composite
def opaque_config(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.integers(0, 15))
    if kind == 0:
        return draw(st.sampled_from([{}, {"opaque": {}}, {"opaque": {"driver": "foo"}}]))
    out: dict[str, Any] = {"driver": draw(driver_name())}
    params = draw(parameters())
    if params is not None or draw(st.booleans()):
        out["parameters"] = params
    return {"opaque": out}


@st.composite
def class_config(draw: st.DrawFn) -> list[dict[str, Any]]:
    if draw(st.integers(0, 40)) == 0:
        return [{"opaque": {"driver": "foo", "parameters": {}}}] * draw(st.sampled_from([32, 33]))
    return draw(st.lists(opaque_config(), max_size=2))


EXTENDED_NAMES = (
    "example.com/gpu",
    "gpu",
    "nvidia.com/gpu.shared",
    "kubernetes.io/gpu",
    "example.kubernetes.io/gpu",
    "requests.example.com/gpu",
    "deviceclass.resource.kubernetes.io/gpu",
    "example.com/",
    "/gpu",
    "Example.com/GPU",
    "example.com/gpu_1",
    "example.com/" + "a" * 63,
    "example.com/" + "a" * 64,
    "a" * 253 + "/x",
    "a" * 254 + "/x",
    "example.com/a/b",
    "cpu",
    "hugepages-1Gi",
    "attachable-volumes-x",
    "example.com/-x",
)


UNKNOWN_SPOTS = ("spec", "metadata", "top", "selector")


def _add_unknown(obj: dict[str, Any], where: str) -> None:
    if where == "top":
        obj["extra"] = 1
    elif where == "metadata":
        obj.setdefault("metadata", {})["colour"] = "red"
    elif where == "spec":
        obj.setdefault("spec", {})["selector"] = []
    else:
        sels = obj.setdefault("spec", {}).setdefault("selectors", [])
        sels.append({"cel": {"expression": "true", "expresion": "x"}})


@st.composite
def device_class(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 2)):
        spec["selectors"] = draw(selectors())
    if draw(st.integers(0, 3)) == 0:
        spec["config"] = draw(class_config())
    if draw(st.integers(0, 2)) == 0:
        spec["extendedResourceName"] = draw(st.sampled_from(EXTENDED_NAMES))
    obj: dict[str, Any] = {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": draw(metadata()),
        "spec": spec,
    }
    odd = draw(st.integers(0, 40))
    if odd == 0:
        _add_unknown(obj, draw(st.sampled_from(UNKNOWN_SPOTS)))
    elif odd == 1:  # a wrong JSON type
        path = draw(st.sampled_from(["selectors", "config", "extendedResourceName", "cel"]))
        if path == "cel":
            spec["selectors"] = [{"cel": {"expression": 1}}]
        else:
            spec[path] = draw(st.sampled_from([1, "x", {"a": 1}, True]))
    return obj


# --- quantities ---------------------------------------------------------------------------------------------

SUFFIXES = (
    "",
    "n",
    "u",
    "m",
    "k",
    "M",
    "G",
    "T",
    "P",
    "E",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
    "e3",
    "E-3",
    "e400",
)


@st.composite
def quantity(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(
            st.sampled_from(["", "abc", "1.0.0", "1 Gi", "Gi", "0x10", "1e", "--1", "1.", ".5", "+1"])
        )
    if kind == 1:
        return draw(st.sampled_from([1, 0, -1, 1.5, 10**20]))
    if kind == 2:
        return draw(
            st.sampled_from(["9223372036854775807", "1e18", "1e19", "999999999999999999999Ei", "1e-400"])
        )
    number = draw(st.sampled_from(["0", "1", "2", "1.5", "0.001", "100", "-1", "-0", "3.25", "1000000"]))
    return number + draw(st.sampled_from(SUFFIXES))


# --- claims -------------------------------------------------------------------------------------------------


@st.composite
def request_name(draw: st.DrawFn) -> str:
    return draw(
        st.sampled_from(["gpu", "nic", "a", "req-1", "Req", "a_b", "", _label(63), _label(64), "a.b"])
    )


@st.composite
def class_name(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(["gpu.example.com", "gpu", "", "Bad_Class", _label(253), _label(254)]))


@st.composite
def toleration(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["key"] = draw(st.sampled_from(["example.com/taint", "a", "bad key", "", _label(64)]))
    if draw(st.booleans()):
        out["operator"] = draw(st.sampled_from(["Exists", "Equal", "In", ""]))
    if draw(st.booleans()):
        out["value"] = draw(label_value())
    if draw(st.booleans()):
        out["effect"] = draw(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule", "None", ""]))
    if draw(st.integers(0, 4)) == 0:
        out["tolerationSeconds"] = draw(st.sampled_from([0, 10, -1]))
    return out


@st.composite
def exact_request(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"deviceClassName": draw(class_name())}
    if draw(st.integers(0, 20)) == 0:
        return draw(st.sampled_from([{}, {"deviceClassName": None, "count": None, "allocationMode": ""}]))
    if draw(st.integers(0, 3)) == 0:
        out["selectors"] = draw(st.lists(cel_selector(), max_size=2))
    elif draw(st.integers(0, 40)) == 0:
        out["selectors"] = [{"cel": {"expression": "true"}}] * draw(st.sampled_from([32, 33]))
    mode = draw(st.sampled_from([None, None, "ExactCount", "All", "Some"]))
    if mode is not None:
        out["allocationMode"] = mode
    if draw(st.integers(0, 2)) == 0:
        out["count"] = draw(st.sampled_from([1, 2, 0, -1, 33, 10**6]))
    if draw(st.integers(0, 5)) == 0:
        out["adminAccess"] = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0:
        out["tolerations"] = draw(st.lists(toleration(), max_size=2))
    if draw(st.integers(0, 2)) == 0:
        out["capacity"] = {"requests": draw(st.dictionaries(capacity_name(), quantity(), max_size=2))}
    if draw(st.integers(0, 20)) == 0:  # DRADerivedAttributes is off: dropped before validation
        out["derivedAttributes"] = [{"name": "Bad Name", "expression": ""}]
    return out


@st.composite
def capacity_name(draw: st.DrawFn) -> str:
    return draw(
        st.sampled_from(
            [
                "shares",
                "memory",
                "gpu.example.com/memory",
                "Bad-Name",
                "a" * 32,
                "a" * 33,
                "x/" + "a" * 32,
                "é",
                "/x",
            ]
        )
    )


@st.composite
def device_request(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draw(request_name())}
    kind = draw(st.integers(0, 9))
    if kind <= 5:
        out["exactly"] = draw(exact_request())
    elif kind <= 8:
        subs = draw(st.lists(exact_request(), max_size=3)) if draw(st.integers(0, 20)) else [{}] * 9
        for i, sub in enumerate(subs):
            sub["name"] = draw(st.sampled_from([f"s{i}", "s0", "Bad", ""]))
        out["firstAvailable"] = subs
        if subs and draw(st.integers(0, 9)) == 0:
            out["firstAvailable"] = [*subs, dict(subs[0])]  # a repeated subrequest name
    elif draw(st.booleans()):
        out["exactly"] = draw(exact_request())
        out["firstAvailable"] = [dict(draw(exact_request()), name="s")]
    else:  # neither: an empty firstAvailable is none
        out.update(
            draw(st.sampled_from([{}, {"firstAvailable": []}, {"exactly": None, "firstAvailable": []}]))
        )
    return out


_ATTRIBUTES = [
    "dra.example.com/model",
    "model",
    "Bad Attr",
    "a/" + "b" * 33,
    "",
    "/x",
    "x/",
    "Example.com/x",
    "a" * 64 + "/x",
    "a/b/c",
    "a_b.com/x",
]


@st.composite
def request_refs(draw: st.DrawFn, names: list[str]) -> list[str]:
    """A constraint's or configuration entry's `requests`: existing names, subrequests, repeats, bad
    references, and lists at the size limit."""
    if draw(st.integers(0, 30)) == 0:
        return [names[0]] * draw(st.sampled_from([32, 33]))
    refs = st.sampled_from([*names, "nope", "gpu/s0", "gpu/s1", "a/b/c", "", "Bad", "gpu/"])
    return draw(st.lists(refs, max_size=3))


@st.composite
def constraint(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["requests"] = draw(request_refs(names))
    which = draw(st.sampled_from(["matchAttribute", "distinctAttribute", "both", "none"]))
    attr = draw(st.sampled_from(_ATTRIBUTES))
    if which in ("matchAttribute", "both"):
        out["matchAttribute"] = attr
    if which in ("distinctAttribute", "both"):
        out["distinctAttribute"] = draw(st.sampled_from(_ATTRIBUTES))
    return out


@st.composite
def claim_config(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    kind = draw(st.integers(0, 12))
    if kind == 0:
        entry: dict[str, Any] = {}
    elif kind == 1:
        entry = {"opaque": {"driver": draw(driver_name())}}
    else:
        entry = {"opaque": {"driver": draw(driver_name()), "parameters": draw(parameters())}}
    if draw(st.booleans()):
        entry["requests"] = draw(request_refs(names))
    return entry


@st.composite
def claim_spec(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 40)) == 0:
        requests = [
            {"name": f"r{i}", "exactly": {"deviceClassName": "c"}}
            for i in range(draw(st.sampled_from([32, 33])))
        ]
    else:
        requests = draw(st.lists(device_request(), max_size=3))
    devices: dict[str, Any] = {"requests": requests}
    names = [r["name"] for r in requests] or ["gpu"]
    if draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 30)) == 0:
            devices["constraints"] = [{"matchAttribute": "a.b/c"}] * draw(st.sampled_from([32, 33]))
        else:
            devices["constraints"] = draw(st.lists(constraint(names), min_size=1, max_size=2))
    if draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 30)) == 0:
            entry = {"opaque": {"driver": "a.b", "parameters": {}}}
            devices["config"] = [entry] * draw(st.sampled_from([32, 33]))
        else:
            devices["config"] = draw(st.lists(claim_config(names), min_size=1, max_size=2))
    if draw(st.integers(0, 40)) == 0:
        devices["extra"] = 1
    return {"devices": devices}


@st.composite
def owner_reference(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, values in (
        ("apiVersion", ["v1", "apps/v1", "", "a/b/c", "apps/", "/"]),
        ("kind", ["Pod", "Event", ""]),
        ("name", ["p", ""]),
        ("uid", ["0b6c5f4e-2f8a-4c51-9a7e-3c2d1b0a9f8e", ""]),
    ):
        if draw(st.integers(0, 5)):
            out[key] = draw(st.sampled_from(values))
    if draw(st.booleans()):
        out["controller"] = draw(st.booleans())
    return out


@st.composite
def claim_metadata(draw: st.DrawFn) -> dict[str, Any]:
    """A claim's or template's metadata: the shared draw, sometimes with owners and finalizers."""
    meta = draw(metadata(NAMESPACE))
    if draw(st.integers(0, 9)) == 0:
        meta["ownerReferences"] = draw(st.lists(owner_reference(), min_size=1, max_size=3))
    if draw(st.integers(0, 9)) == 0:
        names = st.sampled_from(
            ["example.com/f", "kubernetes", "orphan", "foregroundDeletion", "custom", "", "a/b/c"]
        )
        meta["finalizers"] = draw(st.lists(names, min_size=1, max_size=3))
    return meta


@st.composite
def resource_claim(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": draw(claim_metadata()),
        "spec": draw(claim_spec()),
    }


@st.composite
def resource_claim_template(draw: st.DrawFn) -> dict[str, Any]:
    inner: dict[str, Any] = {"spec": draw(claim_spec())}
    if draw(st.integers(0, 3)) == 0:
        inner["metadata"] = {"labels": draw(st.dictionaries(qualified_name(), label_value(), max_size=2))}
        if draw(st.integers(0, 2)) == 0:
            inner["metadata"]["annotations"] = draw(
                st.dictionaries(qualified_name(), st.sampled_from(["", "x"]), max_size=2)
            )
        if draw(st.integers(0, 3)) == 0:  # fields a template's metadata may not set
            key, value = draw(
                st.sampled_from(
                    [("name", "x"), ("generateName", "x-"), ("namespace", "default"), ("finalizers", ["a/b"])]
                )
            )
            inner["metadata"][key] = value
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": draw(claim_metadata()),
        "spec": inner,
    }


# --- slices -------------------------------------------------------------------------------------------------
# Biased to the rules' boundaries: 32 attributes + capacities, 48 attribute values, 96-byte keys (shown cut
# past that), 16 taints, 2 counter consumptions, 32 counters, 8 counter sets, 64/128 devices, 4 binding
# conditions, 10 valid values, int64 bounds of a range; fields of disabled gates (dropped on create) too.


@st.composite
def attribute_key(draw: st.DrawFn) -> str:
    return draw(
        st.one_of(
            capacity_name(),
            st.sampled_from(
                [
                    "a/b/c",
                    "a" * 63 + "/" + "b" * 32,
                    "a" * 64 + "/" + "b" * 32,
                    "a" * 63 + "/" + "b" * 33,
                    "A.example.com/x",
                    "example.com/",
                    "x" * 100,
                    "é/é",
                ]
            ),
        )
    )


@st.composite
def attribute_value(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 8))
    if kind == 0:
        return {"int": draw(st.sampled_from([0, 1, -5, 2**62]))}
    if kind == 1:
        return {"bool": draw(st.booleans())}
    if kind == 2:
        return {"string": draw(st.sampled_from(["a", "", "x" * 64, "x" * 65, "é" * 33]))}
    if kind == 3:
        return {
            "version": draw(
                st.sampled_from(
                    ["1.2.3", "1.2", "v1.0.0", "1.0.0-rc.1+b", "01.2.3", "1.2.3-", "1.2.3\n", "x" * 65]
                )
            )
        }
    if kind == 4:
        return draw(
            st.sampled_from([{}, {"int": 1, "bool": True}, {"string": "a", "version": "1.0.0"}, None])
        )
    if kind == 5:  # list values: dropped while DRAListTypeAttributes is off
        field, value = draw(
            st.sampled_from(
                [
                    ("ints", []),
                    ("ints", [1, 2]),
                    ("bools", [True]),
                    ("strings", ["x" * 65, "a"]),
                    ("versions", ["1.0.0"]),
                ]
            )
        )
        out: dict[str, Any] = {field: value}
        if draw(st.booleans()):
            out["int"] = 1
        return out
    if kind == 8 and draw(st.integers(0, 9)) == 0:  # a wrong JSON type: Go's decoder refuses it (400)
        return draw(
            st.sampled_from(
                [{"string": 1}, {"version": 1.5}, {"int": "1"}, {"int": 1.5}, {"bool": "true"}, {"ints": {}}]
            )
        )
    return {"string": "s"}


@st.composite
def range_policy(draw: st.DrawFn) -> dict[str, Any]:
    bound = st.one_of(
        quantity(),
        st.sampled_from(
            ["1", "2", "4", "0", "-1", "0.5", "1500m", "9223372036854775807", "9223372036854775808"]
        ),
    )
    rng: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        rng["min"] = draw(bound)
    if draw(st.booleans()):
        rng["max"] = draw(bound)
    if draw(st.booleans()):
        rng["step"] = draw(st.one_of(bound, st.sampled_from(["1", "2", "0", "-1", "0.5", "3"])))
    return rng


@st.composite
def request_policy(draw: st.DrawFn) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    small = st.sampled_from(
        ["1", "2", "4", "8", "0", "1k", "1E-3", "+1", "5.", "1e03", "100E", "200E", "0.5"]
    )
    if draw(st.integers(0, 4)):
        policy["default"] = draw(st.one_of(small, quantity()))
    pick = draw(st.integers(0, 4))
    if pick == 1:
        policy["validValues"] = draw(st.lists(st.one_of(small, quantity()), max_size=4))
    elif pick == 2:
        policy["validValues"] = draw(st.lists(small, min_size=9, max_size=12))
    elif pick == 3:
        policy["validRange"] = draw(range_policy())
    elif pick == 4:
        policy["validValues"] = ["1"]
        policy["validRange"] = {"min": "1"}
    return policy


@st.composite
def device_capacity(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from([None, {}]))
    out: dict[str, Any] = {
        "value": draw(
            st.one_of(quantity(), st.sampled_from(["4", "8", "1", "16Gi", "100E", "9223372036854775807"]))
        )
    }
    if draw(st.integers(0, 2)) == 0:
        out["requestPolicy"] = draw(request_policy())
    return out


@st.composite
def taint(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:
        return None
    out: dict[str, Any] = {"key": draw(st.sampled_from(["example.com/t", "t", "", "bad key", "a/b/c"]))}
    if draw(st.booleans()):
        out["value"] = draw(label_value())
    out["effect"] = draw(st.sampled_from(["NoSchedule", "NoExecute", "None", "PreferNoSchedule", ""]))
    return out


@st.composite
def node_selector_requirement(draw: st.DrawFn, fields: bool) -> dict[str, Any]:
    key = draw(
        st.sampled_from(["metadata.name", "metadata.name", "spec.nodeName"])
        if fields
        else st.sampled_from(["a", "example.com/zone", "", "bad key", "a/b/c", "x" * 64])
    )
    out: dict[str, Any] = {
        "key": key,
        "operator": draw(
            st.sampled_from(["In", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Foo", ""])
        ),
    }
    if draw(st.integers(0, 3)):
        out["values"] = draw(
            st.lists(st.sampled_from(["node-1", "b", "1", "", "a b", "Node_1", "x" * 64]), max_size=2)
        )
    return out


@st.composite
def node_selector(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return draw(st.sampled_from([{"nodeSelectorTerms": []}, {}, {"nodeSelectorTerms": [None]}]))
    terms = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):
        term: dict[str, Any] = {}
        if draw(st.integers(0, 3)):
            term["matchExpressions"] = draw(st.lists(node_selector_requirement(False), max_size=2))
        if draw(st.integers(0, 2)) == 0:
            term["matchFields"] = draw(st.lists(node_selector_requirement(True), max_size=2))
        terms.append(term)
    return {"nodeSelectorTerms": terms}


def _node_selector() -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}]}


@st.composite
def counters(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 12)) == 0:
        n = draw(st.sampled_from([32, 33]))
        return {f"c{i}": {"value": "1"} for i in range(n)}
    names = st.one_of(capacity_name(), st.sampled_from(["memory", "cores", "c-1", "x" * 64]))
    return draw(st.dictionaries(names, quantity().map(lambda q: {"value": q}), max_size=2))


@st.composite
def device(draw: st.DrawFn, index: int, counter_sets: list[str], per_device: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": draw(st.sampled_from([f"dev-{index}", "dev-0", "Dev", "", _label(63), _label(64), "a.b"]))
    }
    many = draw(st.integers(0, 15)) == 0
    if many:  # around the 32 attributes + capacities and 48 attribute values limits
        n = draw(st.sampled_from([16, 31, 32, 33]))
        out["attributes"] = {f"a{i}": {"int": i} for i in range(n)}
        out["capacity"] = {f"c{i}": {"value": "1"} for i in range(draw(st.sampled_from([0, 1, 2])))}
    else:
        if draw(st.booleans()):
            out["attributes"] = draw(st.dictionaries(attribute_key(), attribute_value(), max_size=3))
        if draw(st.booleans()):
            out["capacity"] = draw(st.dictionaries(capacity_name(), device_capacity(), max_size=2))
    if draw(st.integers(0, 2)) == 0:
        out["allowMultipleAllocations"] = draw(st.sampled_from([True, True, False]))
    if draw(st.integers(0, 3)) == 0:
        n = draw(st.sampled_from([1, 1, 1, 2, 3]))
        entries = []
        for _ in range(n):
            entry: dict[str, Any] = {"counterSet": draw(st.sampled_from([*counter_sets, "nope", "Bad", ""]))}
            if draw(st.integers(0, 5)):
                entry["counters"] = draw(counters())
            if draw(st.integers(0, 8)) == 0:  # dropped while DRADeviceCompatibilityGroups is off
                entry["compatibilityGroups"] = ["g1", "Bad", "g1"]
            entries.append(entry)
        out["consumesCounters"] = entries
    if draw(st.integers(0, 4)) == 0:
        if draw(st.integers(0, 10)) == 0:
            out["taints"] = [
                {"key": f"t{i}", "effect": "NoSchedule"} for i in range(draw(st.sampled_from([16, 17])))
            ]
        else:
            out["taints"] = draw(st.lists(taint(), max_size=2))
    if draw(st.integers(0, 4)) == 0:
        conds = st.sampled_from(["ready", "Ready", "bad cond", "x" * 64, "example.com/ok", "a", "b", "c"])
        out["bindingConditions"] = draw(st.lists(conds, max_size=5))
        if draw(st.booleans()):
            out["bindingFailureConditions"] = draw(
                st.lists(st.sampled_from(["failed", "ready", "f2"]), max_size=5)
            )
        if draw(st.booleans()):
            out["bindsToNode"] = draw(st.booleans())
    elif draw(st.integers(0, 20)) == 0:
        out["bindingFailureConditions"] = ["failed"]
    if draw(st.integers(0, 3 if per_device else 8)) == 0 or (per_device and draw(st.booleans())):
        for which in draw(st.lists(st.sampled_from(["nodeName", "allNodes", "nodeSelector"]), max_size=2)):
            if which == "nodeName":
                out["nodeName"] = draw(st.sampled_from(["node-1", "", "Node_1"]))
            elif which == "allNodes":
                out["allNodes"] = draw(st.sampled_from([True, True, False]))
            else:
                out["nodeSelector"] = draw(st.one_of(st.just(_node_selector()), node_selector()))
    if draw(st.integers(0, 25)) == 0:  # dropped while DRANodeAllocatableResources is off
        out["nodeAllocatableResources"] = {"cpu": {"mapping": {"capacityKey": "cores"}}}
    return out


@st.composite
def resource_slice(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": draw(driver_name()),
        "pool": {
            "name": draw(
                st.sampled_from(
                    ["pool", "node-1", "", "a/b", "Bad Pool", _label(253), _label(254), "a//b", "a/"]
                )
            ),
            "generation": draw(st.sampled_from([0, 1, -1, 2**62])),
            "resourceSliceCount": draw(st.sampled_from([1, 2, 0, -1])),
        },
    }
    if draw(st.integers(0, 20)) == 0:
        del spec["pool"][draw(st.sampled_from(["generation", "resourceSliceCount", "name"]))]
    node = draw(
        st.sampled_from(
            ["nodeName", "nodeName", "allNodes", "nodeSelector", "perDevice", "perDevice", "none", "two"]
        )
    )
    if node in ("nodeName", "two"):
        spec["nodeName"] = draw(st.sampled_from(["node-1", "Node_1", "", _label(254)]))
    if node in ("allNodes", "two"):
        spec["allNodes"] = draw(st.sampled_from([True, True, False]))
    if node == "nodeSelector":
        spec["nodeSelector"] = draw(st.one_of(st.just(_node_selector()), node_selector()))
    if node == "perDevice":
        spec["perDeviceNodeSelection"] = draw(st.sampled_from([True, True, True, False]))
    per_device = spec.get("perDeviceNodeSelection") is True
    counter_sets: list[str] = []
    if draw(st.integers(0, 4)) == 0:
        sets = []
        for i in range(draw(st.sampled_from([1, 1, 2, 2, 8, 9]))):
            name = draw(st.sampled_from([f"set-{i}", f"set-{i}", "set-0", "Bad_Set", ""]))
            counter_sets.append(name)
            entry: dict[str, Any] = {"name": name}
            if draw(st.integers(0, 6)):
                entry["counters"] = draw(counters())
            sets.append(entry)
        spec["sharedCounters"] = sets
    if not counter_sets or draw(st.integers(0, 3)) == 0:
        pick = draw(st.integers(0, 60))
        if pick == 0:
            spec["devices"] = [{"name": f"d{i}"} for i in range(draw(st.sampled_from([128, 129])))]
        elif pick == 1:  # the limit with taints or counter consumption
            n = draw(st.sampled_from([64, 65]))
            spec["devices"] = [{"name": f"d{i}"} for i in range(n)]
            spec["devices"][0]["taints"] = [{"key": "t", "effect": "NoSchedule"}]
        else:
            n = draw(st.integers(0, 3))
            spec["devices"] = [draw(device(i, counter_sets, per_device)) for i in range(n)]
    if draw(st.integers(0, 30)) == 0:  # dropped while their gates are off
        key, value = draw(
            st.sampled_from(
                [
                    ("partitionTypeAttribute", "example.com/type"),
                    ("skipNodeOperations", ["NodePrepareResources"]),
                ]
            )
        )
        spec[key] = value
    obj: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": draw(metadata()),
        "spec": spec,
    }
    if draw(st.integers(0, 40)) == 0:
        spec["devices"] = [{"name": "d", "basic": {}}]
    meta = obj["metadata"]
    if draw(st.integers(0, 12)) == 0:
        meta["finalizers"] = draw(
            st.lists(
                st.sampled_from(
                    ["orphan", "foregroundDeletion", "kubernetes", "custom", "example.com/f", "a b"]
                ),
                max_size=3,
            )
        )
    if draw(st.integers(0, 12)) == 0:
        meta["ownerReferences"] = [
            {
                "apiVersion": draw(st.sampled_from(["v1", "apps/v1", "", "/", "a/b/c", "apps/"])),
                "kind": draw(st.sampled_from(["Node", "Event", ""])),
                "name": draw(st.sampled_from(["n", ""])),
                "uid": draw(st.sampled_from(["0b6c5f4e-2f8a-4c51-9a7e-3c2d1b0a9f8e", ""])),
                **({"controller": True} if draw(st.booleans()) else {}),
            }
            for _ in range(draw(st.integers(1, 2)))
        ]
    return obj


# --- wrong JSON types ---------------------------------------------------------------------------------------
# Go's decoder refuses a value of the wrong JSON type (a 400 without causes): a number for a string, a string
# for a number or a boolean, an object for a list. About WRONG_TYPE_PERCENT % of the objects get one such
# value at a random place under `roots` (a number for a quantity's string is no wrong type: Go parses it).
WRONG_TYPE_PERCENT = 4
_WRONG: dict[type, list[Any]] = {
    str: [1, 0, -1, 1.5, 1e3],
    bool: ["true", 1],
    int: ["1", 1.5, True],
    float: ["1.5", True],
    list: [{}, {"a": 1}, "x", 1],
    dict: [[], ["x"], "x", 1, True],
}
_KEEP = frozenset({"name", "namespace"})  # an object's own name stays a string (it names the request)


def wrong_typed(make: Any, roots: tuple[str, ...] = ("metadata", "spec")) -> Any:
    """`make` (a strategy function) whose objects hold a value of a wrong JSON type now and then."""

    @st.composite
    def strategy(draw: st.DrawFn) -> Any:
        obj = draw(make())
        if not 50 <= draw(st.integers(0, 99)) < 50 + WRONG_TYPE_PERCENT:  # Hypothesis favors the bounds
            return obj
        obj = json.loads(json.dumps(obj))  # drawn values may share sampled constants: never modify those
        spots: list[tuple[Any, Any]] = []

        def walk(value: Any, top: bool) -> None:
            items = (
                value.items()
                if isinstance(value, dict)
                else enumerate(value)
                if isinstance(value, list)
                else ()
            )
            for key, sub in items:
                if (
                    sub is None
                    or (top and key not in roots)
                    or (value is obj.get("metadata") and key in _KEEP)
                ):
                    continue
                spots.append((value, key))
                walk(sub, False)

        walk(obj, True)
        if spots:
            parent, key = draw(st.sampled_from(spots))
            parent[key] = draw(st.sampled_from(_WRONG[type(parent[key])]))
        return obj

    return strategy


STRATEGIES = {
    "DeviceClass": wrong_typed(device_class),
    "ResourceClaim": wrong_typed(resource_claim),
    "ResourceClaimTemplate": wrong_typed(resource_claim_template),
    "ResourceSlice": wrong_typed(resource_slice),
}


def compact_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


# --- claim status (allocation, reservedFor, shareID, device status) -----------------------------------------
# Status updates go to three stored claims of one spec (STATUS_CLAIM_SPEC): `fresh` (no status), `allocated`
# (STORED_STATUS written for real) and `deleting` (the same, then deleted while a finalizer holds it).

STATUS_REQUEST = "gpu"
STATUS_DRIVER = "gpu.example.com"
STATUS_CLAIM_SPEC: dict[str, Any] = {
    "devices": {
        "requests": [
            {"name": STATUS_REQUEST, "exactly": {"deviceClassName": "gpu.example.com"}},
            {
                "name": "multi",
                "firstAvailable": [
                    {"name": "s0", "deviceClassName": "gpu.example.com"},
                    {"name": "s1", "deviceClassName": "gpu.example.com"},
                ],
            },
        ]
    }
}
UUIDS = (
    "7c4b8e0a-3f7d-4a7e-9a53-0b1f2c3d4e5f",
    "0b1f2c3d-4e5f-4a7e-9a53-7c4b8e0a3f7d",
    "not-a-uuid",
    "7C4B8E0A-3F7D-4A7E-9A53-0B1F2C3D4E5F",
    "7c4b8e0a3f7d4a7e9a530b1f2c3d4e5f",
    "{7c4b8e0a-3f7d-4a7e-9a53-0b1f2c3d4e5f}",
    "urn:uuid:7c4b8e0a-3f7d-4a7e-9a53-0b1f2c3d4e5f",
    "7c4b8e0a-3f7d-4a7e-9a53-0b1f2c3d4e5g",
    "",
)
STORED_RESULTS: list[dict[str, Any]] = [
    {"request": STATUS_REQUEST, "driver": STATUS_DRIVER, "pool": "pool", "device": "gpu-0"},
    {
        "request": "multi/s0",
        "driver": STATUS_DRIVER,
        "pool": "pool",
        "device": "gpu-1",
        "shareID": UUIDS[0],
        "consumedCapacity": {"memory": "1Gi"},
        "bindingConditions": ["ready"],
        "bindingFailureConditions": ["failed"],
    },
]
STORED_STATUS: dict[str, Any] = {
    "allocation": {
        "devices": {"results": STORED_RESULTS},
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
            ]
        },
    },
    # a consumer the resourceclaim controller does not check (it drops pods it cannot find)
    "reservedFor": [{"apiGroup": "example.com", "resource": "widgets", "name": "w-0", "uid": "uid-0"}],
    "devices": [
        {
            "driver": STATUS_DRIVER,
            "pool": "pool",
            "device": "gpu-0",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ok",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
            "networkData": {"interfaceName": "eth0", "ips": ["10.0.0.1/24"]},
        }
    ],
}
STATUS_TARGETS = ("fresh", "allocated", "deleting")
_REQUEST_REFS = (
    STATUS_REQUEST,
    STATUS_REQUEST,
    "multi/s0",
    "multi/s1",
    "multi",
    "multi/s9",
    "gpu/s0",
    "nope",
    "a/b/c",
    "Bad",
    "",
    "multi/",
    "/s0",
    _label(64),
)
_POOLS = ("pool", "pool", "node-1", "a/b", "", "Bad Pool", "a//b", "/a", "a/", _label(254), "A.b")
_DEVICES = ("gpu-0", "gpu-0", "gpu-1", "", "Bad_Dev", "a.b", _label(63), _label(64))


@st.composite
def binding_conditions(draw: st.DrawFn) -> list[str]:
    names = st.sampled_from(["ready", "attached", "failed", "bad cond", "example.com/done", "", _label(64)])
    if draw(st.integers(0, 5)) == 0:
        return [f"c{i}" for i in range(draw(st.sampled_from([4, 5])))]
    return draw(st.lists(names, max_size=3))


@st.composite
def device_result(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {
        "request": draw(st.sampled_from(_REQUEST_REFS)),
        "driver": draw(st.one_of(st.just(STATUS_DRIVER), driver_name())),
        "pool": draw(st.sampled_from(_POOLS)),
        "device": draw(st.sampled_from(_DEVICES)),
    }
    if draw(st.integers(0, 3)) == 0:
        out["adminAccess"] = draw(st.booleans())
    if draw(st.integers(0, 2)) == 0:
        out["shareID"] = draw(st.sampled_from(UUIDS))
    if draw(st.integers(0, 2)) == 0:
        out["consumedCapacity"] = draw(st.dictionaries(capacity_name(), quantity(), max_size=2))
    if draw(st.integers(0, 4)) == 0:
        out["tolerations"] = draw(st.lists(toleration(), max_size=2))
    if draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 3)):
            out["bindingConditions"] = draw(binding_conditions())
        if draw(st.integers(0, 3)):
            out["bindingFailureConditions"] = draw(binding_conditions())
    if draw(st.integers(0, 6)) == 0:
        ops = ["NodePrepareResources", "NodeUnprepareResources", "*", "Bad", "NodePrepareResources"]
        out["skipNodeOperations"] = draw(st.lists(st.sampled_from(ops), max_size=3))
    return out


@st.composite
def allocation_config(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"source": draw(st.sampled_from(["FromClaim", "FromClass", "", "FromElsewhere"]))}
    if draw(st.booleans()):
        if draw(st.integers(0, 20)) == 0:
            out["requests"] = [STATUS_REQUEST] * draw(st.sampled_from([32, 33]))
        else:
            out["requests"] = draw(st.lists(st.sampled_from(_REQUEST_REFS), max_size=3))
    out.update(draw(opaque_config()))
    return out


@st.composite
def status_node_selector(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(st.sampled_from([{"nodeSelectorTerms": []}, {}]))
    term: dict[str, Any] = {}
    if draw(st.booleans()):
        term["matchExpressions"] = [
            {
                "key": draw(st.sampled_from(["a", "example.com/zone", "bad key", ""])),
                "operator": draw(
                    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bad"])
                ),
                "values": draw(st.lists(st.sampled_from(["b", "1", "bad value!", _label(64)]), max_size=2)),
            }
        ]
    if draw(st.booleans()):
        term["matchFields"] = [
            {
                "key": draw(st.sampled_from(["metadata.name", "metadata.name", "spec.nodeName"])),
                "operator": draw(st.sampled_from(["In", "NotIn", "Exists"])),
                "values": draw(st.lists(st.sampled_from(["node-1", "Node_1", "n2"]), max_size=2)),
            }
        ]
    return {"nodeSelectorTerms": [term] * draw(st.integers(1, 2))}


@st.composite
def allocation(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 40)) == 0:
        return draw(st.sampled_from([{}, {"devices": {}}, {"allocationTimestamp": "2026-01-01T00:00:00Z"}]))
    if draw(st.integers(0, 30)) == 0:
        results = [
            {"request": STATUS_REQUEST, "driver": STATUS_DRIVER, "pool": "pool", "device": f"d{i}"}
            for i in range(draw(st.sampled_from([32, 33])))
        ]
    else:
        results = draw(st.lists(device_result(), max_size=3))
    devices: dict[str, Any] = {"results": results}
    if draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 30)) == 0:
            devices["config"] = [
                {"source": "FromClaim", "opaque": {"driver": "foo", "parameters": {}}}
            ] * draw(st.sampled_from([64, 65]))
        else:
            devices["config"] = draw(st.lists(allocation_config(), max_size=2))
    out: dict[str, Any] = {"devices": devices}
    if draw(st.booleans()):
        out["nodeSelector"] = draw(status_node_selector())
    return out


@st.composite
def consumer_reference(draw: st.DrawFn) -> dict[str, Any]:
    out = {
        "resource": draw(st.sampled_from(["pods", "pods", "Pods", ""])),
        "name": draw(st.sampled_from(["pod-1", "pod-0", "", "Bad_Name"])),
        "uid": draw(st.sampled_from(["uid-1", "uid-0", "uid-2", ""])),
    }
    if draw(st.integers(0, 4)) == 0:
        out["apiGroup"] = draw(st.sampled_from(["apps", ""]))
    return out


@st.composite
def reserved_for(draw: st.DrawFn) -> list[dict[str, Any]]:
    if draw(st.integers(0, 25)) == 0:
        n = draw(st.sampled_from([256, 257]))
        refs = [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(n)]
        if draw(st.booleans()):
            refs[-1] = dict(refs[0])
        return refs
    return draw(st.lists(consumer_reference(), min_size=1, max_size=3))


@st.composite
def condition(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, values in (
        ("type", ["Ready", "Ready", "example.com/Attached", "", "bad type"]),
        ("status", ["True", "False", "Unknown", "Maybe", ""]),
        ("reason", ["Ok", "Reason_A,B:c", "", "bad reason", "_x", "x" * 1025]),
        ("message", ["", "fine", "m" * 32769]),
        (
            "lastTransitionTime",
            [
                "2026-01-01T00:00:00Z",
                "2026-01-01T00:00:00Z",
                "2026-01-01T01:00:00.5+01:00",
                "0001-01-01T00:00:00Z",
                None,
            ],
        ),
    ):
        value = draw(st.sampled_from(values))
        if value is not None:
            out[key] = value
    if draw(st.integers(0, 5)) == 0:
        out["observedGeneration"] = draw(st.sampled_from([0, 3, -1]))
    return out


@st.composite
def network_data(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["interfaceName"] = draw(st.sampled_from(["eth0", "", "x" * 256, "x" * 257]))
    if draw(st.booleans()):
        if draw(st.integers(0, 10)) == 0:
            out["ips"] = [f"10.0.0.{i}/24" for i in range(draw(st.sampled_from([16, 17])))]
        else:
            ips = [
                "10.0.0.1/24",
                "10.0.0.1",
                "::1/128",
                "2001:db8::1/64",
                "2001:DB8::1/64",
                "2001:db8:0:0:0:0:0:1/64",
                "010.0.0.1/24",
                "::ffff:10.0.0.1/120",
                "10.0.0.1/33",
                "bad",
                "10.0.0.1/24",
            ]
            out["ips"] = draw(st.lists(st.sampled_from(ips), max_size=3))
    if draw(st.booleans()):
        out["hardwareAddress"] = draw(st.sampled_from(["00:11:22:33:44:55", "", "x" * 128, "x" * 129]))
    return out


@st.composite
def device_status(draw: st.DrawFn, results: list[dict[str, Any]]) -> dict[str, Any]:
    """A status.devices entry, mostly for a device the allocation holds (with its share ID)."""
    keys = [r for r in results if isinstance(r, dict)]
    if keys and draw(st.integers(0, 3)) > 0:
        base = draw(st.sampled_from(keys))
        entry: dict[str, Any] = {k: base[k] for k in ("driver", "pool", "device") if k in base}
        if "shareID" in base and draw(st.integers(0, 5)):
            entry["shareID"] = base["shareID"]
        elif draw(st.integers(0, 5)) == 0:
            entry["shareID"] = draw(st.sampled_from(UUIDS))
    else:
        entry = {
            "driver": draw(st.one_of(st.just(STATUS_DRIVER), driver_name())),
            "pool": draw(st.sampled_from(_POOLS)),
            "device": draw(st.sampled_from(_DEVICES)),
        }
        if draw(st.integers(0, 2)) == 0:
            entry["shareID"] = draw(st.sampled_from(UUIDS))
    if draw(st.booleans()):
        n = draw(st.sampled_from([0, 1, 1, 2, 8, 9]))
        if n > 2:
            entry["conditions"] = [
                {
                    "type": f"T{i}",
                    "status": "True",
                    "reason": "R",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
                for i in range(n)
            ]
        else:
            entry["conditions"] = draw(st.lists(condition(), min_size=n, max_size=n))
    if draw(st.integers(0, 2)) == 0:
        entry["networkData"] = draw(network_data())
    if draw(st.integers(0, 3)) == 0:
        entry["data"] = draw(parameters())
    return entry


@st.composite
def claim_status(draw: st.DrawFn, results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A status written to a claim with no status: maybe an allocation, reservations, device statuses."""
    status: dict[str, Any] = {}
    if draw(st.integers(0, 3)):
        status["allocation"] = draw(allocation())
    if draw(st.integers(0, 2)) == 0:
        status["reservedFor"] = draw(reserved_for())
    if draw(st.integers(0, 2)) == 0:
        allocated = status.get("allocation", {}).get("devices", {}).get("results", [])
        entries = draw(st.lists(device_status(results if results is not None else allocated), max_size=2))
        if entries:
            status["devices"] = entries
    return status


@st.composite
def stored_status_update(draw: st.DrawFn) -> dict[str, Any]:
    """A status written over STORED_STATUS: mostly the same allocation (changed now and then: immutable), the
    reservations and device statuses changed."""
    status: dict[str, Any] = json.loads(json.dumps(STORED_STATUS))
    choice = draw(st.integers(0, 10))
    if choice == 0:
        del status["allocation"]
    elif choice == 1:
        status["allocation"] = draw(allocation())
    elif choice == 2:
        status["allocation"]["devices"]["results"][0]["device"] = draw(st.sampled_from(_DEVICES))
    elif choice == 3:  # the same allocation, written differently (semantic equality: no modification)
        shared = status["allocation"]["devices"]["results"][1]
        shared["consumedCapacity"]["memory"] = draw(st.sampled_from(["1024Mi", "1073741824", "1Gi", "1G"]))
        status["allocation"]["devices"]["results"][0].update(
            draw(
                st.sampled_from([{}, {"tolerations": []}, {"adminAccess": False}, {"bindingConditions": []}])
            )
        )
    choice = draw(st.integers(0, 5))
    if choice == 0:
        del status["reservedFor"]
    elif choice == 1:
        status["reservedFor"].append(draw(consumer_reference()))
    elif choice == 2:
        status["reservedFor"] = draw(reserved_for())
    choice = draw(st.integers(0, 4))
    if choice == 0:
        del status["devices"]
    elif choice in (1, 2):
        status["devices"].extend(draw(st.lists(device_status(STORED_RESULTS), min_size=1, max_size=2)))
    elif choice == 3:
        status["devices"] = draw(st.lists(device_status(STORED_RESULTS), min_size=1, max_size=2))
    return status


@st.composite
def _status_update(draw: st.DrawFn) -> dict[str, Any]:
    target = draw(st.sampled_from(STATUS_TARGETS))
    status = draw(claim_status() if target == "fresh" else stored_status_update())
    return {"target": target, "status": status}


def status_update() -> Any:
    """`{"target": one of STATUS_TARGETS, "status": the status written to it}` (a wrong type now and then)."""
    return wrong_typed(_status_update, ("status",))()
