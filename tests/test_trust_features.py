"""The trust features that compare a reply with its input (trust.clauses, trust.features): a reply that misses a
risk the retrieval corpus finds in the input is seen, on the demo's own corpus and contracts; no feature reads
latency or machine load; the cost on the request path; and a model of the older feature set is not misread."""

from __future__ import annotations

import json
import math
import random
import re
import time
from pathlib import Path

import pytest

from ai_platform.demo import corpus
from ai_platform.errors import TrustModelFileError
from ai_platform.serving.gateway.scoring import Answer, TrustChampions, score_reply
from ai_platform.serving.state import ModelState
from ai_platform.trust.clauses import ClauseIndex
from ai_platform.trust.features import FEATURES, features
from ai_platform.trust.model import FORMAT, TrustModel
from ai_platform.trust.rag import KeywordRetriever
from ai_platform.trust.train import champion
from ai_platform.warehouse import Warehouse

KIND = {risk.point: kind.name for kind in corpus.CLAUSES for risk in (kind.risk_zh, kind.risk_en)}


@pytest.fixture(scope="module")
def clauses() -> ClauseIndex:
    return ClauseIndex(corpus.legal_basis())


def reply(risks: list[corpus.Risk]) -> str:
    return json.dumps({"risk_points": [r.as_json() for r in risks]}, ensure_ascii=False)


def test_the_corpus_finds_each_risky_clause_and_no_safe_one(clauses: ClauseIndex) -> None:
    """On 400 generated contracts (Chinese and English) the kinds found in the input are exactly the risky
    clauses', and a reply's risk points raise exactly the kinds they name."""
    for example in corpus.examples(11, 400, "t"):
        truth = {KIND[r.point] for r in example.risks}
        assert clauses.found(example.text) == truth, example.text
        assert clauses.raised([r.as_json() for r in example.risks]) == truth
    safe = "1. The breaching party shall compensate the actual losses of the other party."  # shares most words
    assert clauses.found(safe) == set() and clauses.found("") == set() and clauses.raised([]) == set()


def test_a_feature_fires_on_a_reply_missing_a_risk_the_corpus_finds_in_the_input(clauses: ClauseIndex) -> None:
    example = next(e for e in corpus.examples(12, 50, "t") if len(e.risks) >= 2 and e.language == "zh")
    row = {"input": example.text, "finish_reason": "stop", "metrics": {}}
    complete = features({**row, "output": reply(list(example.risks))}, clauses)
    missed = features({**row, "output": reply(list(example.risks[1:]))}, clauses)
    nothing = features({**row, "output": reply([])}, clauses)
    assert complete["unraised_kinds"] == 0
    assert missed["unraised_kinds"] == 1  # the one risk left out
    assert nothing["unraised_kinds"] == len(example.risks)
    # a point in the model's own words still raises its kind; one about something else does not
    own_words = [{"point": f"{r.point}，依据{r.basis}", "level": r.level} for r in example.risks]
    assert features({**row, "output": json.dumps({"risk_points": own_words})}, clauses)["unraised_kinds"] == 0
    assert missed["risk_points_per_kchar"] == pytest.approx(1000 * (len(example.risks) - 1) / len(example.text))
    # without a corpus, or without a risk-point list, the comparison is missing (imputed), not 0
    assert math.isnan(features({**row, "output": reply([])})["unraised_kinds"])
    assert math.isnan(features({**row, "output": "not json"}, clauses)["unraised_kinds"])


