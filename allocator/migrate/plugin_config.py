"""The NVIDIA device plugin's sharing configuration, as far as a move to DRA shares needs it.

The format is the plugin's config file (NVIDIA/k8s-device-plugin api/config/v1: `sharing.go` holds
`sharing.timeSlicing` and `sharing.mps`, each a `ReplicatedResources` with `renameByDefault`,
`failRequestsGreaterThanOne` and `resources[]`; `replicas.go` holds each resource's `name`, `rename`,
`devices` and `replicas`; `flags.migStrategy` is in `flags.go`). The Helm chart ships it in a ConfigMap whose
data keys are config files; a node picks one with the label `nvidia.com/device-plugin.config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

NODE_CONFIG_LABEL = "nvidia.com/device-plugin.config"  # the chart's per-node config selector
SHARED_SUFFIX = ".shared"  # what renameByDefault appends (the plugin's rename rule)


class PluginConfigError(ValueError):
    """A device plugin config that cannot be read; the message names the ConfigMap key and field."""


@dataclass(frozen=True)
class SharedResource:
    """One resource name the plugin advertises replicas under, and how many replicas each GPU has."""

    name: str  # what pods ask for (after renaming)
    replicas: int
    source: str  # the plugin's resource (`nvidia.com/gpu`)
    mode: str  # "timeSlicing" or "mps"


@dataclass(frozen=True)
class SharingConfig:
    """One config file of the ConfigMap (one data key)."""

    key: str
    resources: tuple[SharedResource, ...]
    rename_by_default: bool
    fail_requests_greater_than_one: bool
    mig_strategy: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class PluginConfig:
    """Every config of the ConfigMap, and which one nodes without the label use."""

    where: str  # `ConfigMap "ns/name"`
    configs: Mapping[str, SharingConfig]
    default: str | None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def for_node(self, labels: Mapping[str, str]) -> SharingConfig | None:
        key = labels.get(NODE_CONFIG_LABEL) or self.default
        return self.configs.get(key) if key is not None else None


def read_plugin_config(configmap: Mapping[str, Any], default_key: str | None = None) -> PluginConfig:
    """Parse a ConfigMap holding the plugin's config files (raises PluginConfigError naming key and field)."""
    meta = configmap.get("metadata") or {}
    where = f'ConfigMap "{meta.get("namespace") or "default"}/{meta.get("name") or ""}"'
    data = configmap.get("data") or {}
    if not isinstance(data, dict) or not data:
        raise PluginConfigError(f"{where}: data: holds no device plugin config file")
    configs = {key: _read_one(where, key, text) for key, text in sorted(data.items())}
    warnings: list[str] = []
    if default_key is None:
        default_key = next(iter(configs)) if len(configs) == 1 else None
        if default_key is None and "default" in configs:
            default_key = "default"
        if default_key is None:
            warnings.append(
                f"{where}: several configs ({', '.join(configs)}) and none named default: nodes without "
                f"the label {NODE_CONFIG_LABEL} are read from their allocatable only"
            )
    elif default_key not in configs:
        raise PluginConfigError(f"{where}: data[{default_key}]: no such config (the default config)")
    for c in configs.values():
        warnings.extend(c.warnings)
    return PluginConfig(where, configs, default_key, tuple(warnings))


def _read_one(where: str, key: str, text: Any) -> SharingConfig:
    at = f"{where}: data[{key}]"
    if not isinstance(text, str):
        raise PluginConfigError(f"{at}: must be a string holding the config file")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PluginConfigError(f"{at}: not YAML: {str(exc).splitlines()[0]}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise PluginConfigError(f"{at}: must be a mapping (version, flags, sharing)")
    flags = doc.get("flags") or {}
    mig = str(flags.get("migStrategy") or "none") if isinstance(flags, dict) else "none"
    sharing = doc.get("sharing") or {}
    if not isinstance(sharing, dict):
        raise PluginConfigError(f"{at}: sharing: must be a mapping")
    warnings: list[str] = []
    resources: list[SharedResource] = []
    rename = fail = False
    for mode in ("timeSlicing", "mps"):
        section = sharing.get(mode)
        if section is None:
            continue
        path = f"{at}: sharing.{mode}"
        if not isinstance(section, dict):
            raise PluginConfigError(f"{path}: must be a mapping")
        rename = rename or bool(section.get("renameByDefault"))
        fail = fail or bool(section.get("failRequestsGreaterThanOne"))
        entries = section.get("resources") or []
        if not isinstance(entries, list):
            raise PluginConfigError(f"{path}.resources: must be a list")
        for i, entry in enumerate(entries):
            resources.append(
                _resource(f"{path}.resources[{i}]", entry, bool(section.get("renameByDefault")), mode)
            )
        if mode == "mps" and entries:
            warnings.append(
                f"{path}: MPS sharing: the DRA shares keep the count of replicas but not MPS's memory "
                "and compute limits per client; set MPS in the DRA driver's claim config if you need them"
            )
    if fail:
        warnings.append(
            f"{at}: failRequestsGreaterThanOne: the plugin refuses a pod asking for more than one replica; "
            "DRA cannot express that: such a pod gets one share on each of several GPUs instead"
        )
    if mig != "none":
        warnings.append(
            f"{at}: flags.migStrategy {mig}: MIG devices are not published as shares by this plan; keep MIG "
            "nodes on the device plugin or publish their MIG devices with the DRA driver's own classes"
        )
    by_name: dict[str, set[int]] = {}
    for r in resources:
        by_name.setdefault(r.name, set()).add(r.replicas)
    for name, counts in sorted(by_name.items()):
        if len(counts) > 1:
            warnings.append(
                f"{at}: {name}: replicas per GPU differ within a node "
                f"({', '.join(map(str, sorted(counts)))}); "
                "one class takes one share per unit, so a unit is a different part of each GPU"
            )
    return SharingConfig(key, tuple(resources), rename, fail, mig, tuple(warnings))


def _resource(path: str, entry: Any, rename_by_default: bool, mode: str) -> SharedResource:
    if not isinstance(entry, dict):
        raise PluginConfigError(f"{path}: must be a mapping (name, replicas)")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise PluginConfigError(f"{path}.name: Required value")
    replicas = entry.get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas <= 0:
        raise PluginConfigError(f"{path}.replicas: Invalid value: {replicas!r}: must be a positive integer")
    renamed = entry.get("rename")
    if renamed is not None and (not isinstance(renamed, str) or not renamed):
        raise PluginConfigError(f"{path}.rename: Invalid value: {renamed!r}: must be a resource name")
    advertised = renamed or (name + SHARED_SUFFIX if rename_by_default else name)
    return SharedResource(advertised, replicas, name, mode)
