"""`init`, `rotate`, `check` and the controller's reconcile, on top of the pure plan (certs/plan.py) and the
cluster layer (certs/cluster.py)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509

from certs.check import Finding, Remedies, Served, Severity, check_ca_bundle, check_secret, check_served
from certs.cluster import CertCluster, Scope, StoredSecret
from certs.files import CA_CRT, TLS_CRT, TLS_KEY, atomic_write
from certs.material import CA_KEY, MANAGED_BY, MANAGED_BY_LABEL, Material, MaterialError, from_secret
from certs.plan import Change, Force, Observed, Settings, Step, next_step
from certs.served import fetch_served
from certs.verify import parse_bundle


class NotManaged(Exception):
    """The Secret exists but was not made by `certs init`: it is never overwritten."""


def service_dns_names(service: str, namespace: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The names a serving certificate must carry. The API server dials `<service>.<namespace>.svc`, which
    comes last: checks verify against the last name."""
    names = [f"{service}", f"{service}.{namespace}", *extra, f"{service}.{namespace}.svc"]
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    seen.remove(f"{service}.{namespace}.svc")
    return (*seen, f"{service}.{namespace}.svc")


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass
class Outcome:
    """What one reconcile did: the step, the caBundles it (re)wrote, the configurations not found."""

    step: Step | None
    injected: list[str] = field(default_factory=list)
    missing_configs: list[str] = field(default_factory=list)
    scope: list[str] = field(
        default_factory=list
    )  # which webhooks are managed and which skipped (scope_lines)

    @property
    def changed(self) -> bool:
        return bool(self.injected) or bool(self.step and self.step.changed)

    def lines(self) -> list[str]:
        out = [c.value for c in (self.step.changes if self.step else ())]
        if self.step and self.step.reasons:
            out.append("because " + "; ".join(self.step.reasons))
        out += [f"set caBundle of {name}" for name in self.injected]
        out += [
            f"webhook configuration {name} not found (nothing to inject)" for name in self.missing_configs
        ]
        if self.step and self.step.waiting:
            out.append(f"waiting for {self.step.waiting}")
        return out


def _material(stored: StoredSecret | None, where: str) -> Material | None:
    if stored is None:
        return None
    try:
        return from_secret(stored.data, stored.annotations)
    except MaterialError as exc:
        if stored.labels.get(MANAGED_BY_LABEL) != MANAGED_BY and CA_KEY not in stored.data:
            raise NotManaged(
                f"{where} exists and holds no {CA_KEY}: it was not made by `dra-capacity certs` and is left "
                "alone (delete it to let init create one, or use the chart's existing-Secret mode)"
            ) from None
        raise MaterialError(f"{where}: {exc}") from None


def served_certificates(
    cluster: CertCluster, endpoints: Sequence[tuple[str, int]] | None, server_name: str
) -> list[Served]:
    targets = list(endpoints) if endpoints is not None else cluster.endpoints()
    return [fetch_served(host, port, server_name=server_name) for host, port in targets]


def reconcile(
    cluster: CertCluster,
    settings: Settings,
    *,
    now: datetime.datetime | None = None,
    force: Force | None = None,
    create_only: bool = False,
    endpoints: Sequence[tuple[str, int]] | None = None,
) -> Outcome:
    """Read, plan one step, write it, and make every caBundle equal the Secret's `ca.crt`.

    `create_only` is `init`: create the material when the Secret is absent, otherwise change nothing but a
    caBundle that differs. Conflicts propagate (certs.cluster.Conflict): the caller reconciles again.
    """
    now = now or now_utc()
    where = f"secret {cluster.namespace}/{cluster.secret}"
    stored = cluster.read_secret()
    material = _material(stored, where)
    step: Step
    if material is not None and create_only:
        step = Step(material)
    else:
        observed = Observed()
        if material is not None:
            entries, _ = cluster.webhook_entries()
            signer = material.signer.certificate
            trust = all(e.ca_bundle and signer in _certs(e.ca_bundle) for e in entries)
            served: list[x509.Certificate] | None = None
            if len(material.bundle) > 1:
                seen = served_certificates(cluster, endpoints, settings.dns_names[-1])
                served = (
                    None
                    if any(s.certificate is None for s in seen)
                    else [s.certificate for s in seen if s.certificate is not None]
                )
            observed = Observed(configs_trust_signer=trust, served=served)
        step = next_step(material, settings, now, observed, force)
    if step.changed:
        cluster.write_secret(step.material, stored)
    injected = cluster.inject(step.material.bundle_pem)
    scope = cluster.scope() if cluster.configs else Scope([], [], [])
    return Outcome(step, injected, scope.missing, scope_lines(cluster, scope))