def test_the_gateway_scores_a_reply_that_misses_a_risk_lower(clauses: ClauseIndex, tmp_path: Path) -> None:
    """score_reply, as the request path calls it, with a champion that weighs unraised kinds."""
    example = next(e for e in corpus.examples(13, 50, "t") if len(e.risks) >= 2)
    trust = TrustModel(["unraised_kinds"], [0.5], [0.5], [-2.0], 1.0)
    state = ModelState(model="m", warehouse="", trust_threshold=0.7)

    def scored(output: str) -> dict[str, object]:
        return score_reply(state, None, Answer(output, "stop"), example.text, 0.0, 0.5, trust, clauses=clauses)

    whole, short = scored(reply(list(example.risks))), scored(reply(list(example.risks[:-1])))
    assert whole["needs_review"] is False and short["needs_review"] is True, (whole, short)
    # the gateway's retriever carries the same index, built from the corpus file
    path = tmp_path / "legal_basis.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in corpus.legal_basis()), "utf-8")
    assert KeywordRetriever(path).index.found(example.text) == clauses.found(example.text)


LOAD_LIKE = re.compile(r"latency|ttft|_s$|seconds|time|load|queue|throughput|tokens_per|in_flight|gpu|cpu", re.I)


def test_no_feature_reads_latency_or_machine_load(clauses: ClauseIndex) -> None:
    """By name, and by behaviour: a row as slow as can be, on a loaded machine, has the same features."""
    assert [name for name in FEATURES if LOAD_LIKE.search(name)] == []
    row = {"input": "合同", "output": reply([]), "finish_reason": "stop", "metrics": {"seq_rep_4": 0.1}}
    slow = {
        **row,
        "latency_s": 30.0,
        "metrics": {**row["metrics"], "ttft_s": 9.0, "queue_s": 5.0, "latency_s": 30.0, "load": 16.0},
    }
    fast, loaded = features({**row, "latency_s": 0.05}, clauses), features(slow, clauses)
    assert set(fast) == set(FEATURES)
    assert {k: v for k, v in fast.items() if v == v} == {k: v for k, v in loaded.items() if v == v}


def test_the_features_of_a_4_kb_input_cost_well_under_a_millisecond(clauses: ClauseIndex) -> None:
    """On the request path for every reply: the worst case is 4 KB of English (one byte a character, the most
    sentences). CPU time, the best of 5 rounds, so a loaded machine does not decide it."""
    examples = corpus.examples(14, 400, "t")
    english = "\n".join(e.text for e in examples if e.language == "en")[:4096]
    chinese = "\n".join(e.text for e in examples if e.language == "zh").encode()[:4096].decode(errors="ignore")
    risks = [r for e in examples[:3] for r in e.risks]
    for text in (english, chinese):
        row = {"input": text, "output": reply(risks), "finish_reason": "stop", "metrics": {}}
        rounds = []
        for _ in range(5):
            start = time.process_time()
            for _ in range(50):
                features(row, clauses)
            rounds.append((time.process_time() - start) / 50)
        assert min(rounds) < 1e-3, rounds  # measured: about 0.2 ms on a loaded 2-core machine (see docs)


def test_a_model_of_the_older_feature_set_is_not_misread(tmp_path: Path) -> None:
    """A v1 model read latency_s: it is refused by its format, the gateway scores with no model rather than a
    misread one, and training judges its candidate as a first model."""
    new = TrustModel(["risk_points"], [1.0], [1.0], [1.0], 0.0)
    old = {**json.loads(new.to_bytes()), "format": "ai-platform.trust-model/v1", "features": ["latency_s"]}
    with pytest.raises(TrustModelFileError, match=r"older feature set .*retrain it"):
        TrustModel.from_bytes(json.dumps(old), "row")
    assert new.format == FORMAT != "ai-platform.trust-model/v1"
    warehouse = Warehouse(tmp_path / "w.duckdb")
    with warehouse.write() as con:
        con.execute(
            "INSERT INTO trust_models (version, algorithm, features, metrics, champion, artifact_path, model,"
            " served_model) VALUES ('v1', 'logistic_regression', '[\"latency_s\"]', '{}', true, 'p', ?, 'm')",
            [json.dumps(old)],
        )
    assert champion(warehouse, "m") is None
    assert TrustChampions().champion(warehouse.location, "m") is None
    rng = random.Random(0)
    assert 0 < TrustModel.from_bytes(new.to_bytes(), "row").score({"risk_points": rng.random()}) < 1
