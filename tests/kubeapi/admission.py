"""Admission webhooks of the kube-apiserver TEST DOUBLE: registered Mutating then Validating webhook
configurations, called over HTTPS and verified against their `caBundle`, as
`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/` does it:

* matching (`predicates/rules/rules.go`, `predicates/namespace/matcher.go`, `predicates/object/matcher.go`):
  `rules` (operations, apiGroups, apiVersions, resources with `*` and `*/status` forms, scope), `matchPolicy`
  (Equivalent also matches a rule naming another version of the same group/resource; the double serves one
  version, so the object sent is the served version, without conversion), `namespaceSelector`,
  `objectSelector`, and `matchConditions` (CEL, `matchconditions/matcher.go`, evaluated with cel-expr-python
  over `object`, `oldObject`, `request` and `namespaceObject`; `authorizer` is not provided);
* calling (`request/admissionreview.go`, `mutating/dispatcher.go`, `validating/dispatcher.go`):
AdmissionReview
  v1, `?timeout=<timeoutSeconds>s` on the URL, `failurePolicy` Fail/Ignore, the dry-run check of
  `sideEffects`, JSONPatch responses, `reinvocationPolicy: IfNeeded` (one reinvocation pass), validating
  webhooks in parallel with the first failure in registration order returned;
* results: a denial is the Status `errors/statuserror.go` ToStatusErr builds; a call failure with
  failurePolicy Fail is `Internal error occurred: failed calling webhook "<name>": failed to call webhook:
  ...`
  (`staging/src/k8s.io/apiserver/pkg/util/webhook/error.go`); warnings become `Warning` headers.

Requests for the webhook configurations themselves are never sent to webhooks, as upstream exempts them.
A `clientConfig.service` is routed through `Admission.services[(namespace, name)] = (host, port)` (there is no
cluster DNS); the TLS server name checked is still `<name>.<namespace>.svc`.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import ssl
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import jsonpatch

from . import schema, statuses, strategies
from .resources import BY_KEY, ResourceType
from .selectors import label_selector_object, matches_labels
from .store import Obj

if TYPE_CHECKING:
    from .double import KubeAPIServer
    from .server import RequestContext, RequestInfo

EXEMPT = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")
# resource.k8s.io versions an Equivalent rule may name for the same resources (served as v1 here).
EQUIVALENT_VERSIONS = {"resource.k8s.io": ("v1", "v1beta1", "v1beta2", "v1alpha3")}


@dataclass
class Attributes:
    """admission.Attributes: what the request is about."""

    rt: ResourceType
    subresource: str
    namespace: str
    name: str
    operation: str
    user: dict[str, Any]
    dry_run: bool
    kind: dict[str, str]
    options: dict[str, Any]

    @property
    def resource_path(self) -> str:
        return f"{self.rt.plural}/{self.subresource}" if self.subresource else self.rt.plural


class CallError(Exception):
    """webhookutil.ErrCallingWebhook: the webhook could not be called or answered nonsense."""


class Rejection(Exception):
    """webhookutil.ErrWebhookRejection: the webhook denied the request."""

    def __init__(self, error: statuses.ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def x509_error(err: Exception, server_name: str) -> str:
    """Go's crypto/x509 wording for the common verification failures (Python's ssl reports OpenSSL codes)."""
    code = getattr(err, "verify_code", None)
    if code in (2, 18, 19, 20, 21):  # no issuer / self-signed / unable to get local issuer / unable to verify
        return "x509: certificate signed by unknown authority"
    if code == 62:  # hostname mismatch (Go also lists the names the certificate is valid for)
        return f"x509: certificate is not valid for {server_name}"
    if code in (9, 10):
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {getattr(err, 'verify_message', err)}"


def _go_duration(seconds: int) -> str:
    return f"{seconds}s"


class Admission:
    """The two webhook admission plugins, in upstream order: MutatingAdmissionWebhook, then (after native
    validation) ValidatingAdmissionWebhook."""

    def __init__(self, double: KubeAPIServer) -> None:
        self.double = double
        self.services: dict[tuple[str, str], tuple[str, int]] = {}
        self._session: aiohttp.ClientSession | None = None
        self._ssl: dict[bytes, ssl.SSLContext] = {}
        self._cel: dict[str, Any] = {}
        self.calls: list[dict[str, Any]] = []  # every AdmissionReview sent: {"webhook", "review", "response"}
        # the webhooks of each configuration kind, kept until a configuration of that kind is written
        self._configured: dict[str, tuple[int, list[tuple[str, dict[str, Any]]]]] = {}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ------------------------------------------------------------------ hooks for the registry
    def hooks(
        self, rt: ResourceType, info: RequestInfo, ctx: RequestContext, operation: str
    ) -> tuple[
        Callable[[Obj, Obj | None], Awaitable[Obj]] | None,
        Callable[[Obj | None, Obj | None], Awaitable[None]] | None,
    ]:
        if rt.plural in EXEMPT and rt.group == "admissionregistration.k8s.io":
            return None, None
        kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        if info.subresource == "binding":
            kind = {"group": "", "version": "v1", "kind": "Binding"}
        options_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}[
            operation
        ]
        options: dict[str, Any] = {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}
        if ctx.query.get("fieldManager"):
            options["fieldManager"] = ctx.query["fieldManager"]
        if ctx.dry_run:
            options["dryRun"] = ["All"]

        def attrs(obj: Obj | None, old: Obj | None) -> Attributes:
            name = info.name or str(((obj or old or {}).get("metadata") or {}).get("name") or "")
            return Attributes(
                rt, info.subresource, info.namespace, name, operation, ctx.user, ctx.dry_run, kind, options
            )

        async def mutate(obj: Obj, old: Obj | None) -> Obj:
            return await self.run_mutating(attrs(obj, old), obj, old, ctx)

        async def validate(obj: Obj | None, old: Obj | None) -> None:
            await self.run_validating(attrs(obj, old), obj, old, ctx)

        return mutate, validate

    # ------------------------------------------------------------------ configurations
    def _webhooks(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        rt = BY_KEY[f"{kind}.admissionregistration.k8s.io"]
        store = self.double.store
        with store.lock:
            version = store.writes[rt.storage_key]
            cached = self._configured.get(kind)
            if cached is not None and cached[0] == version:
                return cached[1]
            items = store.snapshot(rt)  # read-only: stored objects are replaced, never changed in place
        out: list[tuple[str, dict[str, Any]]] = []
        for cfg in sorted(items, key=lambda o: str(o["metadata"]["name"])):
            for wh in cfg.get("webhooks") or []:
                out.append((str(cfg["metadata"]["name"]), wh))
        self._configured[kind] = (version, out)
        return out

    # ------------------------------------------------------------------ matching
    @staticmethod
    def _rule_matches(rule: dict[str, Any], a: Attributes, equivalent: bool) -> bool:
        ops = rule.get("operations") or []
        if "*" not in ops and a.operation not in ops:
            return False
        groups = rule.get("apiGroups") or []
        if "*" not in groups and a.rt.group not in groups:
            return False
        versions = rule.get("apiVersions") or []
        equivalent_ok = equivalent and any(v in EQUIVALENT_VERSIONS.get(a.rt.group, ()) for v in versions)
        if "*" not in versions and a.rt.version not in versions and not equivalent_ok:
            return False
        resources = rule.get("resources") or []
        want = a.resource_path
        ok = False
        for r in resources:
            res, _, sub = r.partition("/")
            if (
                r == "*/*"
                or r == want
                or (res == "*" and not sub and not a.subresource)
                or (res == "*" and sub and sub == a.subresource)
                or (res == a.rt.plural and sub == "*" and a.subresource)
            ):
                ok = True
        if not ok:
            return False
        scope = rule.get("scope") or "*"
        if scope == "Cluster" and a.rt.namespaced:
            return False
        return not (scope == "Namespaced" and not a.rt.namespaced)

    def _namespace_object(self, a: Attributes, obj: Obj | None, old: Obj | None) -> Obj | None:
        if a.rt.key == "namespaces":
            return obj or old
        if not a.rt.namespaced:
            return None
        return self.double.store.get(BY_KEY["namespaces"], "", a.namespace)

    def _selectors_match(self, wh: dict[str, Any], a: Attributes, obj: Obj | None, old: Obj | None) -> bool:
        ns_sel = label_selector_object(wh.get("namespaceSelector") or {})
        if a.rt.namespaced or a.rt.key == "namespaces":
            ns = self._namespace_object(a, obj, old)
            labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
            if ns_sel is None or not matches_labels(ns_sel, labels):
                return False
        obj_sel = label_selector_object(wh.get("objectSelector") or {})
        if obj_sel is None:
            return False
        if not obj_sel:
            return True
        return any(
            o is not None and matches_labels(obj_sel, (o.get("metadata") or {}).get("labels") or {})
            for o in (obj, old)
        )

    def _match_conditions(self, wh: dict[str, Any], variables: dict[str, Any]) -> bool:
        """True when every matchCondition is true; CallError-like failure raises ValueError."""
        conditions = wh.get("matchConditions") or []
        if not conditions:
            return True
        from cel_expr_python import cel
        from google.protobuf import descriptor_pool

        env = self._cel.get("env")
        if env is None:
            env = cel.NewEnv(
                descriptor_pool.Default(),
                variables={k: cel.Type.DYN for k in ("object", "oldObject", "request", "namespaceObject")},
            )
            self._cel["env"] = env
        activation = env.Activation(variables)
        for cond in conditions:
            expr = str(cond.get("expression") or "")
            try:
                program = self._cel.get(expr) or env.compile(expr)
            except RuntimeError as e:
                raise ValueError(f"matchCondition {cond.get('name')!r}: compilation failed: {e}") from e
            self._cel[expr] = program
            result = program.eval(activation)
            value = result.value()
            if result.type() == cel.Type.ERROR:
                raise ValueError(f"matchCondition {cond.get('name')!r}: {value}")
            if value is False:
                return False
            if value is not True:
                raise ValueError(f"matchCondition {cond.get('name')!r}: must evaluate to bool")
        return True

    # ------------------------------------------------------------------ calling
    def _ssl_context(self, ca_bundle: str | None) -> ssl.SSLContext:
        key = (ca_bundle or "").encode()
        ctx = self._ssl.get(key)
        if ctx is None:
            ctx = ssl.create_default_context()
            if ca_bundle:
                ctx = ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())
            self._ssl[key] = ctx
        return ctx

    def _target(self, wh: dict[str, Any]) -> tuple[str, str, str | None]:
        """(URL shown in errors, URL connected to, TLS server name)."""
        cc = wh.get("clientConfig") or {}
        timeout = _go_duration(int(wh.get("timeoutSeconds") or 10))
        if cc.get("url"):
            url = str(cc["url"])
            sep = "&" if "?" in url else "?"
            full = f"{url}{sep}timeout={timeout}"
            return full, full, None
        svc = cc.get("service") or {}
        name, ns = str(svc.get("name", "")), str(svc.get("namespace", ""))
        port = int(svc.get("port") or 443)
        path = str(svc.get("path") or "")
        host = f"{name}.{ns}.svc"
        shown = f"https://{host}:{port}{path}?timeout={timeout}"
        route = self.services.get((ns, name))
        if route is None:
            raise CallError(f'Post "{shown}": service "{ns}/{name}" has no route in the kubeapi double')
        return shown, f"https://{route[0]}:{route[1]}{path}?timeout={timeout}", host

    def _review(self, a: Attributes, obj: Obj | None, old: Obj | None) -> dict[str, Any]:
        group_resource = {"group": a.rt.group, "version": a.rt.version, "resource": a.rt.plural}
        req: dict[str, Any] = {
            "uid": str(uuid.uuid4()),
            "kind": a.kind,
            "resource": group_resource,
            "requestKind": a.kind,
            "requestResource": group_resource,
            "name": a.name,
            "operation": a.operation,
            "userInfo": {k: v for k, v in a.user.items() if k in ("username", "uid", "groups", "extra")},
            "object": obj,
            "oldObject": old,
            "dryRun": a.dry_run,
            "options": a.options,
        }
        if a.subresource:
            req["subResource"] = a.subresource
            req["requestSubResource"] = a.subresource
        if a.rt.namespaced or a.rt.key == "namespaces":
            req["namespace"] = a.namespace
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}

    async def _call(self, wh: dict[str, Any], review: dict[str, Any]) -> dict[str, Any]:
        if "v1" not in (wh.get("admissionReviewVersions") or []):
            raise CallError("webhook does not accept v1 AdmissionReview")
        shown, url, server_name = self._target(wh)
        timeout = int(wh.get("timeoutSeconds") or 10)
        ca = (wh.get("clientConfig") or {}).get("caBundle")
        if self._session is None:
            self._session = aiohttp.ClientSession()
        kwargs: dict[str, Any] = {"ssl": self._ssl_context(ca)}
        if server_name:
            kwargs["server_hostname"] = server_name
        try:
            async with self._session.post(
                url, json=review, timeout=aiohttp.ClientTimeout(total=timeout), **kwargs
            ) as resp:
                raw = await resp.read()
                if resp.status != 200:
                    raise CallError(f'Post "{shown}": the server responded with status {resp.status}')
        except TimeoutError as e:
            raise CallError(f'Post "{shown}": context deadline exceeded') from e
        except aiohttp.ClientConnectorCertificateError as e:
            detail = x509_error(e.certificate_error, server_name or urllib.parse.urlsplit(url).hostname or "")
            raise CallError(f'Post "{shown}": tls: failed to verify certificate: {detail}') from e
        except aiohttp.ClientConnectorError as e:
            parts = urllib.parse.urlsplit(url)
            target = f"{parts.hostname}:{parts.port or 443}"
            if isinstance(e.os_error, ConnectionRefusedError):
                raise CallError(f'Post "{shown}": dial tcp {target}: connect: connection refused') from e
            raise CallError(f'Post "{shown}": dial tcp {target}: {e.os_error}') from e
        except aiohttp.ClientError as e:
            raise CallError(f'Post "{shown}": {e}') from e
        try:
            body = json.loads(raw)
            response = body["response"]
        except (ValueError, KeyError, TypeError) as e:
            raise CallError(f"received invalid webhook response: {e}") from e
        if not isinstance(response, dict):
            raise CallError("received invalid webhook response: response is not an object")
        want = review["request"]["uid"]
        if response.get("uid") != want:
            raise CallError(f'expected response.uid="{want}", got "{response.get("uid")}"')
        self.calls.append({"webhook": wh.get("name"), "review": review, "response": response})
        return response

    @staticmethod
    def to_status_error(a: Attributes, webhook: str, result: dict[str, Any] | None) -> statuses.ApiError:
        """`ToStatusErr` (errors/statuserror.go), field for field, as a real v1.37.2 answers (calibrated in
        tests/kubeapi/test_admission.py): the webhook's Status itself, its code raised to at least 400, its
        message prefixed with `admission webhook "<name>" denied the request`; no reason or details are made
        up, and the causes keep only metav1.StatusCause's fields (`reason`, `message`, `field`)."""
        del a
        r = copy.deepcopy(result) if isinstance(result, dict) else {}
        code = int(r.get("code") or 0)
        code = max(code, 400)
        denied = f'admission webhook "{webhook}" denied the request'
        if r.get("message"):
            message = f"{denied}: {r['message']}"
        elif r.get("reason"):
            message = f"{denied}: {r['reason']}"
        else:
            message = f"{denied} without explanation"
        details = r.get("details")
        if isinstance(details, dict) and isinstance(details.get("causes"), list):
            details["causes"] = [
                {k: c[k] for k in ("reason", "message", "field") if c.get(k)}
                for c in details["causes"]
                if isinstance(c, dict)
            ]
        err = statuses.ApiError(code, str(r.get("reason") or ""), message, details or None)
        status = r.get("status")
        err.status_override = "Failure" if status in (None, "", "Success") else str(status)
        return err

    async def _invoke(
        self,
        name: str,
        wh: dict[str, Any],
        a: Attributes,
        obj: Obj | None,
        old: Obj | None,
        ctx: RequestContext,
    ) -> dict[str, Any] | None:
        """Match and call one webhook: its response, or None when it does not apply or failed open."""
        if not any(
            self._rule_matches(r, a, wh.get("matchPolicy") == "Equivalent") for r in wh.get("rules") or []
        ):
            return None
        if not self._selectors_match(wh, a, obj, old):
            return None
        review = self._review(a, obj, old)
        fail_closed = (wh.get("failurePolicy") or "Fail") == "Fail"
        variables = {
            "object": obj,
            "oldObject": old,
            "request": review["request"],
            "namespaceObject": self._namespace_object(a, obj, old),
        }
        try:
            if not self._match_conditions(wh, variables):
                return None
        except ValueError as e:
            if not fail_closed:
                return None
            raise Rejection(statuses.forbidden(a.rt, a.name, str(e))) from e
        if a.dry_run and wh.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise Rejection(
                statuses.bad_request(f'admission webhook "{wh.get("name")}" does not support dry run')
            )
        try:
            response = await self._call(wh, review)
        except CallError as e:
            if not fail_closed:
                return None
            raise Rejection(
                statuses.internal(f'failed calling webhook "{wh.get("name")}": failed to call webhook: {e}')
            ) from e
        for w in response.get("warnings") or []:
            ctx.warn(str(w))
        if not response.get("allowed"):
            raise Rejection(self.to_status_error(a, str(wh.get("name")), response.get("status")))
        return response

    async def run_mutating(self, a: Attributes, obj: Obj, old: Obj | None, ctx: RequestContext) -> Obj:
        hooks = self._webhooks("mutatingwebhookconfigurations")
        if not hooks:
            return obj
        current = obj
        seen_by: dict[int, Obj] = {}
        changed = False
        for pass_no in (0, 1):
            for i, (cfg, wh) in enumerate(hooks):
                if pass_no == 1 and (
                    wh.get("reinvocationPolicy") != "IfNeeded" or i not in seen_by or seen_by[i] == current
                ):
                    continue
                try:
                    response = await self._invoke(cfg, wh, a, current, old, ctx)
                except Rejection as r:
                    raise r.error from None
                if response is None:
                    continue
                seen_by[i] = current
                patch = response.get("patch")
                if patch:
                    if response.get("patchType") != "JSONPatch":
                        raise statuses.internal(
                            f'failed calling webhook "{wh.get("name")}": '
                            f'unsupported patch type "{response.get("patchType")}"'
                        )
                    try:
                        ops = json.loads(base64.b64decode(patch))
                        patched = jsonpatch.apply_patch(current, ops)
                    except (ValueError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
                        raise statuses.internal(f'failed calling webhook "{wh.get("name")}": {e}') from e
                    schema.prune(a.rt, patched)
                    strategies.apply_defaults(a.rt, patched)
                    if patched != current:
                        current = patched
                        changed = True
                    seen_by[i] = current
            if not changed:
                break
        return current

    async def run_validating(
        self, a: Attributes, obj: Obj | None, old: Obj | None, ctx: RequestContext
    ) -> None:
        hooks = self._webhooks("validatingwebhookconfigurations")
        if not hooks:
            return
        results = await asyncio.gather(
            *(self._invoke(cfg, wh, a, obj, old, ctx) for cfg, wh in hooks), return_exceptions=True
        )
        for res in results:
            if isinstance(res, Rejection):
                raise res.error
            if isinstance(res, BaseException):
                raise res
