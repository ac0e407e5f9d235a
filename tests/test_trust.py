"""The trust model on a real DuckDB warehouse: time-ordered training, the metrics, champion/challenger,
a JSON format that never unpickles, and scoring that needs no scikit-learn."""

from __future__ import annotations

import json
import pickle
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ai_platform.artifacts import FolderStore
from ai_platform.errors import TrustModelError
from ai_platform.trust.features import FEATURES, features
from ai_platform.trust.model import TrustModel
from ai_platform.trust.train import MIN_LABELS, Example, ece, evaluate, fit, train
from ai_platform.warehouse import Warehouse


def seed_warehouse(where: Path | Warehouse, n: int, rng: random.Random, shift: float = 0.0) -> Warehouse:
    """Generations whose correctness depends on two signals, each only partly informative alone."""
    warehouse = where if isinstance(where, Warehouse) else Warehouse(where)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    generations, labels = [], []
    for i in range(n):
        logprob, repetition = rng.gauss(-0.5, 0.3), rng.random() * 0.6
        correct = (logprob + shift) - 1.5 * repetition + rng.gauss(0, 0.15) > -0.9
        metrics = {
            "mean_logprob": logprob,
            "min_logprob": logprob - 1,
            "seq_rep_4": repetition,
            "pii": [],
            "schema_valid": True,
            "injection": 0.0,
            "output_tokens": 40,
        }
        output = json.dumps({"risk_points": [{"point": "p", "level": "高", "basis": "b", "suggestion": "s"}]})
        variables = json.dumps({"input_pdf_text": "合同"})
        generations.append([f"g{i}", "m", "p", "v", variables, output, json.dumps(metrics), "stop", 0.2])
        labels.append(
            [
                f"g{i}",
                "r",
                "correct" if correct else "missed_risk",
                "",
                start + timedelta(minutes=i),
                "labels.jsonl",
                i + 1,
            ]
        )
    with warehouse.write() as con:
        columns = "generation_id, model, prompt_name, prompt_version, input, output, metrics, finish_reason, latency_s"
        con.executemany(f"INSERT INTO generations ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", generations)
        con.executemany(
            "INSERT INTO feedback_labels (generation_id, reviewer, label, comment, labeled_at,"
            " source_file, source_line) VALUES (?, ?, ?, ?, ?, ?, ?)",
            labels,
        )
    return warehouse


def test_trains_beats_single_features_and_is_promoted_once(tmp_path: Path) -> None:
    warehouse = seed_warehouse(tmp_path / "w.duckdb", 400, random.Random(1))
    store = FolderStore(tmp_path / "artifacts")
    first = train(warehouse, store)
    m = first.metrics
    assert first.promoted and m["holdout"] == 120 and m["train"] == 280
    assert m["auc"] > m["best_single_feature_auc"] > 0.5, m
    assert 0 <= m["brier"] < 0.25 and 0 <= m["ece"] < 0.2
    again = train(warehouse, store)  # same data, same model: it does not beat the champion, so not promoted
    assert not again.promoted and again.champion_metrics is not None
    _, rows = warehouse.query("SELECT count(*), count(*) FILTER (WHERE champion) FROM trust_models")
    assert rows == [(1, 1)]  # the same model file, recorded once, champion


def test_the_best_single_feature_is_chosen_on_the_training_labels() -> None:
    """Picked on the holdout, the best of a dozen features is an oracle the model is unfairly held to."""
    rng = random.Random(4)
    start = datetime(2026, 3, 1, tzinfo=UTC)

    def example(i: int, correct: bool, informative: str) -> Example:
        logprob = (-0.2 if correct else -1.5) if informative == "mean_logprob" else rng.uniform(-1.5, -0.2)
        repetition = (0.0 if correct else 0.5) if informative == "seq_rep_4" else rng.uniform(0.0, 0.5)
        row = {"output": "{}", "metrics": {"mean_logprob": logprob, "seq_rep_4": repetition}, "finish_reason": "stop"}
        return Example(start + timedelta(minutes=i), features(row), correct)

    train_rows = [example(i, i % 3 > 0, "mean_logprob") for i in range(60)]
    holdout = [example(60 + i, i % 3 > 0, "seq_rep_4") for i in range(30)]
    m = evaluate(fit(train_rows), holdout, train_rows)
    assert m["best_single_feature"] == "mean_logprob"
    assert m["best_single_feature_auc"] < 0.8 < m["single_feature_auc"]["seq_rep_4"] == 1.0


def test_saved_model_is_json_scored_without_sklearn_and_pickles_are_refused(tmp_path: Path) -> None:
    warehouse = seed_warehouse(tmp_path / "w.duckdb", 200, random.Random(2))
    trained = train(warehouse, FolderStore(tmp_path / "artifacts"))
    path = tmp_path / "model.json"
    path.write_bytes(trained.model.to_bytes())
    loaded = TrustModel.load(path)
    row = {"output": "{}", "metrics": {"mean_logprob": -0.2, "seq_rep_4": 0.0}, "finish_reason": "stop"}
    assert loaded.score(features(row)) == trained.model.score(features(row))
    assert 0.0 < loaded.score({}) < 1.0  # every feature missing: imputed, not a crash
    (tmp_path / "model.pkl").write_bytes(pickle.dumps({"format": "ai-platform.trust-model/v1"}))
    with pytest.raises(TrustModelError, match="cannot read"):
        TrustModel.load(tmp_path / "model.pkl")
    (tmp_path / "other.json").write_text('{"format": "sklearn"}')
    with pytest.raises(TrustModelError, match="not a trust model"):
        TrustModel.load(tmp_path / "other.json")


def test_too_few_labels_is_a_clear_error(tmp_path: Path) -> None:
    warehouse = seed_warehouse(tmp_path / "w.duckdb", MIN_LABELS - 1, random.Random(3))
    with pytest.raises(TrustModelError, match=f"at least {MIN_LABELS}"):
        train(warehouse, FolderStore(tmp_path / "artifacts"))


def test_features_and_ece() -> None:
    values = features(
        {
            "input": "ab",
            "output": '{"risk_points": [1, 2]}',
            "finish_reason": "length",
            "metrics": json.dumps({"pii": ["email"], "schema_valid": False}),
        }
    )
    assert set(values) == set(FEATURES)
    assert (values["risk_points"], values["pii_count"], values["finish_stop"], values["schema_valid"]) == (2, 1, 0, 0)
    assert values["mean_logprob"] != values["mean_logprob"]  # missing is NaN, not 0
    assert ece([0.9, 0.9, 0.1, 0.1], [True, True, False, False]) == pytest.approx(0.1)


def test_the_champion_travels_in_the_warehouse_to_every_replica(lake, tmp_path: Path) -> None:
    """A gateway replica on another machine reads the champion from the DuckLake it shares, not from a file
    on the trainer's disk."""
    from ai_platform.serving.gateway.scoring import TrustChampions

    seed_warehouse(lake, 200, random.Random(5))
    trained = train(lake, FolderStore(tmp_path / "trainer"))
    assert trained.promoted
    shutil.rmtree(tmp_path / "trainer")  # the trainer's pod is gone
    champion = TrustChampions().champion(lake.location)
    assert champion is not None and champion.version == trained.model.version
