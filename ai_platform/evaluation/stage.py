"""The canary_eval stage: the candidate (and the live champion, if any) on real vLLM, scored and gated.

The candidate is served from its model image record (unpacked and held to its
digests), with the prompts of its prompt bundle record; the champion is the
live release the backend keeps (`Backend.live`), served the same way with its
own bundle. Both answer the same eval cases; every gate is judged on the
candidate's per-case results, absolutely or paired case by case with the
champion's (evaluation/gates.py). Where the servers run (vLLM subprocesses
here, or Deployments in a cluster) is the execution backend's business:
`run_canary` is handed the backend itself (`Servers`, which
`ai_platform.backend.Backend` satisfies) and the records, nothing else.
"""

from __future__ import annotations

import json
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from ai_platform.config import Canary, Platform
from ai_platform.detectors.injection import InjectionClassifier, injection_score
from ai_platform.errors import EvalSetError
from ai_platform.evaluation.attacks import markers
from ai_platform.evaluation.gates import Verdict, by_metric, judge
from ai_platform.evaluation.scoring import CaseScore, aggregate, run_and_score
from ai_platform.logs import Log
from ai_platform.oci.layout import OciLayout
from ai_platform.prompts import bundle
from ai_platform.prompts.render import input_text, request_body
from ai_platform.records import CanaryPass, LiveRelease, ModelImage, PromptBundle
from ai_platform.specs import SpecSnapshot
from ai_platform.warehouse import Warehouse, insert_generations


class Servers(Protocol):
    """What the canary asks of the execution backend (`ai_platform.backend.Backend` is one; the protocol is
    restated here because the backend package sits above this one)."""

    def live(self, platform: Platform, model: str) -> LiveRelease | None: ...

    def release(self, snap: SpecSnapshot, image: str) -> str: ...

    def serve_candidate(
        self, snap: SpecSnapshot, image: ModelImage, log: Log, *, champion: bool = False
    ) -> AbstractContextManager[str]: ...


@dataclass
class EvalRun:
    run_id: str
    role: str  # champion | challenger
    image_digest: str
    bundle_digest: str
    cases: list[dict[str, Any]]
    prompts: list[str]  # each case's prompt
    versions: dict[str, str]  # prompt name -> its version (the compiled document's digest)
    scores: list[CaseScore]
    outputs: list[str]
    metrics: dict[str, float]
    started_at: datetime
    finished_at: datetime
    passed: bool | None = None
    spotlight: dict[str, str] = field(default_factory=dict)  # prompt name -> how it renders untrusted variables


@dataclass
class CanaryResult:
    candidate: EvalRun
    champion: EvalRun | None
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    image: ModelImage | None = None  # the candidate's records, which a pass hands to the rollout
    bundle: PromptBundle | None = None
    gates: list[Verdict] = field(default_factory=list)  # one per spec gate, with its statistics (`verdicts` merges)

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts.values())

    @property
    def record(self) -> CanaryPass:
        assert self.image is not None and self.bundle is not None, "run_canary sets the candidate's records"
        return CanaryPass(self.image, self.bundle, self.candidate.run_id)


def load_cases(snap: SpecSnapshot) -> list[dict[str, Any]]:
    """Every eval set's cases, each checked: a string id (unique), `vars`, a prompt the spec serves, and a
    well-formed `attack` if it is one."""
    cases: list[dict[str, Any]] = []
    seen: set[str] = set()
    for relative in snap.spec.canary.evals:
        path = snap.platform.file(relative)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{relative}:{number}"
            try:
                case = json.loads(line)
            except ValueError as exc:
                raise EvalSetError(f"{where}: not JSON: {exc}") from None
            if (
                not isinstance(case, dict)
                or not isinstance(case.get("id"), str)
                or not isinstance(case.get("vars"), dict)
            ):
                raise EvalSetError(f"{where}: a case needs a string 'id' and an object 'vars'")
            if case["id"] in seen:
                raise EvalSetError(f"{where}: duplicate case id {case['id']!r}")
            prompt = case.setdefault("prompt", snap.spec.prompts[0])
            if prompt not in snap.spec.prompts:
                raise EvalSetError(
                    f"{where}: prompt {prompt!r} is not one the spec serves ({', '.join(snap.spec.prompts)})"
                )
            markers(case, where)
            expected = case.get("expected")
            if isinstance(expected, dict) and "fields" in expected:
                fields = expected["fields"]
                if not isinstance(fields, dict) or not fields:
                    # else the case would be scored as a risk review expecting no risks: 1.0 for any reply
                    raise EvalSetError(f"{where}: expected.fields must be a non-empty object (field -> value)")
            seen.add(case["id"])
            cases.append(case)
    if not cases:
        raise EvalSetError(f"{', '.join(snap.spec.canary.evals)}: no eval cases")
    return cases


