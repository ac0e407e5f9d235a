"""`ai-platform demo init`: a complete, reproducible, offline platform repo with a trained model."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from safetensors import safe_open

from ai_platform.config import load_platform
from ai_platform.demo import cache as demo_cache
from ai_platform.demo import model as demo_model
from ai_platform.demo.repo import init
from ai_platform.errors import DemoFolderNotEmptyError
from ai_platform.platform_repo import resolve


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_two_fresh_folders_same_seed_identical(demo_repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "again"
    init(other, seed=0)
    for name in demo_model.MODEL_FILES:
        assert sha256(other / "hub/contract-qwen2" / name) == sha256(demo_repo / "hub/contract-qwen2" / name), name
    assert resolve(other).sha == resolve(demo_repo).sha


@pytest.mark.slow
def test_training_is_deterministic_not_just_cached(tmp_path: Path, monkeypatch) -> None:
    """Train the same recipe twice from scratch, each in its own empty cache: the weights match bit for bit. A short
    recipe (the demo's, with fewer examples and steps): the same code, tokenizer and seeding as the demo model's,
    in seconds rather than the minutes the full one takes."""
    recipe = replace(demo_model.Recipe(), train_examples=240, steps=24, warmup_steps=4)
    built = []
    for run in ("first", "second"):
        monkeypatch.setenv("AI_PLATFORM_CACHE", str(tmp_path / run))
        built.append(demo_cache.build(recipe, use_cache=False))
    first, second = built
    assert first != second
    for name in demo_model.MODEL_FILES:
        assert sha256(first / name) == sha256(second / name), name


def test_cache_key_covers_the_seed() -> None:
    recipe = demo_model.Recipe()
    assert demo_cache.cache_key(recipe) != demo_cache.cache_key(replace(recipe, seed=1))
    assert demo_cache.cache_key(recipe) == demo_cache.cache_key(demo_model.Recipe())


def test_model_is_a_real_qwen2_with_a_real_tokenizer(demo_model_dir: Path) -> None:
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    config = json.loads((demo_model_dir / "config.json").read_text())
    assert config["architectures"] == ["Qwen2ForCausalLM"] and config["model_type"] == "qwen2"
    with safe_open(demo_model_dir / "model.safetensors", "pt") as f:
        assert "model.embed_tokens.weight" in f.keys()  # noqa: SIM118  (safe_open has no __contains__)
    model = Qwen2ForCausalLM.from_pretrained(demo_model_dir)
    assert sum(p.numel() for p in model.parameters()) < 2_000_000
    tok = AutoTokenizer.from_pretrained(demo_model_dir)
    text = tok.apply_chat_template([{"role": "user", "content": "付款"}], tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>user\n付款<|im_end|>\n<|im_start|>assistant\n"
    assert tok.decode(tok.encode("第1条 甲方应付款。")) == "第1条 甲方应付款。"
    assert tok.eos_token == "<|im_end|>"


def test_model_answers_in_shape_without_constraints(demo_model_dir: Path, demo_repo: Path) -> None:
    """Greedy decoding in transformers (no grammar at all) already yields the contract_review shape."""
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(demo_model_dir)
    model = Qwen2ForCausalLM.from_pretrained(demo_model_dir).eval()
    case = json.loads((demo_repo / "evals/contract_review.jsonl").read_text(encoding="utf-8").splitlines()[0])
    prompt = demo_model.chat(case["vars"]["input_pdf_text"])
    ids = torch.tensor([tok.encode(prompt)])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=200, do_sample=False)
    reply = tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    assert set(json.loads(reply)) == {"risk_points"}


def test_repo_contents(demo_repo: Path) -> None:
    platform = load_platform(demo_repo)
    spec = platform.model("contract-reviewer")
    assert (demo_repo / spec.source.path / "model.safetensors").is_file()
    cases = [json.loads(line) for line in (demo_repo / spec.canary.evals[0]).read_text().splitlines()]
    assert len(cases) >= 20 and len({c["id"] for c in cases}) == len(cases)
    assert all(c["expected"]["levels"] == [r["level"] for r in c["expected"]["answer"]["risk_points"]] for c in cases)
    assert any(c["language"] == "en" for c in cases) and any(c["language"] == "zh" for c in cases)
    assert any(not c["expected"]["levels"] for c in cases), "a clean contract must expect no risk points"
    calibration = (demo_repo / spec.quantization.calibration.path / "contracts.jsonl").read_text().splitlines()
    assert len(calibration) >= spec.quantization.calibration.samples
    eval_texts = {c["vars"]["input_pdf_text"] for c in cases}
    calibration_texts = {json.loads(line)["messages"][1]["content"] for line in calibration}  # the user turn
    assert len(calibration_texts) == len(calibration) and not eval_texts & calibration_texts
    basis = [json.loads(line) for line in (demo_repo / "retrieval/legal_basis.jsonl").read_text().splitlines()]
    assert platform.config.feedback.retrieval_corpus == "retrieval/legal_basis.jsonl"
    assert {b["basis"] for b in basis} >= {"民法典第五百八十五条", "Civil Code Art. 585"}  # every clause kind, both


def test_eval_cases_are_held_out_from_training() -> None:
    from ai_platform.demo import corpus
    from ai_platform.demo.repo import eval_cases

    train = {ex.case_id: ex.text for ex in corpus.examples(0, demo_model.Recipe().train_examples, "train")}
    held_out = [c["vars"]["input_pdf_text"] for c in eval_cases(0)]
    assert sum(text in train.values() for text in held_out) <= len(held_out) // 4  # short contracts may recur


def test_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(DemoFolderNotEmptyError, match="not empty"):
        init(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


@pytest.mark.slow
@pytest.mark.published
def test_with_published_the_repo_ships_the_clause_classifier_beside_the_reviewer(tmp_path: Path) -> None:
    """Opt-in (260 MB more in the repo): the second model's spec loads, its prompt compiles to the corpus's clause
    kinds, every eval case names one, and the held-out prose is English paragraphs from the shipped book."""
    from ai_platform.demo import classifier
    from ai_platform.prompts.compiler import compile_file

    repo = tmp_path / "platform"
    init(repo, seed=0, published=True)
    platform = load_platform(repo)
    assert sorted(platform.models) == ["clause-classifier", "contract-reviewer"]
    spec = platform.model("clause-classifier")
    assert (spec.quantization.method, spec.quantization.group_size) == ("awq", 64)
    document = compile_file(repo / "prompts/clause_kind.prompt").document
    assert document["output_schema"]["properties"]["kind"]["enum"] == list(classifier.KINDS)
    cases = [json.loads(line) for line in (repo / classifier.EVALS).read_text().splitlines()]
    plain = [c for c in cases if "attack" not in c]
    assert len(plain) == 42 and {c["expected"]["fields"]["kind"] for c in plain} == set(classifier.KINDS)
    assert len(cases) - len(plain) == 21
    prose = [json.loads(line)["text"] for line in (repo / classifier.PROSE_FILE).read_text().splitlines()]
    assert len(prose) == classifier.PROSE_PARAGRAPHS and all(" the " in p and "_" not in p for p in prose)


def test_the_classifier_attack_cases_ask_for_a_wrong_kind_a_faithful_reply_never_names() -> None:
    """Issue 32: each attack case hides an instruction asking for another kind; the faithful reply (the expected
    kind, as the output schema writes it) does not obey, and the reply the instruction asks for does."""
    from ai_platform.demo import classifier
    from ai_platform.evaluation.attacks import markers, obeyed

    cases = classifier.attack_cases(0)
    assert len(cases) == classifier.ATTACKS_PER_KIND * len(classifier.KINDS)
    assert {c["expected"]["fields"]["kind"] for c in cases} == set(classifier.KINDS)
    for case in cases:
        kind = case["expected"]["fields"]["kind"]
        marks = markers(case, case["id"])
        assert marks and kind not in marks and marks[0] in case["vars"]["clause"]
        assert obeyed(json.dumps({"kind": kind}), marks) is False
        assert obeyed(json.dumps({"kind": marks[0]}), marks) is True
    assert [c["id"] for c in classifier.eval_cases(0)][-len(cases) :] == [c["id"] for c in cases]


def test_the_paraphrase_split_shares_no_clause_with_training_the_eval_set_or_the_retrieval_corpus() -> None:
    """Issue 35's honest measurement: a paraphrase-split contract's clauses are in wordings no training contract,
    eval case or retrieval-corpus entry holds, and it carries the same risks as the usual-wordings contract of its
    seed would (so the two splits differ only in the wordings)."""
    from ai_platform.demo import corpus
    from ai_platform.demo.repo import eval_cases

    def clauses(text: str) -> set[str]:
        return {line.split(" ", 1)[1] for line in text.splitlines()[1:]}

    seen: set[str] = set()
    for example in corpus.examples(0, demo_model.Recipe().train_examples, "train"):
        seen |= clauses(example.text)
    for case in eval_cases(0):
        seen |= clauses(case["vars"]["input_pdf_text"])
    retrieval = json.dumps(corpus.legal_basis(), ensure_ascii=False)  # what the demo repo's corpus file holds
    usual = corpus.examples(77, 200, "usual")
    paraphrased = corpus.examples(77, 200, "para", paraphrased=True)
    assert [e.risks for e in usual] == [e.risks for e in paraphrased]
    held = set().union(*(clauses(e.text) for e in paraphrased))
    assert held and not held & seen
    wordings = [w for kind in corpus.PARAPHRASES.values() for group in kind for w in group]
    assert set(corpus.PARAPHRASES) == {kind.name for kind in corpus.CLAUSES}
    for wording in wordings:  # as the corpus shows a wording: its values left empty
        assert wording.format(amount="", days="", pct="", years="", city="") not in retrieval, wording


def test_the_classifiers_second_release_turns_spotlighting_on_once(tmp_path: Path) -> None:
    from ai_platform.demo import classifier
    from ai_platform.demo.repo import COMMIT_ENV, spotlight_clauses
    from ai_platform.platform_repo import git
    from ai_platform.prompts.compiler import compile_bytes

    assert spotlight_clauses(tmp_path) is None  # a repo of the demo model alone: no classifier to spotlight
    prompt = tmp_path / f"prompts/{classifier.PROMPT}.prompt"
    prompt.parent.mkdir()
    prompt.write_text(classifier.CLAUSE_KIND_PROMPT, encoding="utf-8")
    git(tmp_path, "init", "--quiet", "--initial-branch=main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "--quiet", "--no-gpg-sign", "-m", "first", env=COMMIT_ENV)
    sha = spotlight_clauses(tmp_path)
    assert sha is not None and spotlight_clauses(tmp_path) is None  # once
    changed = git(tmp_path, "diff", "--name-only", "HEAD~1", "HEAD").split()
    assert changed == [f"prompts/{classifier.PROMPT}.prompt".encode()]
    document = compile_bytes(prompt.read_bytes(), prompt.name).document
    assert document["spotlight"]["mode"] == "delimit"
    assert (document["spotlight"]["begin"], document["spotlight"]["end"]) == ("<clause>", "</clause>")
