"""The review threshold chosen for a guarantee (trust.threshold): on simulated scores and labels of a known
structure, the bound on the miss rate among unflagged replies holds at its confidence and the flagged share keeps
to the budget; the spec refuses a bad budget naming the field; the gateway's scoring and the backfill flag by the
champion's threshold (platform.yaml's for a model without one); and the trust_champion page shows the curve."""

from __future__ import annotations

import base64
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from ai_platform.artifacts import FolderStore
from ai_platform.config import ModelSpec, Trust, parse
from ai_platform.errors import ConfigError, TrustModelFileError
from ai_platform.serving.gateway.scoring import Answer, score_reply
from ai_platform.serving.state import ModelState
from ai_platform.trust.features import features
from ai_platform.trust.model import TrustModel
from ai_platform.trust.promote import promote
from ai_platform.trust.threshold import choose
from ai_platform.trust.train import champion, examples, train
from assets.feedback import review_metadata
from tests.test_trust import seed_warehouse


def truth_above(t: float, power: int) -> float:
    """P(wrong | score >= t) for scores uniform on [0, 1] and P(correct | s) = s**power, exactly:
    the mean of 1 - s**power over [t, 1]."""
    return 1 - (1 - t ** (power + 1)) / ((power + 1) * (1 - t))


@pytest.mark.parametrize("power", [1, 3])  # calibrated, and badly miscalibrated: the bound needs neither
def test_the_miss_bound_holds_at_its_confidence_on_simulated_data(power: int) -> None:
    budget, confidence, seeds, n = 0.15, 0.9, 600, 200
    over, gaps = 0, []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        scores = rng.random(n)
        correct = rng.random(n) < scores**power
        chosen = choose(scores.tolist(), correct.tolist(), budget, confidence)
        true_rate = truth_above(chosen.threshold, power)
        over += true_rate > chosen.miss_bound
        gaps.append(chosen.miss_bound - true_rate)
    # At most 1 - confidence of the seeds, up to three standard errors of 600 draws (0.037).
    assert over / seeds <= (1 - confidence) + 3 * np.sqrt(0.1 * 0.9 / seeds), over
    # and not vacuous: the bound sits within a few points of the truth on 170 unflagged replies
    assert 0 < float(np.mean(gaps)) < 0.08, np.mean(gaps)


def test_the_flagged_share_keeps_to_the_budget_and_takes_all_it_allows() -> None:
    rng = random.Random(3)
    for trial in range(300):
        n = rng.randint(1, 120)
        # coarse scores make ties, as an isotonic map's plateaus do
        scores = [round(rng.random(), rng.choice([1, 2, 6])) for _ in range(n)]
        correct = [rng.random() < s for s in scores]
        budget = rng.choice([0.01, 0.1, 0.15, 0.5, 1.0])
        chosen = choose(scores, correct, budget, 0.9)
        flagged = sum(s < chosen.threshold for s in scores)
        assert flagged == chosen.flagged and flagged / n <= budget, (trial, flagged, n, budget)
        higher = [s for s in set(scores) if s > chosen.threshold]  # the next threshold up goes over the budget
        assert all(sum(x < s for x in scores) > budget * n for s in higher), trial
        left = [c for s, c in zip(scores, correct, strict=True) if s >= chosen.threshold]
        assert chosen.misses_left == sum(not c for c in left)
        assert chosen.miss_bound >= chosen.miss_rate
        assert [p[1] for p in chosen.curve] == sorted(p[1] for p in chosen.curve)
    assert choose([0.2, 0.9], [True, False], 1.0, 0.9).flagged == 2  # a budget of 1 may flag everything


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, "0.2", "lots", True, float("nan")])
def test_config_validation_refuses_a_bad_review_budget_naming_the_field(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"trust\.review_budget: ") as info:
        parse(ModelSpec, {"name": "m", "trust": {"review_budget": bad}}, Path("models/m.yaml"))
    assert "models/m.yaml" in str(info.value)
    with pytest.raises(ConfigError, match=r"trust\.miss_confidence: "):
        parse(ModelSpec, {"name": "m", "trust": {"miss_confidence": 1.0}}, Path("models/m.yaml"))
    assert Trust(review_budget=0.2, miss_confidence=0.95).review == (0.2, 0.95)
    assert Trust().review == (0.15, 0.9)