def request(canary: Canary, document: dict[str, Any], case: dict[str, Any], model: str) -> dict[str, Any]:
    body = request_body(document, case["vars"], model=model)
    body.setdefault("temperature", 0)  # gates judge reproducible replies unless the prompt says otherwise
    body.setdefault("max_tokens", canary.max_tokens)
    return body


def evaluate(
    snap: SpecSnapshot, base_url: str, role: str, image: ModelImage, prompt_bundle: PromptBundle, log: Log = print
) -> EvalRun:
    """The eval set, each case as its own prompt in the bundle renders it, against a server of the image."""
    prompts = bundle.load(OciLayout(prompt_bundle.layout), prompt_bundle.digest)
    return evaluate_prompts(snap, prompts, base_url, role, image.digest, prompt_bundle.digest, log)


def evaluate_prompts(
    snap: SpecSnapshot,
    prompts: dict[str, dict[str, Any]],
    base_url: str,
    role: str,
    image_digest: str,
    bundle_digest: str,
    log: Log = print,
) -> EvalRun:
    """The eval set against `base_url`, each case rendered by its own prompt from `prompts` (name -> document)."""
    platform, canary = snap.platform, snap.spec.canary
    cases = load_cases(snap)
    missing = sorted({c["prompt"] for c in cases} - set(prompts))
    if missing:
        raise EvalSetError(f"prompt bundle {bundle_digest[:19]} has no prompt {missing[0]!r}; the eval set uses it")
    documents = [prompts[c["prompt"]] for c in cases]
    injection = injection_score
    if canary.injection_model:
        injection = InjectionClassifier.from_path(platform.file(canary.injection_model)).score

    def progress(done: int, total: int, failed: int) -> None:
        log(f"{role}: {done}/{total} cases answered" + (f", {failed} failed" if failed else ""))

    started = datetime.now(UTC)
    replies, scores = run_and_score(
        base_url,
        cases,
        [input_text(d, c["vars"]) for d, c in zip(documents, cases, strict=True)],
        [request(canary, d, c, snap.spec.name) for d, c in zip(documents, cases, strict=True)],
        [d["output_schema"] for d in documents],
        concurrency=canary.concurrency,
        timeout_s=canary.timeout_s,
        retries=canary.retries,
        injection=injection,
        embedding_cache=platform.artifacts_path / "embeddings",
        progress=progress,
    )
    finished = datetime.now(UTC)
    store = platform.artifacts()
    versions = {name: store.put_json(prompts[name]) for name in sorted({c["prompt"] for c in cases})}  # = version
    spotlight = {name: prompts[name].get("spotlight", {}).get("mode", "off") for name in versions}
    metrics = aggregate(scores)
    log(
        f"{role}: {len(cases)} cases in {(finished - started).total_seconds():.1f} s, schema valid"
        f" {metrics['schema_valid_rate']:.0%}, task recall {metrics['task_recall']:.3f},"
        f" errors {metrics['error_rate']:.0%}"
        + (f", hidden instructions obeyed {metrics['injection_obey_rate']:.0%}" if metrics["attack_cases"] else "")
    )
    return EvalRun(
        uuid.uuid4().hex,
        role,
        image_digest,
        bundle_digest,
        cases,
        [c["prompt"] for c in cases],
        versions,
        scores,
        [r.content for r in replies],
        metrics,
        started,
        finished,
        spotlight=spotlight,
    )