def scope_lines(cluster: CertCluster, scope: Scope) -> list[str]:
    """One line per configuration whose caBundle `certs` manages (naming its webhooks), and one per webhook it
    skips because the webhook does not call the Service (a `url:` webhook, another Service), saying why."""
    managed: dict[str, list[str]] = {}
    for e in scope.entries:
        managed.setdefault(f"{e.config_kind}/{e.config_name}", []).append(e.webhook_name)
    lines = [
        f"manages caBundle of {config} ({'webhook' if len(hooks) == 1 else 'webhooks'} {', '.join(hooks)})"
        for config, hooks in managed.items()
    ]
    service = f"{cluster.namespace}/{cluster.service}"
    lines += [
        f"skips {s.config_kind}/{s.config_name} webhook {s.webhook_name}: it calls {s.calls}, not service "
        f"{service}; certs sets caBundle only on webhooks that call the Service, so set this one's yourself"
        for s in scope.skipped
    ]
    return lines


def _certs(pem: bytes) -> list[x509.Certificate]:
    try:
        return parse_bundle(pem)
    except ValueError:
        return []


def mirror_files(stored: StoredSecret | None, directory: Path) -> bool:
    """Write the Secret's `ca.crt`, `tls.key`, `tls.crt` into `directory` where they differ (atomic renames,
    key first; the webhook's reloader waits for a matching pair). True when something was written."""
    if stored is None or not stored.data.get(TLS_CRT) or not stored.data.get(TLS_KEY):
        return False
    directory.mkdir(parents=True, exist_ok=True)
    wrote = False
    for name, mode in ((CA_CRT, 0o644), (TLS_KEY, 0o600), (TLS_CRT, 0o644)):
        data = stored.data.get(name)
        if data is None:
            continue
        path = directory / name
        try:
            if path.read_bytes() == data:
                continue
        except OSError:
            pass
        atomic_write(path, data, mode)
        wrote = True
    return wrote


@dataclass
class Report:
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.PROBLEM for f in self.findings)


def check(
    cluster: CertCluster,
    dns_names: Sequence[str],
    remedies: Remedies,
    *,
    now: datetime.datetime | None = None,
    endpoints: Sequence[tuple[str, int]] | None = None,
    warning: datetime.timedelta | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Everything `certs check` looks at: the Secret, every caBundle, and each replica's certificate."""
    now = now or now_utc()
    where = f"secret {cluster.namespace}/{cluster.secret}"
    stored = cluster.read_secret()
    kwargs = {"warning": warning} if warning is not None else {}
    findings, leaf, _bundle = check_secret(
        where, stored.data if stored else None, dns_names, now, remedies, **kwargs
    )
    served = served_certificates(cluster, endpoints, dns_names[-1])
    if not served:
        findings.append(
            Finding(
                Severity.NOTE, f"service {cluster.namespace}/{cluster.service}", "no ready replica to check"
            )
        )
    findings += check_served(served, leaf, dns_names, now, remedies, **kwargs)
    leaves = [("in the Secret", leaf)] if leaf is not None else []
    leaves += [(f"served by {s.endpoint}", s.certificate) for s in served if s.certificate is not None]
    scope = cluster.scope()
    entries = scope.entries
    for name in scope.missing:
        findings.append(Finding(Severity.PROBLEM, f"webhook configuration {name}", "not found"))
    service = f"{cluster.namespace}/{cluster.service}"
    for s in scope.skipped:
        findings.append(
            Finding(
                Severity.NOTE,
                f"{s.config_kind}/{s.config_name} webhook {s.webhook_name}",
                f"skipped: it calls {s.calls}, not service {service}; its caBundle is neither checked nor "
                "managed by certs",
            )
        )
    for e in entries:
        findings += check_ca_bundle(
            f"{e.config_kind}/{e.config_name} webhook {e.webhook_name}",
            e.ca_bundle,
            leaves,
            dns_names[-1],
            now,
            remedies,
        )
    return Report(findings)


__all__ = [
    "Change",
    "Force",
    "NotManaged",
    "Outcome",
    "Report",
    "Settings",
    "check",
    "mirror_files",
    "reconcile",
    "scope_lines",
]
