"""The certificates' view of the cluster, through `kubeio.kube.Kube` (JSON on the API): the Secret, the
webhook configurations' caBundles, and the replicas behind the webhook Service (EndpointSlices).

Every write is conflict-aware: the Secret and the configurations are replaced with the resourceVersion that
was read, so a concurrent writer makes the write fail with 409 and the caller reconciles again from fresh
state, never overwriting what it did not see.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from certs.material import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SECRET_TYPE,
    Material,
    decode_data,
    encode_data,
)
from kubeio.kube import (
    ENDPOINT_SLICES,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    SECRETS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    ApiError,
    Kube,
    Resource,
)

VALIDATING = "validatingwebhookconfiguration"
MUTATING = "mutatingwebhookconfiguration"
KINDS = (VALIDATING, MUTATING)
_RESOURCES: dict[str, Resource] = {
    VALIDATING: VALIDATING_WEBHOOK_CONFIGURATIONS,
    MUTATING: MUTATING_WEBHOOK_CONFIGURATIONS,
}


class ClusterError(Exception):
    """An API call that failed for a reason other than a conflict; names the object and the status."""


class Conflict(Exception):
    """Someone else changed the object since it was read: read again and retry."""


@dataclass(frozen=True)
class StoredSecret:
    data: dict[str, bytes]
    annotations: dict[str, str]
    labels: dict[str, str]
    type: str
    resource_version: str
    raw: dict[str, Any]


@dataclass(frozen=True)
class WebhookEntry:
    config_kind: str
    config_name: str
    webhook_name: str
    ca_bundle: bytes | None


@dataclass(frozen=True)
class SkippedWebhook:
    """A webhook in a configured configuration that does not call our Service, so its caBundle is not ours to
    set: `calls` says what it calls instead (`url https://...`, `service ns/name`, or nothing)."""

    config_kind: str
    config_name: str
    webhook_name: str
    calls: str


@dataclass
class Scope:
    """What `certs` manages in the configured webhook configurations: our webhooks (those calling our
    Service), the ones it skips, and the `--webhook-config` values that matched no object."""

    entries: list[WebhookEntry]
    skipped: list[SkippedWebhook]
    missing: list[str]


@dataclass(frozen=True)
class ConfigRef:
    """`--webhook-config` value: `validating/NAME`, `mutating/NAME`, or a bare NAME for both kinds."""

    kinds: tuple[str, ...]
    name: str

    @classmethod
    def parse(cls, text: str) -> ConfigRef:
        prefix, sep, name = text.partition("/")
        if not sep:
            return cls(KINDS, text)
        kind = {"validating": VALIDATING, "mutating": MUTATING}.get(prefix.lower())
        if kind is None or not name:
            raise ValueError(f"{text!r}: expected NAME, validating/NAME or mutating/NAME")
        return cls((kind,), name)


def _calls(webhook: dict[str, Any]) -> str:
    """What a webhook's clientConfig calls, in words."""
    config = webhook.get("clientConfig") or {}
    if config.get("url"):
        return f"url {config['url']}"
    service = config.get("service") or {}
    if service:
        return f"service {service.get('namespace', '')}/{service.get('name', '')}"
    return "no url and no service"


def _failure(what: str, exc: ApiError) -> ClusterError:
    """`what` failed: "cannot reach the cluster" without an answer, else the object and the HTTP status."""
    if exc.status == 0:
        return ClusterError(f"cannot reach the cluster: {exc.message}")
    return ClusterError(f"{what}: HTTP {exc.status} {exc.reason}".rstrip())


