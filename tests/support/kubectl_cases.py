"""Every rule of docs/validation.md (and the cluster warnings of docs/troubleshooting.md) as one `kubectl
apply` case: the manifest, who answers (the real API server before any webhook, the webhook, or kubectl
itself), and whether the object is created. `test_real_kubectl_texts.py` runs them on a real kube-apiserver
and records what kubectl prints in `golden/kubectl_texts.json`; `scripts/kubectl_texts.py` puts those texts
in the docs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"
SEL = {"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}
OPAQUE = {"opaque": {"driver": "gpu.nvidia.com", "parameters": {"a": 1}}}

# Who produces the text the user sees.
SERVER = "server"  # kube-apiserver refuses (or drops) before any validating webhook is called
WEBHOOK = "webhook"  # /validate (or /mutate) decides
KUBECTL = "kubectl"  # kubectl itself, before sending anything


@dataclass(frozen=True)
class Case:
    id: str
    section: str
    rule: str
    manifest: dict[str, Any]
    by: str
    created: bool
    native: bool = False  # a native rule: run under --native-rules warn and deny
    setup: tuple[dict[str, Any], ...] = ()  # objects created (through the webhooks) before
    args: tuple[str, ...] = ()  # extra kubectl arguments
    cleanup: tuple[str, ...] = field(default=())  # more DeviceClass names to delete after
    serve: tuple[str, ...] = ()  # extra `serve` arguments (gates) for this case
    mutate: bool = True  # False: the MutatingWebhookConfiguration is deleted first (cases run last)

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"].get("name") or "")


def dc(name: str | None, spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = dict(meta)
    if name is not None:
        metadata["name"] = name
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": metadata,
        "spec": spec if spec is not None else {"selectors": [SEL]},
    }


def carrier(name: str, value: str, ern: str | None = "example.com/gpu", **spec: Any) -> dict[str, Any]:
    """A class whose KEP-6406 request travels in the annotation carrier, as the raw text `value`."""
    body: dict[str, Any] = {"selectors": [SEL], **spec}
    if ern is not None:
        body["extendedResourceName"] = ern
    return dc(name, body, annotations={ANNOTATION: value})


def requests(**values: str) -> str:
    return json.dumps({"requests": values})


def _sel(expr: str) -> dict[str, Any]:
    return {"selectors": [{"cel": {"expression": expr}}]}


NESTED = (
    "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
    "device.attributes.all(d, device.attributes.all(e, true)))))"
)

CASES: tuple[Case, ...] = (
    Case("valid", "accepted", "a valid class", carrier("gpu", requests(shares="1")), WEBHOOK, True),
    # metadata
    Case(
        "name-required", "metadata", "`name` (or `generateName`) is required", dc(None), KUBECTL, False, True
    ),
    Case(
        "name-format",
        "metadata",
        "`name` is a DNS-1123 subdomain",
        dc("GPU_1"),
        SERVER,
        False,
        True,
    ),
    Case("name-length", "metadata", "`name` at most 253 bytes", dc("a" * 254), SERVER, False, True),
    Case(
        "generate-name",
        "metadata",
        "`generateName` alone: `kubectl apply` needs a name (`kubectl create` lets the server generate one)",
        dc(None, generateName="GPU_"),
        KUBECTL,
        False,
        True,
    ),
    Case(
        "namespace",
        "metadata",
        "`namespace` on a cluster-scoped object is not an error",
        dc("gpu-ns", namespace="default"),
        WEBHOOK,
        True,
        True,
    ),
    Case(
        "label-value",
        "metadata",
        "label keys and values",
        dc("gpu", labels={"a": "a b"}),
        SERVER,
        False,
        True,
    ),
    Case(
        "annotation-key",
        "metadata",
        "annotation keys",
        dc("gpu", annotations={"!@#$%^": "x"}),
        SERVER,
        False,
        True,
    ),
    Case(
        "annotation-size",
        "metadata",
        "annotation keys + values at most 256 KiB",
        dc("gpu", annotations={"big": "x" * 262_144}),
        SERVER,
        False,
        True,
    ),
    # spec.selectors
    Case(
        "selectors-too-many",
        "selectors",
        "at most 32 selectors",
        dc("gpu", {"selectors": [SEL] * 33}),
        SERVER,
        False,
        True,
    ),
    Case(
        "selector-cel-required",
        "selectors",
        "each selector needs `cel`",
        dc("gpu", {"selectors": [{}]}),
        SERVER,
        False,
        True,
    ),
    Case(
        "selector-too-long",
        "selectors",
        "expression at most 10240 bytes",
        dc("gpu", _sel("true || " * 1281 + "true")),
        SERVER,
        False,
        True,
    ),
    Case(
        "selector-compile",
        "selectors",
        "the expression compiles (the KEP's Story 1 selector, which indexes `capacity` by a capacity name)",
        dc("gpu", _sel('device.capacity["shares"].isGreaterThan(quantity("0"))')),
        SERVER,
        False,
        True,
    ),
    Case(
        "selector-undeclared",
        "selectors",
        "the expression compiles: an undeclared name",
        dc("gpu", _sel("noSuchVar")),
        SERVER,
        False,
        True,
    ),
    Case(
        "selector-quantity-order",
        "selectors",
        "the expression compiles: Quantity has no ordering operators (use `compareTo` or `isGreaterThan`)",
        dc("gpu", _sel('device.capacity["gpu.nvidia.com"].shares >= quantity("1")')),
        SERVER,
        False,
        True,
    ),
    Case(
        "selector-not-bool",
        "selectors",
        "the result is `bool`",
        dc("gpu", _sel("device.driver")),
        SERVER,
        False,
        True,
    ),
    Case(
        "selector-cost",
        "selectors",
        "the estimated cost is at most 1,000,000",
        dc("gpu", _sel(NESTED)),
        SERVER,
        False,
        True,
    ),
    # spec.config
    Case(
        "config-too-many",
        "config",
        "at most 32 entries",
        dc("gpu", {"config": [OPAQUE] * 33}),
        SERVER,
        False,
        True,
    ),
    Case(
        "config-opaque-required",
        "config",
        "each entry needs `opaque`",
        dc("gpu", {"config": [{}]}),
        SERVER,
        False,
        True,
    ),
    Case(
        "config-driver-required",
        "config",
        "`opaque.driver` required",
        dc("gpu", {"config": [{"opaque": {"parameters": {}}}]}),
        SERVER,
        False,
        True,
    ),
    Case(
        "config-driver-length",
        "config",
        "`opaque.driver` at most 63 bytes",
        dc("gpu", {"config": [{"opaque": {"driver": "a" * 64, "parameters": {}}}]}),
        SERVER,
        False,
        True,
    ),
    Case(
        "config-driver-format",
        "config",
        "`opaque.driver` a DNS subdomain",
        dc("gpu", {"config": [{"opaque": {"driver": "-bad", "parameters": {}}}]}),
        SERVER,
        False,
        True,
    ),
    Case(
        "config-parameters",
        "config",
        "`opaque.parameters` required, at most 10240 bytes, a JSON object (several errors print as a list)",
        dc(
            "gpu",
            {
                "config": [
                    {"opaque": {"driver": "gpu.nvidia.com"}},
                    {"opaque": {"driver": "gpu.nvidia.com", "parameters": [1]}},
                    {"opaque": {"driver": "gpu.nvidia.com", "parameters": {"x": "y" * 10240}}},
                ]
            },
        ),
        SERVER,
        False,
        True,
    ),
    # spec.extendedResourceName
    Case(
        "ern-no-domain",
        "extendedResourceName",
        "a domain-prefixed name",
        dc("gpu", {"extendedResourceName": "gpu"}),
        SERVER,
        False,
        True,
    ),
    Case(
        "ern-kubernetes-io",
        "extendedResourceName",
        "no `kubernetes.io/` domain",
        dc("gpu", {"extendedResourceName": "example.kubernetes.io/gpu"}),
        SERVER,
        False,
        True,
    ),
    Case(
        "ern-requests-prefix",
        "extendedResourceName",
        "no `requests.` prefix",
        dc("gpu", {"extendedResourceName": "requests.example.com/gpu"}),
        SERVER,
        False,
        True,
    ),
    Case(
        "ern-name-length",
        "extendedResourceName",
        "the name part at most 63 bytes",
        dc("gpu", {"extendedResourceName": "example.com/" + "a" * 64}),
        SERVER,
        False,
        True,
    ),
    # KEP-6406: the field on a 1.37 server
    Case(
        "field-strict",
        "field",
        "the field under kubectl's default (strict) field validation",
        dc("gpu", {"selectors": [SEL], "extendedResourceCapacityRequests": {"requests": {"shares": "1"}}}),
        SERVER,
        False,
    ),
    Case(
        "field-validate-false",
        "field",
        "the field with `--validate=false` (field validation `Ignore`: dropped without a word)",
        dc("gpu", {"selectors": [SEL], "extendedResourceCapacityRequests": {"requests": {"shares": "1"}}}),
        SERVER,
        True,
        args=("--validate=false",),
    ),
    Case(
        "field-validate-warn",
        "field",
        "the field with `--validate=warn` (the server's default, `Warn`, which client libraries use)",
        dc("gpu", {"selectors": [SEL], "extendedResourceCapacityRequests": {"requests": {"shares": "1"}}}),
        SERVER,
        True,
        args=("--validate=warn",),
    ),
    Case(
        "field-and-annotation",
        "field",
        "the field and the annotation, `--validate=false`: the server drops the field, the annotation holds",
        {
            **carrier("gpu", requests(shares="1")),
            "spec": {
                "selectors": [SEL],
                "extendedResourceName": "example.com/gpu",
                "extendedResourceCapacityRequests": {"requests": {"shares": "2"}},
            },
        },
        SERVER,
        True,
        args=("--validate=false",),
    ),
    # KEP-6406 through the annotation carrier
    Case(
        "carrier-key",
        "carrier",
        "keys are DRA qualified names",
        carrier("gpu", requests(**{"bad-name": "1"})),
        WEBHOOK,
        False,
    ),
    Case(
        "carrier-key-domain",
        "carrier",
        "keys: the domain a DNS subdomain of at most 63 characters",
        carrier("gpu", requests(**{"Bad_Domain/shares": "1"})),
        WEBHOOK,
        False,
    ),
    Case(
        "carrier-quantity",
        "carrier",
        "values parse as quantities",
        carrier("gpu", requests(memory="lots")),
        WEBHOOK,
        False,
    ),
    Case(
        "carrier-zero",
        "carrier",
        "values are greater than zero",
        carrier("gpu", requests(shares="0")),
        WEBHOOK,
        False,
    ),
    Case(
        "carrier-unknown-field",
        "carrier",
        "only `requests` inside",
        carrier("gpu", json.dumps({"request": {"shares": "1"}})),
        WEBHOOK,
        False,
    ),
    Case(
        "carrier-json",
        "carrier",
        "the annotation is JSON",
        carrier("gpu", '{"requests": {shares: 1}}'),
        WEBHOOK,
        False,
    ),
    Case("carrier-null", "carrier", "`null` is a missing value", carrier("gpu", "null"), WEBHOOK, False),
    Case("carrier-not-object", "carrier", "a JSON object", carrier("gpu", "[1]"), WEBHOOK, False),
    Case(
        "carrier-requests-not-object",
        "carrier",
        "`requests` a JSON object",
        carrier("gpu", json.dumps({"requests": ["shares"]})),
        WEBHOOK,
        False,
    ),
    Case(
        "carrier-many",
        "carrier",
        "every error at once",
        carrier("gpu", requests(shares="0", memory="lots", **{"bad-name": "1"})),
        WEBHOOK,
        False,
    ),
    # warnings of the webhook itself
    Case(
        "warn-no-ern",
        "warnings",
        "capacity requests without `extendedResourceName`",
        carrier("gpu", requests(shares="1"), ern=None),
        WEBHOOK,
        True,
    ),
    Case(
        "warn-both-spellings",
        "warnings",
        "both spellings of one capacity",
        carrier("gpu", requests(**{"shares": "1", "gpu.nvidia.com/shares": "1"})),
        WEBHOOK,
        True,
    ),
    # warnings from the cluster view (docs/troubleshooting.md)
    Case(
        "cluster-typo",
        "cluster",
        "a capacity no matching device publishes",
        carrier("gpu", requests(shraes="1")),
        WEBHOOK,
        True,
    ),
    Case(
        "cluster-too-large",
        "cluster",
        "more than any matching device has",
        carrier("gpu", requests(shares="9")),
        WEBHOOK,
        True,
    ),
    Case(
        "cluster-no-match",
        "cluster",
        "a selector that matches no published device",
        carrier(
            "gpu",
            requests(shares="1"),
            selectors=[{"cel": {"expression": 'device.driver == "nic.example.com"'}}],
        ),
        WEBHOOK,
        True,
    ),
    Case(
        "cluster-name-taken",
        "cluster",
        "two classes with one `extendedResourceName`",
        carrier("gpu", requests(shares="1")),
        WEBHOOK,
        True,
        setup=(carrier("gpu-old", requests(shares="2")),),
        cleanup=("gpu-old",),
    ),
    # gates of the served cluster
    Case(
        "carrier-consumable-off",
        "gates",
        "a KEP-6406 request needs `DRAConsumableCapacity` (it could have no effect without it)",
        carrier("gpu", requests(shares="1")),
        WEBHOOK,
        False,
        serve=("--feature-gates", "DRAConsumableCapacity=false"),
    ),
    Case(
        "drop-not-run-ern",
        "gates",
        "a field of a disabled gate reaches /validate (no /mutate registered): `DRAExtendedResource` off",
        dc("gpu", {"selectors": [SEL], "extendedResourceName": "example.com/gpu"}),
        WEBHOOK,
        True,
        serve=("--feature-gates", "DRAExtendedResource=false"),
        mutate=False,
    ),
    Case(
        "drop-not-run-capacity",
        "gates",
        "an escaped KEP-6406 request is still judged: `DRAExtendedResourceCapacity` off, no /mutate",
        carrier("gpu", requests(bandwidth="0")),
        WEBHOOK,
        False,
        serve=("--feature-gates", "DRAExtendedResourceCapacity=false"),
        mutate=False,
    ),
)
