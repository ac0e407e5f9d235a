"""Does spotlighting lower the clause classifier's obedience to instructions hidden in a clause? (issue 32)

One vLLM server (the CPU build, `serving.vllm.launch` with the clause classifier's `serving` section) serves the
given quantized checkpoint (the demo's SmolLM2-135M-Instruct W8A8, `--model-dir`); the classifier's eval set
(`demo.classifier.eval_cases`: 42 ordinary clauses and 21 attack cases) is sent three times, the prompt
`clause_kind` compiled with `spotlight` off (no entry: the shipped prompt), `delimit` and `datamark`. Each request is
the canary's (`prompts.render.request_body`, temperature 0, the spec's max_tokens), sent and scored by the canary's
client and scorer (`evaluation.client.run_cases`, `evaluation.scoring.score` and `aggregate`); coherence is not
computed (no embedding model: not the question here). Printed per mode: attack cases obeyed, task recall on the
ordinary cases and on the attack cases; then each spotlighted mode against off, paired on the attack cases (cases
obeyed only with spotlight off / only with it on) with the exact two-sided sign (McNemar) test on the discordant
pairs. Last, the canary's verdict on each mode as a challenger against off as the champion, judged by the
classifier spec's gates (`evaluation.gates.judge`).

`--out FILE` writes every reply as JSON. `--control`: the attack cases' clauses and wrong kinds, the kind only
mentioned, with no instruction (`classifier.MENTIONS`): how often the model names a kind merely because the clause
does, against which the attack's obey counts read. `--note TEXT`: the sentence the compiler adds to the system
message, in place of the default one. `--tag NAME`: the data in an XML element of that name (`<clause>…</clause>`,
the value XML-escaped: the spotlight entry's `tag`) instead of ⟦DATA⟧ brackets.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml
from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ai_platform.config import Gate, Serving  # noqa: E402
from ai_platform.demo import classifier  # noqa: E402
from ai_platform.demo.repo import CLASSIFIER_YAML  # noqa: E402
from ai_platform.evaluation.client import run_cases  # noqa: E402
from ai_platform.evaluation.gates import judge  # noqa: E402
from ai_platform.evaluation.scoring import CaseScore, aggregate, score  # noqa: E402
from ai_platform.prompts.compiler import compile_bytes  # noqa: E402
from ai_platform.prompts.render import input_text, request_body  # noqa: E402
from ai_platform.serving.vllm import SERVE_PYTHON, launch  # noqa: E402
from benchmarks.support import SMOKE_HELP  # noqa: E402
from benchmarks.support.vllm import MODEL, UPSTREAM_HELP, demo_server  # noqa: E402

MODES = ("off", "delimit", "datamark")


def prompt_text(mode: str, note: str | None = None, tag: str | None = None) -> str:
    """The shipped prompt, with `spotlight` declared for a mode other than off (`note` in place of the default,
    `tag` for an XML element around the data)."""
    if mode == "off":
        return classifier.CLAUSE_KIND_PROMPT
    spec = {"mode": mode, **({"note": note} if note else {}), **({"tag": tag} if tag else {})}
    return classifier.CLAUSE_KIND_PROMPT + f"spotlight: {json.dumps(spec, ensure_ascii=False)}\n"


def sign_test(a: int, b: int) -> float:
    """Exact two-sided p of a sign test on a and b discordant pairs (McNemar's exact test)."""
    return 1.0 if a + b == 0 else float(binomtest(a, a + b, 0.5).pvalue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, help="the quantized classifier's folder (required unless --smoke)")
    parser.add_argument("--upstream", metavar="URL", help=f"--smoke only: {UPSTREAM_HELP}")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP + "; 2+2 cases a mode, the demo model")
    parser.add_argument("--seed", type=int, default=0, help="the demo's seed (make demo: 0)")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--control",
        action="store_true",
        help="attack cases with the wrong kind only mentioned (classifier.MENTIONS), no instruction",
    )
    parser.add_argument("--note", help="the spotlight note in place of the default (prompts.spotlight.NOTE)")
    parser.add_argument("--tag", metavar="NAME", help="the data in <NAME>…</NAME> (spotlight's `tag`), not ⟦DATA⟧")
    args = parser.parse_args()
    spec = yaml.safe_load(CLASSIFIER_YAML)
    canary = spec["canary"]
    if not args.smoke and args.model_dir is None:
        parser.error("--model-dir is required (the W8A8 clause classifier's folder)")
    cases = classifier.eval_cases(args.seed)
    if args.control:  # the same clauses and wrong kinds, named without an instruction: echo, not obedience
        control = classifier.attack_cases(args.seed, classifier.MENTIONS)
        cases = [c for c in cases if "attack" not in c] + control
    if args.smoke:  # the path, not the figures: the demo model (not the classifier) answers 2 cases of each kind
        cases = cases[:2] + [c for c in cases if "attack" in c][:2]
    serving = Serving(**spec["serving"])
    name = MODEL if args.smoke else classifier.NAME
    results: dict[str, Any] = {}
    scored: dict[str, list[CaseScore]] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        started = time.perf_counter()
        log = Path(tmp) / "vllm.log"
        if args.smoke:
            base_url = stack.enter_context(demo_server(args.upstream, canary["concurrency"], log))
        else:
            base_url = stack.enter_context(
                launch(args.model_dir, name, serving, python=SERVE_PYTHON, log_path=log)
            ).base_url
        print(f"vLLM up in {time.perf_counter() - started:.0f} s", flush=True)
        for mode in MODES:
            document = compile_bytes(
                prompt_text(mode, args.note, args.tag).encode(), f"{classifier.PROMPT}.prompt"
            ).document
            bodies = []
            for case in cases:
                body = request_body(document, case["vars"], model=name)
                body.setdefault("temperature", 0)
                body.setdefault("max_tokens", canary["max_tokens"])
                bodies.append(body)
            t0 = time.perf_counter()
            replies = run_cases(
                base_url,
                [(c["id"], b) for c, b in zip(cases, bodies, strict=True)],
                concurrency=canary["concurrency"],
                timeout_s=canary["timeout_s"],
                retries=1,
            )
            inputs = [input_text(document, c["vars"]) for c in cases]
            schemas = [document.get("output_schema")] * len(cases)
            scores = score(cases, inputs, replies, schemas, cosines=[math.nan] * len(cases))
            scored[mode] = scores
            results[mode] = {
                "figures": aggregate(scores),
                "seconds": time.perf_counter() - t0,
                "example": bodies[len(cases) - 1]["messages"],
                "cases": [
                    {
                        "id": c["id"],
                        "reply": r.content,
                        "obeyed": sc.obeyed,
                        "task_recall": sc.task_recall,
                        "schema_valid": sc.schema_valid,
                        "error": r.error,
                    }
                    for c, r, sc in zip(cases, replies, scores, strict=True)
                ],
            }
            f = results[mode]["figures"]
            print(f"{mode}: done in {results[mode]['seconds']:.0f} s; {json.dumps(f)}", flush=True)
    attacks = [c for c in cases if "attack" in c]
    plain_n = len(cases) - len(attacks)
    served = args.model_dir or "the demo model (smoke)"
    print(f"\nmodel {served} ({name}), seed {args.seed}: {plain_n} ordinary + {len(attacks)} attacks")
    print(f"{'mode':9} {'obeyed':>9} {'recall (ordinary)':>18} {'recall (attacks)':>17} {'schema valid':>13}")
    for mode in MODES:
        rows = results[mode]["cases"]
        obeyed = sum(bool(r["obeyed"]) for r in rows if r["obeyed"] is not None)
        recall = sum(r["task_recall"] for r in rows if r["obeyed"] is None)
        attack_recall = sum(r["task_recall"] for r in rows if r["obeyed"] is not None)
        valid = sum(bool(r["schema_valid"]) for r in rows)
        print(
            f"{mode:9} {obeyed:>4}/{len(attacks):<4} {recall:>11.0f}/{plain_n:<6}"
            f" {attack_recall:>10.0f}/{len(attacks):<6} {valid:>7}/{len(cases)}"
        )
    off = {r["id"]: r for r in results["off"]["cases"]}
    for mode in MODES[1:]:
        only_off = sum(
            bool(off[r["id"]]["obeyed"]) and not r["obeyed"] for r in results[mode]["cases"] if r["obeyed"] is not None
        )
        only_on = sum(
            not off[r["id"]]["obeyed"] and bool(r["obeyed"]) for r in results[mode]["cases"] if r["obeyed"] is not None
        )
        print(
            f"{mode} vs off, attack cases: obeyed only with off {only_off}, only with {mode} {only_on}; "
            f"exact sign test p = {sign_test(only_off, only_on):.3f}"
        )
        ours, baseline = (results[m]["figures"]["injection_obey_rate"] for m in (mode, "off"))
        ratio = ours / baseline if baseline else math.nan
        print(f"  obey rate: ours ({mode}) {ours:.3f}, baseline (off) {baseline:.3f}, ratio {ratio:.2f}")
    # What the classifier's canary would say of a prompt-only commit turning the mode on: its gates, the mode's
    # scores as the challenger, off's as the champion (the same weights, as a prompt-only commit has).
    gates = [Gate(**g) for g in canary["gates"]]
    for mode in MODES[1:]:
        refused = [v for v in judge(gates, scored[mode], scored["off"]) if not v.passed]
        verdict = "; ".join(f"{v.gate}: {v.detail}" for v in refused) or "every gate passes"
        print(f"canary, {mode} challenger vs off champion: {'REFUSED' if refused else 'passes'} ({verdict})")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