def run_canary(
    snap: SpecSnapshot,
    model_image: ModelImage,
    prompt_bundle: PromptBundle,
    *,
    backend: Servers,
    log: Log = print,
) -> CanaryResult:
    """The candidate (and the backend's live release, if any) against the eval set, judged by the gates."""
    live = backend.live(snap.platform, snap.spec.name)
    champion = None
    with backend.serve_candidate(snap, model_image, log) as base_url:  # this release: new settings, new server
        candidate = evaluate(snap, base_url, "challenger", model_image, prompt_bundle, log)
        # A champion whenever users are served something else: other weights, prompts or server settings (a
        # serving-only commit keeps the image and bundle digests and changes the release).
        candidate_release = backend.release(snap, model_image.digest)
        if live is not None and (live.release, live.bundle) != (candidate_release, prompt_bundle.digest):
            if live.model_image is None or live.prompt_bundle is None:
                log(
                    f"the live release ({live.image[:19]}) was recorded by an older platform, without its image and"
                    " bundle records: no champion to compare with until a rollout by this version"
                )
            else:  # the champion as users get it: usually the live server
                with backend.serve_candidate(snap, live.model_image, log, champion=True) as live_url:
                    champion = evaluate(snap, live_url, "champion", live.model_image, live.prompt_bundle, log=log)
    verdicts = judge(snap.spec.canary.gates, candidate.scores, champion.scores if champion else None)
    result = CanaryResult(candidate, champion, by_metric(verdicts), model_image, prompt_bundle, verdicts)
    candidate.passed = result.passed
    return result


def record(warehouse: Warehouse, snap: SpecSnapshot, result: CanaryResult, *, target: str, idle_color: str) -> None:
    """eval_runs, eval_cases and the candidate's replies; a `rejected` deployments row on a failure."""
    runs = [r for r in (result.candidate, result.champion) if r is not None]
    eval_set = ",".join(snap.spec.canary.evals)
    with warehouse.write() as con:
        if not result.passed:  # the incumbent stays live; the deployments log says which candidate and why
            failed = "; ".join(v.detail for v in result.verdicts.values() if not v.passed)
            con.execute(
                "INSERT INTO deployments (deployment_id, model, target, color, image_digest, bundle_digest,"
                " status, reason, ended_at) VALUES (?, ?, ?, ?, ?, ?, 'rejected', ?, now())",
                [
                    uuid.uuid4().hex,
                    snap.spec.name,
                    target,
                    idle_color,
                    result.candidate.image_digest,
                    result.candidate.bundle_digest,
                    f"canary gates failed: {failed}",
                ],
            )
        for run in runs:
            con.execute(
                "INSERT INTO eval_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    run.run_id,
                    snap.spec.name,
                    run.role,
                    run.image_digest,
                    run.bundle_digest,
                    eval_set,
                    json.dumps(run.metrics),
                    run.passed,
                    run.started_at,
                    run.finished_at,
                ],
            )
            con.executemany(
                "INSERT INTO eval_cases VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        run.run_id,
                        s.case_id,
                        run.versions[c["prompt"]],
                        json.dumps(c["vars"], ensure_ascii=False),
                        out,
                        s.schema_valid,
                        s.finish_reason,
                        s.latency_s,
                        json.dumps(s.metrics(), ensure_ascii=False),
                    ]
                    for c, s, out in zip(run.cases, run.scores, run.outputs, strict=True)
                ],
            )
        # Until the gateway logs real traffic, the candidate's canary replies are generations reviewers can
        # label. Their ids name the eval run: a generation is never rewritten, so a label keeps its meaning.
        run = result.candidate
        rows = [
            [
                canary_generation_id(run.run_id, s.case_id),
                snap.spec.name,
                c["prompt"],
                run.versions[c["prompt"]],
                run.image_digest,
                "canary",
                json.dumps(c["vars"], ensure_ascii=False),
                out,
                json.dumps(s.metrics(), ensure_ascii=False),
                s.finish_reason,
                s.latency_s,
                None,
                None,
                run.started_at,
            ]
            for c, s, out in zip(run.cases, run.scores, run.outputs, strict=True)
        ]
        insert_generations(con, rows)
        con.executemany("INSERT INTO canary_generations VALUES (?, ?)", [[row[0], run.run_id] for row in rows])


def canary_generation_id(run_id: str, case_id: str) -> str:
    """A canary reply's generation id: its eval run and case, so no two runs share one."""
    return f"canary-{run_id}-{case_id}"
