"""The canary's eval set against a stand-in server: each case rendered by its own prompt, and the attack set
judged on the replies (an obedient model against a faithful one). The trained demo model on real vLLM is in
test_canary.py (its gates include the attack set)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import MODEL
from fake_upstream import FakeUpstream, serving

from ai_platform.errors import EvalSetError, GateError
from ai_platform.evaluation.gates import by_metric, judge
from ai_platform.evaluation.stage import evaluate_prompts, load_cases
from ai_platform.platform_repo import git
from ai_platform.prompts.compiler import compile_file
from ai_platform.specs import snapshot_model_spec

SUMMARY_PROMPT = """\
system: "Summarize each clause of the contract in one line."
user: "{{input_pdf_text}}"
output_schema: {"clauses": ["string"]}
"""


def commit(repo: Path, files: dict[str, str], spec_change: dict[str, object] | None = None) -> None:
    for relative, text in files.items():
        (repo / relative).write_text(text, encoding="utf-8")
    if spec_change:
        path = repo / f"models/{MODEL}.yaml"
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec.update(spec_change)
        path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "test change")


def documents(repo: Path, *names: str) -> dict[str, dict[str, object]]:
    return {name: compile_file(repo / f"prompts/{name}.prompt").document for name in names}


def test_each_case_is_rendered_by_its_own_prompt(own_demo_repo: Path, tmp_path: Path) -> None:
    cases = [json.loads(line) for line in (own_demo_repo / "evals/contract_review.jsonl").read_text().splitlines()]
    two = [cases[0], {**cases[1], "prompt": "clause_summary"}]
    spec = yaml.safe_load((own_demo_repo / f"models/{MODEL}.yaml").read_text(encoding="utf-8"))
    canary = {**spec["canary"], "evals": ["evals/two.jsonl"]}
    commit(
        own_demo_repo,
        {
            "prompts/clause_summary.prompt": SUMMARY_PROMPT,
            "evals/two.jsonl": "".join(json.dumps(c) + "\n" for c in two),
        },
        {"prompts": ["contract_review", "clause_summary"], "canary": canary},
    )
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)
    prompts = documents(own_demo_repo, "contract_review", "clause_summary")
    with serving(FakeUpstream(default='{"risk_points": []}')) as upstream:
        run = evaluate_prompts(snap, prompts, upstream.url, "challenger", "sha256:" + "a" * 64, "sha256:" + "b" * 64)
    systems = {r["messages"][-1]["content"]: r["messages"][0]["content"] for r in upstream.requests}
    assert systems[two[0]["vars"]["input_pdf_text"]].startswith("你是")  # the contract reviewer's own system prompt
    assert systems[two[1]["vars"]["input_pdf_text"]] == "Summarize each clause of the contract in one line."
    assert run.prompts == ["contract_review", "clause_summary"]
    assert set(run.versions) == {"contract_review", "clause_summary"}
    # each reply is checked against its own prompt's schema: `{"risk_points": []}` is not a clause summary
    assert [s.schema_valid for s in run.scores] == [True, False]


def test_a_case_naming_a_prompt_the_spec_does_not_serve_is_an_eval_set_error(
    own_demo_repo: Path, tmp_path: Path
) -> None:
    case = {"id": "x", "vars": {"input_pdf_text": "合同"}, "prompt": "clause_sumary"}
    spec = yaml.safe_load((own_demo_repo / f"models/{MODEL}.yaml").read_text(encoding="utf-8"))
    commit(
        own_demo_repo,
        {"evals/bad.jsonl": json.dumps(case) + "\n"},
        {"canary": {**spec["canary"], "evals": ["evals/bad.jsonl"]}},
    )
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)
    with pytest.raises(EvalSetError, match=r"evals/bad.jsonl:1: prompt 'clause_sumary' is not one the spec serves"):
        load_cases(snap)


@pytest.mark.parametrize("fields", [{}, ["kind"], None])
def test_a_case_with_malformed_expected_fields_is_an_eval_set_error(
    own_demo_repo: Path, tmp_path: Path, fields: object
) -> None:
    """Scored as a risk review expecting no risks instead, such a case passed any reply that found none."""
    case = {"id": "x", "vars": {"input_pdf_text": "合同"}, "expected": {"fields": fields}}
    spec = yaml.safe_load((own_demo_repo / f"models/{MODEL}.yaml").read_text(encoding="utf-8"))
    commit(
        own_demo_repo,
        {"evals/bad.jsonl": json.dumps(case) + "\n"},
        {"canary": {**spec["canary"], "evals": ["evals/bad.jsonl"]}},
    )
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)
    with pytest.raises(EvalSetError, match=r"evals/bad.jsonl:1: expected.fields must be a non-empty object"):
        load_cases(snap)


def attack_run(repo: Path, home: Path, reply: str, role: str):
    spec = yaml.safe_load((repo / f"models/{MODEL}.yaml").read_text(encoding="utf-8"))
    if spec["canary"]["evals"] != ["evals/attacks.jsonl"]:
        commit(repo, {}, {"canary": {**spec["canary"], "evals": ["evals/attacks.jsonl"]}})
    snap = snapshot_model_spec(repo, home, MODEL)
    with serving(FakeUpstream(default=reply)) as upstream:
        return evaluate_prompts(snap, documents(repo, "contract_review"), upstream.url, role, "i", "b"), snap


def test_the_attack_set_separates_an_obedient_model_from_a_faithful_one(own_demo_repo: Path, tmp_path: Path) -> None:
    cases = [json.loads(line) for line in (own_demo_repo / "evals/attacks.jsonl").read_text().splitlines()]
    assert {c["language"] for c in cases} >= {"zh", "en"} and all(c["attack"]["obeyed_if"] for c in cases)
    markers = " ".join(m for c in cases for m in c["attack"]["obeyed_if"])
    obedient = json.dumps({"risk_points": [{"point": markers, "level": "低", "basis": "", "suggestion": ""}]})
    faithful = json.dumps({"risk_points": []}, ensure_ascii=False)

    challenger, snap = attack_run(own_demo_repo, tmp_path / "home", obedient, "challenger")
    champion, _ = attack_run(own_demo_repo, tmp_path / "home", faithful, "champion")
    assert challenger.metrics["injection_obey_rate"] == 1.0
    assert champion.metrics["injection_obey_rate"] == 0.0
    assert [s.obeyed for s in champion.scores] == [False] * len(cases)

    verdicts = by_metric(judge(snap.spec.canary.gates, challenger.scores, champion.scores))
    gate = verdicts["injection_obey_rate"]
    assert not gate.passed and "vs champion 0" in gate.detail, gate.detail


def test_an_eval_set_without_attack_cases_cannot_pass_an_obey_rate_gate(own_demo_repo: Path, tmp_path: Path) -> None:
    spec = yaml.safe_load((own_demo_repo / f"models/{MODEL}.yaml").read_text(encoding="utf-8"))
    commit(own_demo_repo, {}, {"canary": {**spec["canary"], "evals": ["evals/contract_review.jsonl"]}})
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)
    with serving(FakeUpstream(default='{"risk_points": []}')) as upstream:
        run = evaluate_prompts(snap, documents(own_demo_repo, "contract_review"), upstream.url, "challenger", "i", "b")
    verdicts = by_metric(judge(snap.spec.canary.gates, run.scores, None))
    assert not verdicts["injection_obey_rate"].passed
    assert "could not be measured" in verdicts["injection_obey_rate"].detail


def test_a_gate_on_the_retired_input_score_says_what_replaced_it() -> None:
    from ai_platform.config import Gate

    with pytest.raises(GateError, match="gate on injection_obey_rate"):
        judge([Gate(metric="injection_max", max=0.5)], [], None)
    with pytest.raises(GateError, match="did you mean 'coherence'"):
        judge([Gate(metric="coherance", min=0.2)], [], None)


def test_canary_generations_are_never_rewritten_and_labels_keep_their_reply(
    own_demo_repo: Path, tmp_path: Path
) -> None:
    from ai_platform.evaluation.stage import CanaryResult, record
    from ai_platform.feedback.ingest import ingest
    from ai_platform.warehouse import Warehouse

    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)
    warehouse = Warehouse(tmp_path / "w.duckdb")
    prompts = documents(own_demo_repo, "contract_review")

    def canary_run(reply: str) -> str:
        with serving(FakeUpstream(default=reply)) as upstream:
            run = evaluate_prompts(snap, prompts, upstream.url, "challenger", "sha256:" + "1" * 64, "b")
        run.passed = True
        record(warehouse, snap, CanaryResult(run, None), target="embedded", idle_color="blue")
        return run.run_id

    first = canary_run('{"risk_points": []}')
    _, rows = warehouse.query("SELECT generation_id FROM canary_generations WHERE eval_run_id = ? ORDER BY 1", [first])
    labeled = rows[0][0]
    assert labeled.startswith(f"canary-{first}-")
    labels = tmp_path / "labels.csv"
    labels.write_text(f"generation_id,reviewer,label,labeled_at\n{labeled},ana,missed_risk,2026-02-01T10:00:00Z\n")
    assert [r.accepted for r in ingest([labels], warehouse)] == [1]

    second = canary_run('{"risk_points": [{"point": "x", "level": "高", "basis": "y", "suggestion": "z"}]}')
    _, counts = warehouse.query(
        "SELECT c.eval_run_id, count(*) FROM generations JOIN canary_generations c USING (generation_id) GROUP BY 1"
    )
    assert sorted(counts) == sorted([(first, 32), (second, 32)])  # 32 new ids, none reused
    _, joined = warehouse.query(
        "SELECT g.output, c.eval_run_id FROM feedback_labels l JOIN generations g USING (generation_id)"
        " JOIN canary_generations c USING (generation_id)"
    )
    assert joined == [('{"risk_points": []}', first)]  # the label still names the reply it was given on


def test_the_migration_keeps_old_canary_rows_and_ties_them_to_their_run(tmp_path: Path) -> None:
    import duckdb

    from ai_platform.warehouse import Warehouse, migrations

    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
        " checksum VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    for m in [m for m in migrations() if m.version <= 9]:
        con.execute(m.sql)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?, now())", [m.version, m.name, m.checksum])
    at = "TIMESTAMPTZ '2026-01-05 09:00:00+00'"
    con.execute(f"INSERT INTO eval_runs (run_id, model, role, started_at) VALUES ('run-1', 'm', 'challenger', {at})")
    con.execute(
        "INSERT INTO generations (generation_id, model, prompt_name, prompt_version, source, output, created_at)"
        f" VALUES ('canary-case-0000', 'm', 'p', 'v', 'canary', 'the old reply', {at})"
    )
    con.close()
    assert 10 in Warehouse(path).migrate()
    _, rows = Warehouse(path).query(
        "SELECT generation_id, output, eval_run_id FROM generations JOIN canary_generations USING (generation_id)"
    )
    assert rows == [("canary-case-0000", "the old reply", "run-1")]
