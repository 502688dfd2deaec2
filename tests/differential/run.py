"""The differential run: draw objects (or take the extracted test inputs), judge each on both sides, compare,
and sum up what disagrees, by key (tests/differential/compare.py).

Besides the per-object comparison it measures what the issue asks separately: CEL compile-verdict agreement
(per selector: does each side refuse it), cost-limit agreement (per selector either side calls `too complex`),
and the KEP-6406 carriers: the server accepts the annotation, and adding the annotation (both sides) or the
field (ours; the server does not know it) never changes a native verdict.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from differential.compare import Comparison, Disagreement, compare, is_listed
from differential.objgen import NAMESPACE, STRATEGIES
from differential.server import Server
from dra_capacity.apiverdict import Cause, Judge, Verdict
from resourceapi.gates import FeatureGates
from resourceapi.validation.claim_status import StatusGates

ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"
KEP_FIELD = "extendedResourceCapacityRequests"
_SELECTOR = re.compile(r"^spec\.selectors\[(\d+)\]\.cel\.expression$")
TOO_COMPLEX = "too complex, exceeds cost limit"
KINDS = tuple(STRATEGIES)


def draw_many(kind: str, count: int, seed: int) -> list[dict[str, Any]]:
    """`count` objects of `kind` from its Hypothesis strategy, reproducibly from `seed` (fewer if Hypothesis
    runs out of distinct examples, which the strategies' size makes unlikely)."""
    return draw_from(STRATEGIES[kind](), count, seed)


def draw_from(strategy: Any, count: int, seed: int) -> list[dict[str, Any]]:
    """`count` examples of `strategy`, reproducibly from `seed` (Hypothesis's generate phase only)."""
    out: list[dict[str, Any]] = []

    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis_seed(seed)
    @given(strategy)
    def collect(obj: dict[str, Any]) -> None:
        out.append(obj)

    collect()
    return out


@dataclass
class KindReport:
    compared: int = 0
    verdict: int = 0  # objects whose verdicts differ
    objects_disagreeing: int = 0
    keys: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    cel_type_text: int = 0


@dataclass
class Report:
    seed: int
    kinds: dict[str, KindReport] = field(default_factory=dict)
    cel_selectors: int = 0
    cel_agree: int = 0
    cost_cases: int = 0
    cost_agree: int = 0
    carrier_checks: int = 0

    def kind(self, kind: str) -> KindReport:
        return self.kinds.setdefault(kind, KindReport())

    def record(self, kind: str, comparison: Comparison, label: str = "") -> None:
        k = self.kind(kind)
        k.cel_type_text += comparison.cel_type_text
        if comparison.disagreements:
            k.objects_disagreeing += 1
        if comparison.verdict:
            k.verdict += 1
        for d in comparison.disagreements:
            k.keys[d.key] += 1
            k.examples.setdefault(d.key, f"{label}{d.detail}")

    def unlisted(self, listed: list[str]) -> Counter[str]:
        out: Counter[str] = Counter()
        for k in self.kinds.values():
            for key, n in k.keys.items():
                if not is_listed(key, listed):
                    out[key] += n
        return out

    def lines(self, listed: list[str]) -> list[str]:
        out = [f"seed: {self.seed}"]
        for kind, k in self.kinds.items():
            out.append(
                f"{kind}: {k.compared} compared, {k.verdict} verdict disagreements, "
                f"{k.objects_disagreeing} objects with any disagreement, {k.cel_type_text} CEL type texts"
            )
            for key, n in sorted(k.keys.items(), key=lambda kv: (-kv[1], kv[0])):
                mark = "listed" if is_listed(key, listed) else "UNLISTED"
                out.append(f"  {n:6d}  {mark:8s} {key}")
                out.append("          e.g. " + k.examples[key][:400].replace("\n", "\\n"))
        out.append(
            f"CEL compile verdicts: {self.cel_agree}/{self.cel_selectors} selectors agree; "
            f"cost limit: {self.cost_agree}/{self.cost_cases} near-limit selectors agree"
        )
        out.append(f"KEP-6406 carriers: {self.carrier_checks} annotation/field checks")
        return out


def _prepare(obj: dict[str, Any]) -> dict[str, Any]:
    """What both sides judge: namespaced kinds in the test namespace, and without the KEP-6406 field (the
    server refuses it as unknown; the carrier checks judge it separately)."""
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata")
    if obj.get("kind") in ("ResourceClaim", "ResourceClaimTemplate") and isinstance(meta, dict):
        meta["namespace"] = NAMESPACE
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.pop(KEP_FIELD, None)
    return obj


def _generated_name(obj: dict[str, Any], theirs: Verdict) -> Verdict:
    """For an object named by `generateName` only, the server judges the name it generated (random suffix)
    at `metadata.name`; `validate` judges the prefix and says so at `metadata.generateName` (its documented
    behavior: docs/validation.md). Put the server's causes in those terms before comparing."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("name") or not isinstance(meta.get("generateName"), str):
        return theirs
    prefix = meta["generateName"]
    causes = []
    for c in theirs.causes:
        if c.field == "metadata.name" and c.message.startswith('Invalid value: "'):
            value_end = c.message.index('": ', 16)
            c = Cause("metadata.generateName", c.reason, f'Invalid value: "{prefix}{c.message[value_end:]}')
        causes.append(c)
    return Verdict(theirs.allowed, theirs.code, tuple(causes), theirs.message)


def _selector_verdicts(v: Verdict) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for c in v.causes:
        m = _SELECTOR.match(c.field)
        if m:
            out.setdefault(int(m.group(1)), set()).add(c.message)
    return out


def _cel_agreement(report: Report, obj: dict[str, Any], ours: Verdict, theirs: Verdict) -> None:
    if ours.code == 400 or theirs.code == 400:
        return
    spec = obj.get("spec")
    sels = spec.get("selectors") if isinstance(spec, dict) else None
    if not isinstance(sels, list) or len(sels) > 32:
        return
    mine, server = _selector_verdicts(ours), _selector_verdicts(theirs)
    for i in range(len(sels)):
        report.cel_selectors += 1
        report.cel_agree += (i in mine) == (i in server)
        a = any(TOO_COMPLEX in m for m in mine.get(i, ()))
        b = any(TOO_COMPLEX in m for m in server.get(i, ()))
        if a or b:
            report.cost_cases += 1
            report.cost_agree += a == b


def _carrier_values(rng: random.Random) -> str:
    return rng.choice(
        [
            '{"requests": {"shares": "1"}}',
            '{"requests": {"gpu.example.com/memory": "1Gi"}}',
            '{"requests": {"shares": "0"}}',
            '{"requests": {"Bad Name": "1"}}',
            "not json",
            '{"request": {}}',
            "{}",
        ]
    )


def _with_annotation(obj: dict[str, Any], value: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    if isinstance(meta, dict):
        annotations = meta.get("annotations")
        if not isinstance(annotations, dict):
            annotations = meta["annotations"] = {}
        annotations[ANNOTATION] = value
    return out


def _with_field(obj: dict[str, Any], value: str) -> dict[str, Any]:
    """`obj` with the KEP-6406 field holding the carrier's value when that is a JSON object (the field's
    other shapes are the strict decoder's business, which the server has no field to compare with)."""
    out = copy.deepcopy(obj)
    spec = out.get("spec")
    try:
        parsed = json.loads(value)
    except ValueError:
        return out
    if isinstance(spec, dict) and isinstance(parsed, dict):
        spec[KEP_FIELD] = parsed
    return out


def run(
    server: Server,
    judge: Judge,
    objects: Iterable[tuple[str, dict[str, Any]]],
    report: Report,
    carriers_every: int = 5,
    label: Callable[[dict[str, Any]], str] | None = None,
) -> None:
    """Judge every (kind, object) on both sides and record the comparison in `report`. Every
    `carriers_every`-th DeviceClass also gets the KEP-6406 carrier checks."""
    batch = [(kind, _prepare(obj)) for kind, obj in objects]
    theirs_all = list(server.dry_run_many(obj for _, obj in batch))
    rng = random.Random(report.seed)
    carriers: list[tuple[dict[str, Any], Verdict, Verdict, str]] = []
    for n, ((kind, obj), theirs) in enumerate(zip(batch, theirs_all, strict=True)):
        ours = judge.judge(obj)
        theirs = _generated_name(obj, theirs)
        comparison = compare(kind, ours, theirs)
        report.kind(kind).compared += 1
        report.record(kind, comparison, label(obj) if label else "")
        if kind == "DeviceClass":
            _cel_agreement(report, obj, ours, theirs)
            if carriers_every and n % carriers_every == 0 and theirs.code != 400:
                carriers.append((obj, ours, theirs, _carrier_values(rng)))
    if carriers:
        annotated = [_with_annotation(obj, value) for obj, _, _, value in carriers]
        for (obj, ours, theirs, value), with_ann, theirs_ann in zip(
            carriers, annotated, server.dry_run_many(annotated), strict=True
        ):
            report.carrier_checks += 1
            checks: list[tuple[str, Verdict, Verdict]] = [
                ("annotation-changes-server", theirs, _generated_name(with_ann, theirs_ann)),
                ("annotation-changes-ours", ours, judge.judge(with_ann)),
                ("field-changes-ours", ours, judge.judge(_with_field(obj, value))),
            ]
            for name, before, after in checks:
                if compare("DeviceClass", before, after).disagreements:
                    key = f"DeviceClass|{name}|-|-"
                    detail = f"{value!r}: before {before}; after {after}"
                    report.record("DeviceClass", Comparison([Disagreement(key, detail)]))


BATCH = 500


def run_all(
    server: Server,
    judge: Judge,
    report: Report,
    classes: int,
    others: int,
    corpus: bool = True,
    progress: Callable[[str], None] = lambda _: None,
    kinds: Collection[str] = (),
) -> None:
    """The whole differential: the extracted test inputs (`corpus`), then `classes` drawn DeviceClasses and
    `others` of each other kind, from `report.seed`, in batches. `kinds` (default: all, status included as
    `ResourceClaim status`) limits it to some kinds."""
    wanted = set(kinds) or {*KINDS, STATUS_KIND}
    if corpus:
        from differential.corpus import corpus_objects

        run(server, judge, ((k, o) for k, o in corpus_objects() if k in wanted), report)
        progress("corpus done")
    counts = {kind: classes if kind == "DeviceClass" else others for kind in KINDS}
    for index, (kind, count) in enumerate(counts.items()):
        if kind not in wanted:
            continue
        done = 0
        while done < count:
            n = min(BATCH, count - done)
            objs = draw_many(kind, n, report.seed + index * 1_000_003 + done)
            run(server, judge, ((kind, o) for o in objs), report)
            done += n
        progress(f"{kind}: {count} drawn")
    if corpus and STATUS_KIND in wanted:
        from differential.corpus import corpus_objects

        run_corpus_statuses(server, report, corpus_objects(), judge.gates)
        progress(f"{STATUS_KIND}: corpus done")
    if others and STATUS_KIND in wanted:
        run_status(server, report, others, judge.gates)
        progress(f"{STATUS_KIND}: {others} drawn")


STATUS_KIND = "ResourceClaim status"


def draw_statuses(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` status updates (objgen.status_update: a target claim and the status written to it)."""
    from differential.objgen import status_update

    return draw_from(status_update(), count, seed)


FINALIZER = "differential.example.com/hold"


def stored_claims(server: Server, seed: int) -> dict[str, dict[str, Any]]:
    """The claims status updates go to (objgen.STATUS_TARGETS), created for real: `fresh` (no status),
    `allocated` (objgen.STORED_STATUS written) and `deleting` (the same, then deleted while a finalizer holds
    it, so it carries a deletionTimestamp)."""
    from differential.objgen import STATUS_CLAIM_SPEC, STORED_STATUS

    out: dict[str, dict[str, Any]] = {}
    for target in ("fresh", "allocated", "deleting"):
        meta: dict[str, Any] = {"name": f"status-{target}-{seed % 100000}", "namespace": NAMESPACE}
        if target == "deleting":
            meta["finalizers"] = [FINALIZER]
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta}
        stored = server.create({**claim, "spec": STATUS_CLAIM_SPEC})
        if target != "fresh":
            stored = server.update_status(stored, STORED_STATUS)
        if target == "deleting":
            server.delete_now(stored)
            stored = server.get(stored)
        out[target] = stored
    return {target: server.get(stored) for target, stored in out.items()}


def release_claims(server: Server, claims: dict[str, dict[str, Any]]) -> None:
    for stored in claims.values():
        current = server.get(stored)
        if current["metadata"].get("finalizers"):
            current["metadata"]["finalizers"] = []
            server.update(current)
        server.delete(current)


def run_status(
    server: Server,
    report: Report,
    count: int,
    gates: FeatureGates | None = None,
    status_gates: StatusGates | None = None,
) -> None:
    """Claim status rules (allocation, reservedFor, shareID, device status): three claims created for real
    (`stored_claims`), then `count` drawn statuses sent to them as dry-run status updates; ours: the ported
    status-update validation (resourceapi/validation/claim_status.py) of the same update. The differential's
    namespace has no admin-access label. `status_gates`: the server's, where it runs with gates FeatureGates
    does not carry (tests/differential/test_status_gates.py)."""
    from dra_capacity.apiverdict import status_update

    claims = stored_claims(server, report.seed)
    try:
        updates = draw_statuses(count, report.seed + 7)
        with ThreadPoolExecutor(server.workers) as pool:
            verdicts = list(
                pool.map(lambda u: server.dry_run_status(claims[u["target"]], u["status"]), updates)
            )
        for update, theirs in zip(updates, verdicts, strict=True):
            stored = claims[update["target"]]
            new = {**stored, "status": update["status"]}
            ours = status_update(new, stored, gates, admin_namespace=False, status_gates=status_gates)
            report.kind(STATUS_KIND).compared += 1
            report.record(STATUS_KIND, compare(STATUS_KIND, ours, theirs), f"[{update['target']}] ")
    finally:
        release_claims(server, claims)


def run_corpus_statuses(
    server: Server,
    report: Report,
    objects: Iterable[tuple[str, dict[str, Any]]],
    gates: FeatureGates | None = None,
) -> None:
    """The statuses of the corpus' ResourceClaims (the tests' and manifests' committed state): each claim
    created for real without its status, then its status sent as a dry-run status update. A claim the server
    will not create (its spec is the create differential's business) is skipped."""
    from dra_capacity.apiverdict import status_update

    for n, (kind, obj) in enumerate(objects):
        if kind != "ResourceClaim" or not isinstance(obj.get("status"), dict):
            continue
        claim = _prepare(obj)
        claim.pop("status")
        claim["metadata"] = {"name": f"corpus-status-{n}", "namespace": NAMESPACE}
        try:
            stored = server.create(claim)
        except RuntimeError:
            continue
        try:
            theirs = server.dry_run_status(stored, obj["status"])
            ours = status_update({**stored, "status": obj["status"]}, stored, gates, admin_namespace=False)
            report.kind(STATUS_KIND).compared += 1
            report.record(STATUS_KIND, compare(STATUS_KIND, ours, theirs), "[corpus] ")
        finally:
            server.delete(stored)


def shrink(server: Server, judge: Judge, kind: str, key: str, seed: int, max_examples: int = 2000) -> Any:
    """The smallest drawn object showing disagreement `key` (Hypothesis' `find`, which shrinks), or None."""
    from hypothesis import find
    from hypothesis.errors import NoSuchExample

    def shows(obj: dict[str, Any]) -> bool:
        prepared = _prepare(obj)
        found = compare(kind, judge.judge(prepared), server.dry_run(prepared))
        return any(d.key == key for d in found.disagreements)

    try:
        return find(
            STRATEGIES[kind](),
            shows,
            settings=settings(max_examples=max_examples, database=None, deadline=None),
            random=random.Random(seed),
        )
    except NoSuchExample:
        return None


__all__ = ["KINDS", "Report", "draw_many", "run", "run_all", "shrink", "st"]