class CertCluster:
    """Reads and writes for one installation: its namespace, Secret, Service and webhook configurations."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        secret: str,
        service: str,
        configs: Sequence[ConfigRef] = (),
    ) -> None:
        self.kube = kube
        self.api = kube.api  # the client under `kube` (views such as `Kube.of_client` share it)
        self.namespace = namespace
        self.secret = secret
        self.service = service
        self.configs = tuple(configs)

    # --- the Secret -------------------------------------------------------------------------------------

    def read_secret(self) -> StoredSecret | None:
        try:
            raw = self.kube.get(SECRETS, self.namespace, self.secret)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise _failure(f"secret {self.namespace}/{self.secret}: get", exc) from None
        meta = raw.get("metadata") or {}
        return StoredSecret(
            data=decode_data(raw.get("data")),
            annotations=dict(meta.get("annotations") or {}),
            labels=dict(meta.get("labels") or {}),
            type=str(raw.get("type") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            raw=raw,
        )

    def write_secret(self, material: Material, stored: StoredSecret | None) -> None:
        """Create the Secret, or replace it at the resourceVersion read; Conflict when someone was faster."""
        where = f"secret {self.namespace}/{self.secret}"
        if stored is None:
            new: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": SECRET_TYPE,
                "metadata": {
                    "name": self.secret,
                    "namespace": self.namespace,
                    "labels": {MANAGED_BY_LABEL: MANAGED_BY},
                    "annotations": material.annotations(),
                },
                "data": encode_data(material.secret_data()),
            }
            try:
                self.kube.request("POST", SECRETS.path(self.namespace), body=new)
            except ApiError as exc:
                if exc.status == 409:
                    raise Conflict(f"{where} was created meanwhile") from None
                raise _failure(f"{where}: create", exc) from None
            return
        body: dict[str, Any] = copy.deepcopy(stored.raw)
        meta = body.setdefault("metadata", {})
        meta["resourceVersion"] = stored.resource_version
        meta.setdefault("labels", {})[MANAGED_BY_LABEL] = MANAGED_BY
        annotations = meta.setdefault("annotations", {})
        annotations.update(material.annotations())
        data = decode_data(body.get("data"))
        data.update(material.secret_data())
        body["data"] = encode_data(data)
        try:
            self.kube.request("PUT", SECRETS.path(self.namespace, self.secret), body=body)
        except ApiError as exc:
            if exc.status == 409:
                raise Conflict(f"{where} changed meanwhile") from None
            raise _failure(f"{where}: update", exc) from None

    # --- webhook configurations -------------------------------------------------------------------------

    def _read_config(self, kind: str, name: str) -> dict[str, Any] | None:
        try:
            return self.kube.get(_RESOURCES[kind], None, name)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise _failure(f"{kind} {name}: get", exc) from None

    def _ours(self, webhook: dict[str, Any]) -> bool:
        service = (webhook.get("clientConfig") or {}).get("service") or {}
        return bool(service.get("name") == self.service and service.get("namespace") == self.namespace)

    def webhook_entries(self) -> tuple[list[WebhookEntry], list[str]]:
        """Our webhooks (clientConfig pointing at our Service) in the configured configurations, and the
        `--webhook-config` values that matched no object."""
        scope = self.scope()
        return scope.entries, scope.missing

    def scope(self) -> Scope:
        """Our webhooks, the skipped ones (a `url:` or another Service), and the configurations not found."""
        scope = Scope([], [], [])
        for ref in self.configs:
            found = False
            for kind in ref.kinds:
                config = self._read_config(kind, ref.name)
                if config is None:
                    continue
                found = True
                for hook in config.get("webhooks") or []:
                    name = str(hook.get("name", ""))
                    if not self._ours(hook):
                        scope.skipped.append(SkippedWebhook(kind, ref.name, name, _calls(hook)))
                        continue
                    raw = (hook.get("clientConfig") or {}).get("caBundle")
                    bundle = base64.b64decode(raw) if raw else None
                    scope.entries.append(WebhookEntry(kind, ref.name, name, bundle))
            if not found:
                scope.missing.append(ref.name if len(ref.kinds) > 1 else f"{ref.kinds[0]}/{ref.name}")
        return scope

    def inject(self, ca_bundle: bytes) -> list[str]:
        """Set caBundle of each of our webhooks that does not already hold `ca_bundle`; what was changed."""
        encoded = base64.b64encode(ca_bundle).decode("ascii")
        changed: list[str] = []
        for ref in self.configs:
            for kind in ref.kinds:
                config = self._read_config(kind, ref.name)
                if config is None:
                    continue
                touched = []
                for hook in config.get("webhooks") or []:
                    if self._ours(hook) and hook["clientConfig"].get("caBundle") != encoded:
                        hook["clientConfig"]["caBundle"] = encoded
                        touched.append(str(hook.get("name", "")))
                if not touched:
                    continue
                try:
                    self.kube.request("PUT", _RESOURCES[kind].path(None, ref.name), body=config)
                except ApiError as exc:
                    if exc.status == 409:
                        raise Conflict(f"{kind} {ref.name} changed meanwhile") from None
                    raise _failure(f"{kind} {ref.name}: update", exc) from None
                changed += [f"{kind}/{ref.name} webhook {name}" for name in touched]
        return changed

    def delete_configs(self) -> list[str]:
        """Delete the configured webhook configurations (uninstall); what was deleted. Absent is fine."""
        deleted: list[str] = []
        for ref in self.configs:
            for kind in ref.kinds:
                try:
                    self.kube.request("DELETE", _RESOURCES[kind].path(None, ref.name))
                except ApiError as exc:
                    if exc.status == 404:
                        continue
                    raise _failure(f"{kind} {ref.name}: delete", exc) from None
                deleted.append(f"{kind}/{ref.name}")
        return deleted

    def delete_secret(self) -> bool:
        """Delete the Secret if `certs` made it (managed-by label); True when deleted."""
        stored = self.read_secret()
        if stored is None or stored.labels.get(MANAGED_BY_LABEL) != MANAGED_BY:
            return False
        try:
            self.kube.request("DELETE", SECRETS.path(self.namespace, self.secret))
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise _failure(f"secret {self.namespace}/{self.secret}: delete", exc) from None
        return True

    # --- replicas -----------------------------------------------------------------------------------------

    def endpoints(self) -> list[tuple[str, int]]:
        """Ready (and not terminating) addresses of the Service's EndpointSlices, on the `https` port (or the
        only port): the replicas the API server may call."""
        try:
            slices = self.kube.list(
                ENDPOINT_SLICES,
                {"labelSelector": f"kubernetes.io/service-name={self.service}"},
                namespace=self.namespace,
            )
        except ApiError as exc:
            raise _failure(f"endpointslices of service {self.namespace}/{self.service}", exc) from None
        out: list[tuple[str, int]] = []
        for item in slices.get("items") or []:
            ports = item.get("ports") or []
            port = next((p.get("port") for p in ports if p.get("name") == "https"), None)
            if port is None and len(ports) == 1:
                port = ports[0].get("port")
            if port is None:
                continue
            for endpoint in item.get("endpoints") or []:
                conditions = endpoint.get("conditions") or {}
                if conditions.get("ready") is False or conditions.get("terminating") is True:
                    continue
                out += [(str(address), int(port)) for address in endpoint.get("addresses") or []]
        return sorted(set(out))
