"""`dra-capacity certs init|rotate|check|controller`: the webhook's certificates without cert-manager.

    dra-capacity certs init|rotate|check|controller [--kubeconfig PATH] --namespace NS --secret NAME
                       --service NAME [--webhook-config NAME ...]

Exit status: 0 success; 1 `check` found a problem (or `rotate --wait` ran out of time); 2 bad usage, an
unreachable cluster or a refused API call (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from typing import Any

PROG = "dra-capacity certs"

DESCRIPTION = """\
Self-managed certificates for the webhook: a private CA (5 years) and a serving certificate (1 year) for
the Service's DNS names, kept in a kubernetes.io/tls Secret (with ca.crt and ca.key added) and injected as
caBundle into the webhook configurations.

  init        create them when the Secret is absent; run again and nothing changes
  rotate      renew what is due (the serving certificate at 2/3 of its life, the CA too); --force-leaf and
              --force-ca renew now. A CA rotation keeps the old CA in caBundle until every replica serves
              a certificate from the new one
  check       report expiry, key/certificate mismatch, SAN mismatch, and a caBundle that does not verify
              the served certificate; exit 1 on a problem, saying what to run
  controller  all of the above, leader-elected, inside the webhook Deployment
  cleanup     delete the webhook configurations (the chart's pre-delete hook)"""


def _duration(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"{value!r} must not be negative")
    return seconds


def _endpoint(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{value!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def _config_ref(value: str) -> Any:
    from certs.cluster import ConfigRef

    try:
        return ConfigRef.parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: in-cluster, then $KUBECONFIG or ~/.kube/config)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context")
    parser.add_argument(
        "--namespace", required=True, metavar="NS", help="namespace of the Secret and Service"
    )
    parser.add_argument("--secret", required=True, metavar="NAME", help="the kubernetes.io/tls Secret")
    parser.add_argument(
        "--service", required=True, metavar="NAME", help="the webhook Service (names the SANs)"
    )
    parser.add_argument(
        "--webhook-config",
        action="append",
        default=[],
        type=_config_ref,
        metavar="NAME",
        help="webhook configuration whose webhooks for --service get the caBundle; NAME means both kinds, "
        "validating/NAME or mutating/NAME one (repeatable)",
    )
    parser.add_argument(
        "--dns-name", action="append", default=[], metavar="NAME", help="extra SAN (repeatable)"
    )


def add_commands(sub: Any) -> None:
    """Register `certs` and its four actions on the top-level subparsers."""
    certs = sub.add_parser(
        "certs",
        help="create, rotate and check the webhook's certificates (no cert-manager needed)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = certs.add_subparsers(dest="certs_action", metavar="ACTION")
    actions.required = True

    init = actions.add_parser("init", help="create the CA, serving certificate and Secret; inject caBundle")
    _common(init)
    init.set_defaults(func=run_init)

    rotate = actions.add_parser("rotate", help="renew what is due (or forced), one safe step at a time")
    _common(rotate)
    rotate.add_argument("--force-leaf", action="store_true", help="renew the serving certificate now")
    rotate.add_argument("--force-ca", action="store_true", help="start a CA rotation now")
    rotate.add_argument(
        "--propagation-delay",
        type=_duration,
        default=60.0,
        metavar="SECONDS",
        help="time for a new caBundle to reach every API server before the certificate switches (default 60)",
    )
    rotate.add_argument(
        "--wait",
        type=_duration,
        default=0.0,
        metavar="SECONDS",
        help="keep stepping until the rotation completes, for at most SECONDS (default 0: one pass)",
    )
    rotate.add_argument(
        "--endpoint",
        action="append",
        type=_endpoint,
        metavar="HOST:PORT",
        help="replica to check instead of the Service's EndpointSlices (repeatable)",
    )
    rotate.set_defaults(func=run_rotate)

    check = actions.add_parser("check", help="report certificate problems; exit 1 when there is one")
    _common(check)
    check.add_argument(
        "--endpoint",
        action="append",
        type=_endpoint,
        metavar="HOST:PORT",
        help="replica to check instead of the Service's EndpointSlices (repeatable)",
    )
    check.add_argument(
        "--expiry-warning",
        type=_duration,
        default=30 * 86400.0,
        metavar="SECONDS",
        help="a certificate ending sooner than this is a problem (default 30 days)",
    )
    check.add_argument("-o", "--output", choices=("text", "json"), default="text")
    check.set_defaults(func=run_check)

    cleanup = actions.add_parser(
        "cleanup",
        help="delete the webhook configurations (uninstall), and with --delete-secret the managed Secret",
    )
    _common(cleanup)
    cleanup.add_argument(
        "--delete-secret", action="store_true", help="also delete the Secret, if `certs` created it"
    )
    cleanup.add_argument(
        "--stop-deployment",
        action="append",
        default=[],
        metavar="NAME",
        help="scale this Deployment (in --namespace) to 0 and wait for its pods to go, before deleting the "
        "Secret and Leases (repeatable)",
    )
    cleanup.add_argument(
        "--delete-lease",
        action="append",
        default=[],
        metavar="NAME",
        help="also delete this Lease in --namespace (leader election; repeatable)",
    )
    cleanup.add_argument(
        "--stop-timeout",
        type=_duration,
        default=120.0,
        metavar="SECONDS",
        help="how long to wait for the stopped Deployments' pods (default 120)",
    )
    cleanup.set_defaults(func=run_cleanup)

    controller = actions.add_parser("controller", help="run init/rotate leader-elected, mirror the files")
    _common(controller)
    controller.add_argument(
        "--tls-dir", metavar="DIR", help="write tls.crt, tls.key and ca.crt here for the webhook to serve"
    )
    controller.add_argument(
        "--lease-name", metavar="NAME", help="Lease for leader election (default <secret>-certs)"
    )
    controller.add_argument(
        "--lease-namespace", metavar="NS", help="namespace of the Lease (default --namespace)"
    )
    controller.add_argument(
        "--identity",
        metavar="ID",
        help="leader-election identity (default $POD_NAME, else the host name, and a UUID)",
    )
    controller.add_argument(
        "--health-listen",
        default="0.0.0.0:8081",
        type=_endpoint_listen,
        metavar="HOST:PORT",
        help="plain-HTTP /healthz and /readyz (default 0.0.0.0:8081; port 0 disables)",
    )
    controller.add_argument(
        "--endpoint",
        action="append",
        type=_endpoint,
        metavar="HOST:PORT",
        help="replica to check instead of the Service's EndpointSlices (repeatable)",
    )
    controller.add_argument(
        "--resync",
        type=_duration,
        default=30.0,
        metavar="SECONDS",
        help="reconcile at least this often (default 30)",
    )
    controller.add_argument(
        "--retry",
        type=_duration,
        default=2.0,
        metavar="SECONDS",
        help="Lease renewal and retry period (default 2)",
    )
    controller.add_argument(
        "--lease-duration",
        type=_duration,
        default=15.0,
        metavar="SECONDS",
        help="a leader silent this long is replaced (default 15)",
    )
    controller.add_argument(
        "--propagation-delay",
        type=_duration,
        default=60.0,
        metavar="SECONDS",
        help="time for a new caBundle to reach every API server (default 60)",
    )
    controller.set_defaults(func=run_controller)


def _endpoint_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r}: expected HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def _error(action: str, message: str) -> int:
    print(f"{PROG} {action}: error: {message}", file=sys.stderr)
    return 2


def _connect(args: argparse.Namespace) -> Any:
    """The cluster of --kubeconfig/--context, else kubectl's defaults, else in-cluster (`kubeio.config`, the
    one loader)."""
    from kubeio.config import connect

    return connect(args.kubeconfig, args.context, kubectl_defaults=True)


def _setup(args: argparse.Namespace, propagation: float = 60.0) -> tuple[Any, Any, Any]:
    from certs.cluster import CertCluster
    from certs.operations import service_dns_names
    from certs.plan import Settings

    kube = _connect(args)
    cluster = CertCluster(kube, args.namespace, args.secret, args.service, args.webhook_config)
    names = service_dns_names(args.service, args.namespace, args.dns_name)
    settings = Settings(dns_names=names, propagation_delay=datetime.timedelta(seconds=propagation))
    return kube, cluster, settings


def _remedies(args: argparse.Namespace) -> Any:
    from certs.check import Remedies

    flags = f"--namespace {args.namespace} --secret {args.secret} --service {args.service}"
    if args.kubeconfig:
        flags = f"--kubeconfig {args.kubeconfig} " + flags
    for ref in args.webhook_config:
        prefix = (
            "" if len(ref.kinds) > 1 else ("validating/" if "validating" in ref.kinds[0] else "mutating/")
        )
        flags += f" --webhook-config {prefix}{ref.name}"
    return Remedies(
        rotate_leaf=f"dra-capacity certs rotate {flags} --force-leaf",
        rotate_ca=f"dra-capacity certs rotate {flags} --force-ca --wait 600",
        init=f"dra-capacity certs init {flags}",
        inject=f"dra-capacity certs init {flags}   (re-injects caBundle from the Secret)",
    )


def _guard(action: str, body: Any) -> int:
    """Run `body()`, turning every expected failure into one line and exit 2."""
    from certs.cluster import ClusterError, Conflict
    from certs.material import MaterialError
    from certs.operations import NotManaged
    from kubeio.config import ClusterConfigError
    from kubeio.kube import ApiError

    try:
        result: int = body()
        return result
    except (ClusterError, Conflict, MaterialError, NotManaged, ClusterConfigError) as exc:
        return _error(action, str(exc))
    except ApiError as exc:  # a request outside CertCluster (the Lease): still one line
        return _error(action, f"cannot reach the cluster: {exc}" if exc.status == 0 else str(exc))
    except OSError as exc:
        return _error(action, f"cannot reach the cluster: {exc}")


def run_init(args: argparse.Namespace) -> int:
    def body() -> int:
        from certs.operations import reconcile

        _, cluster, settings = _setup(args)
        outcome = reconcile(cluster, settings, create_only=True)
        for line in [
            *outcome.scope,
            *(outcome.lines() or ["nothing to do: the Secret and every caBundle are in place"]),
        ]:
            print(f"certs init: {line}")
        return 0

    return _guard("init", body)


def run_rotate(args: argparse.Namespace) -> int:
    def body() -> int:
        from certs.cluster import Conflict
        from certs.operations import reconcile
        from certs.plan import Force

        _, cluster, settings = _setup(args, args.propagation_delay)
        force = Force(leaf=args.force_leaf, ca=args.force_ca)
        deadline = time.monotonic() + args.wait
        any_change = False
        scope_said = False
        while True:
            try:
                outcome = reconcile(cluster, settings, force=force, endpoints=args.endpoint)
            except Conflict as exc:
                print(f"certs rotate: {exc}; reading again")
                continue
            for line in outcome.scope if not scope_said else []:
                print(f"certs rotate: {line}")
            scope_said = True
            for line in outcome.lines():
                if outcome.changed or not line.startswith("waiting"):
                    print(f"certs rotate: {line}")
            any_change = any_change or outcome.changed
            if outcome.step is not None and outcome.step.changed:
                force = Force()  # a forced renewal happens once
            waiting = outcome.step.waiting if outcome.step else None
            if waiting is None:
                if not any_change:
                    print("certs rotate: nothing is due")
                return 0
            if time.monotonic() >= deadline:
                print(f"certs rotate: waiting for {waiting}; run rotate again (or let the controller finish)")
                return 1 if args.wait > 0 else 0
            time.sleep(min(1.0, max(deadline - time.monotonic(), 0.0)))

    return _guard("rotate", body)


def run_check(args: argparse.Namespace) -> int:
    def body() -> int:
        from certs.operations import check

        _, cluster, settings = _setup(args)
        report = check(
            cluster,
            settings.dns_names,
            _remedies(args),
            endpoints=args.endpoint,
            warning=datetime.timedelta(seconds=args.expiry_warning),
        )
        if args.output == "json":
            print(
                json.dumps(
                    {
                        "ok": report.ok,
                        "findings": [
                            {
                                "severity": f.severity.value,
                                "subject": f.subject,
                                "message": f.message,
                                "fix": f.remedy,
                            }
                            for f in report.findings
                        ],
                    },
                    indent=2,
                )
            )
        else:
            for f in report.findings:
                print(f.render(), file=sys.stdout if f.severity.value == "note" else sys.stderr)
            print("certs check: ok" if report.ok else "certs check: problems found")
        return 0 if report.ok else 1

    return _guard("check", body)


def run_cleanup(args: argparse.Namespace) -> int:
    def body() -> int:
        from certs.uninstall import delete_leases, stop_deployments

        kube, cluster, _ = _setup(args)
        deleted = cluster.delete_configs()
        for name in deleted:
            print(f"certs cleanup: deleted {name}")
        for line in stop_deployments(kube, args.namespace, args.stop_deployment, args.stop_timeout):
            print(f"certs cleanup: {line}")
        if args.delete_secret and cluster.delete_secret():
            print(f"certs cleanup: deleted secret {args.namespace}/{args.secret}")
        for name in delete_leases(kube, args.namespace, args.delete_lease):
            print(f"certs cleanup: deleted {name}")
        if not deleted:
            print("certs cleanup: no webhook configuration left to delete")
        return 0

    return _guard("cleanup", body)


def run_controller(args: argparse.Namespace) -> int:
    def body() -> int:
        import logging
        from pathlib import Path

        from certs.controller import Controller, ControllerOptions
        from kubeio.election import LeaderElector
        from procrt.identity import identity
        from procrt.logs import configure, log_event
        from procrt.manager import Manager

        kube, cluster, settings = _setup(args, args.propagation_delay)
        instance = identity(args.identity)
        # One JSON line per action (procrt/logs.py), as `serve` and `bind` write theirs; library warnings too.
        (logger,) = configure(["dra_capacity.certs"], root=True)
        host, port = args.health_listen
        manager = Manager(logger, name="certs", health=(host, port) if port else None)
        # The elector renews on its thread; a Lease request may take the lease's time.
        elector = LeaderElector(
            kube,
            args.lease_namespace or args.namespace,
            args.lease_name or f"{args.secret}-certs"[:63],
            instance,
            lease_duration=args.lease_duration,
            request_timeout=args.lease_duration,
        )
        manager.elect(elector)
        options = ControllerOptions(
            tls_dir=Path(args.tls_dir) if args.tls_dir else None,
            endpoints=tuple(args.endpoint) if args.endpoint else None,
            resync=args.resync,
            retry=args.retry,
            renew=False,
        )

        def emit(line: str) -> None:
            log_event(logger, logging.INFO, line, identity=instance)

        controller = Controller(cluster, settings, elector, options, emit=emit)
        manager.on_elected(controller.wake.set)
        manager.add_readyz_check(controller.not_ready)
        manager.add(controller)
        try:
            manager.start()
        except OSError as exc:
            return _error("controller", f"cannot listen on {host}:{port}: {exc.strerror or exc}")
        emit(f"certs controller started for secret {args.namespace}/{args.secret}")
        code = manager.run()
        emit("certs controller stopped")
        return code

    return _guard("controller", body)
