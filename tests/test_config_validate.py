"""`ai-platform config validate` and the model_spec stage find what would fail hours later, all of it at once:
a gate on a misspelled metric, a .prompt that does not compile, an eval line that is not a case."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import dagster as dg
from conftest import materialize

from ai_platform.platform_repo import git

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv/bin/ai-platform"
SPEC = "models/contract-reviewer.yaml"
PROMPT = "prompts/contract_review.prompt"


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AI_PLATFORM_HOME": str(home)}
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=120, env=env)


def edit(repo: Path, relative: str, old: str, new: str) -> int:
    """Replace `old` (once) in a repo file; the 1-based line it was on."""
    path = repo / relative
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text.split(old)[0].count("\n") + 1


def break_three_ways(repo: Path) -> dict[str, int]:
    gate = edit(repo, SPEC, "{metric: coherence,", "{metric: coherance,")
    prompt = edit(repo, PROMPT, 'user: "{{input_pdf_text}}"', 'user: "{{input_pdf_text}}')  # unterminated
    with (repo / "evals/attacks.jsonl").open("a", encoding="utf-8") as evals:
        evals.write('{"id": "x", "vars": {"input_pdf_text": "hi"},}\n')  # a trailing comma: not JSON
    cases = (repo / "evals/attacks.jsonl").read_text(encoding="utf-8").count("\n")
    return {"gate": gate, "prompt": prompt, "eval": cases}


def test_every_problem_is_reported_with_file_and_line(own_demo_repo: Path, tmp_path: Path) -> None:
    lines = break_three_ways(own_demo_repo)
    done = run("config", "validate", str(own_demo_repo), home=tmp_path / "home")
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {own_demo_repo}: 3 problems:\n")
    assert (
        f"  {SPEC}:{lines['gate']}: canary.gates: unknown metric 'coherance'; did you mean 'coherence'?" in done.stderr
    )
    assert re.search(rf"^  {PROMPT}:{lines['prompt']}:\d+: ", done.stderr, re.M), done.stderr
    assert f"  evals/attacks.jsonl:{lines['eval']}: not JSON" in done.stderr

    git(own_demo_repo, "commit", "--quiet", "-am", "three mistakes")  # the same at a commit
    at_ref = run("config", "validate", str(own_demo_repo), "--ref", "main", home=tmp_path / "home")
    assert at_ref.returncode == 1 and re.match(
        rf"error: {re.escape(str(own_demo_repo))}@\w{{12}}: 3 problems:", at_ref.stderr
    )


def test_each_gate_is_sized_against_its_eval_set(own_demo_repo: Path, tmp_path: Path) -> None:
    """The demo's gates fit its set, and the notes say what a tighter margin would need; a margin the set cannot
    show is reported with what it needs; a rate no set of its size can show is a problem."""
    done = run("config", "validate", str(own_demo_repo), home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    recall = edit(own_demo_repo, SPEC, "{metric: task_recall, max_drop: 0.25}", "{metric: task_recall, max_drop: 0.25}")
    assert (
        f"  {SPEC}:{recall}: canary.gates: task_recall max_drop 0.25: needs 18 paired ordinary cases at 95% confidence"
        " and 80% power; the set has 24 (a margin of 0.1 would need 112, 0.05 would need 446, 0.02 would need 2,783)"
    ) in done.stdout
    assert "too few" not in done.stdout and "cannot pass" not in done.stdout
    valid = edit(own_demo_repo, SPEC, "{metric: schema_valid_rate, min: 1.0}", "{metric: schema_valid_rate, min: 1.0}")

    edit(own_demo_repo, SPEC, "{metric: task_recall, max_drop: 0.25}", "{metric: task_recall, max_drop: 0.02}")
    tight = run("config", "validate", str(own_demo_repo), home=tmp_path / "home")
    assert tight.returncode == 0, tight.stderr
    assert (
        f"  {SPEC}:{recall}: canary.gates: task_recall max_drop 0.02: too few cases: a margin of 0.02 needs 2,783"
        " paired ordinary cases at 95% confidence and 80% power; the set has 24, on which a challenger as good as the"
        " champion passes 8% of the time. 24 ordinary cases support a margin of 0.22"
    ) in tight.stdout

    assert (  # zero tolerance: what the set shows, no problem
        f"  {SPEC}:{valid}: canary.gates: schema_valid_rate min 1: 32 cases: zero tolerance, passes only when no case"
        " fails; a flawless run shows the rate >= 0.911 at 95% confidence"
    ) in done.stdout
    edit(own_demo_repo, SPEC, "{metric: schema_valid_rate, min: 1.0}", "{metric: schema_valid_rate, min: 0.95}")
    never = run("config", "validate", str(own_demo_repo), home=tmp_path / "home")
    assert never.returncode == 1 and never.stderr.startswith(f"error: {own_demo_repo}: 1 problem:\n")
    assert (
        f"  {SPEC}:{valid}: canary.gates: schema_valid_rate min 0.95: min 0.95 cannot pass on 32 cases: a flawless"
        " run (rate 1) has the 95% bound 0.911; it needs 59 cases"
    ) in never.stderr


def test_an_unknown_ref_names_the_branches(demo_repo: Path, tmp_path: Path) -> None:
    done = run("config", "validate", str(demo_repo), "--ref", "nosuchbranch", home=tmp_path / "home")
    assert done.returncode == 1
    assert done.stderr == f"error: unknown ref 'nosuchbranch' in {demo_repo} (branches: main)\n"


def test_model_spec_check_stops_the_chain(instance, own_demo_repo: Path) -> None:
    """The model_spec stage runs the same validation as a blocking check: nothing downstream starts."""
    lines = break_three_ways(own_demo_repo)
    git(own_demo_repo, "commit", "--quiet", "-am", "three mistakes")
    result = materialize(instance, "model_spec", "compiled_prompts")
    assert not result.success
    (check,) = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.event_specific_data.check_name == "spec_valid"
    ]
    assert isinstance(check, dg.AssetCheckEvaluation) and not check.passed
    problems = check.metadata["problems"].value
    assert f"{SPEC}:{lines['gate']}: canary.gates: unknown metric 'coherance'" in problems
    assert f"{PROMPT}:{lines['prompt']}:" in problems and f"evals/attacks.jsonl:{lines['eval']}:" in problems
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert "compiled_prompts" not in ran