def test_the_gateway_flags_by_the_champions_threshold_else_the_platforms() -> None:
    """score_reply, as the request path calls it: one feature, so the score is known."""
    state = ModelState(model="m", warehouse="", trust_threshold=0.7)
    base = TrustModel(["seq_rep_4"], [0.0], [1.0], [-4.0], 2.0)

    def flagged(model: TrustModel) -> tuple[bool, float]:
        result = score_reply(state, None, Answer("a b c d a b c d a b c d", "stop"), "合同", 0.0, 0.1, model)
        return bool(result["needs_review"]), result["trust_score"]

    review, score = flagged(base)
    assert score < 0.7 and review  # no threshold of its own: platform.yaml's
    assert flagged(TrustModel(**{**vars(base), "review_threshold": score + 0.01})) == (True, score)
    assert flagged(TrustModel(**{**vars(base), "review_threshold": score - 0.01})) == (False, score)
    # the threshold travels in the model's JSON, and an older model's bytes (so its version) are unchanged
    with_cut = TrustModel(**{**vars(base), "review_threshold": 0.42})
    assert TrustModel.from_bytes(with_cut.to_bytes(), "t").review_threshold == 0.42
    assert "review_threshold" not in json.loads(base.to_bytes())
    with pytest.raises(TrustModelFileError, match="review_threshold"):
        TrustModel.from_bytes(json.dumps({**json.loads(base.to_bytes()), "review_threshold": "high"}), "t")


def test_training_chooses_the_threshold_and_the_backfill_and_champion_page_use_it(tmp_path: Path) -> None:
    warehouse = seed_warehouse(tmp_path / "w.duckdb", 400, random.Random(1))
    with warehouse.write() as con:  # served before any champion: the backfill scores them
        con.execute(
            "INSERT INTO generations (generation_id, model, prompt_name, prompt_version, output, metrics)"
            " SELECT 'u' || i, 'm', 'p', 'v', '{}', json_object('seq_rep_4', i / 40) FROM range(40) t(i)"
        )
    store = FolderStore(tmp_path / "artifacts")
    bounds = Trust(review_budget=0.2)
    candidate = train(warehouse, store, "m", bounds)
    cut, review = candidate.model.review_threshold, candidate.metrics["review"]
    assert cut is not None and cut != 0.7
    assert review["replies"] == candidate.metrics["holdout"] == 120
    # The whole budget is used (24 of 120), though the isotonic map puts more than a fifth of the holdout on its
    # lowest plateau: the threshold is on the raw score, which orders the replies the map ties.
    assert candidate.model.calibration is not None and review["flagged"] == 24
    holdout_trust = sorted(candidate.model.score(e.features) for e in examples(warehouse, "m")[-120:])
    assert holdout_trust[24] == holdout_trust[0]
    assert promote(warehouse, store, "m", candidate.model.version, bounds, threshold=0.7).promoted
    columns, rows = warehouse.query(
        "SELECT input, output, metrics, finish_reason, needs_review FROM generations WHERE model = 'm'"
    )
    records = [dict(zip(columns, row, strict=True)) for row in rows]
    assert len(records) == 440
    assert [r["needs_review"] for r in records] == [candidate.model.raw_score(features(r)) < cut for r in records]
    # The asset's page: the chosen point as numbers and the curve as a Markdown image (an SVG plot) and table.
    best = champion(warehouse, "m")
    assert best is not None and best.review_threshold == cut
    shown = review_metadata(best, 0.7)
    assert shown["review_threshold"] == cut and shown["review_flagged_share"] == review["flagged_share"]
    assert shown["review_miss_bound"] >= shown["review_miss_rate"]
    page = shown["review_tradeoff"].value
    svg = base64.b64decode(re.search(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", page)[1]).decode()
    assert "<polyline" in svg and "<circle" in svg and f"| {cut:.3f} |" in page
    # The same labels under a new budget: the same fit with a new threshold, promoted as such.
    tighter = Trust(review_budget=0.05)
    again = train(warehouse, store, "m", tighter)
    assert again.model.review_threshold is not None and again.model.review_threshold < cut
    moved = promote(warehouse, store, "m", again.model.version, tighter, threshold=0.7)
    assert moved.promoted and "review threshold chosen again" in moved.reason
    # A champion from before thresholds were chosen: platform.yaml's, and the page says so.
    old = TrustModel(["seq_rep_4"], [0.0], [1.0], [-4.0], 2.0)
    assert review_metadata(old, 0.7)["review_threshold"] == 0.7
    assert "feedback.trust_threshold" in review_metadata(old, 0.7)["review_threshold_source"]
