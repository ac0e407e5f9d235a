"""Coherence on the real all-MiniLM-L6-v2, and the eval set's input embeddings kept by content."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ai_platform.evaluation.coherence import coherence

CONTRACT = "The supplier shall pay a penalty of 5% of the order value for each day of late delivery."
ON_TOPIC = '{"risks": [{"keyword": "penalty", "basis": "5% of the order value for each day of late delivery"}]}'
OFF_TOPIC = '{"risks": [{"keyword": "weather", "basis": "sunny afternoons at the seaside are pleasant"}]}'


def test_a_reply_about_its_input_scores_higher_and_an_empty_one_scores_zero() -> None:
    on, off, empty = coherence([CONTRACT] * 3, [ON_TOPIC, OFF_TOPIC, '{"risks": []}'])
    assert on > off + 0.2
    assert empty == 0.0
    with pytest.raises(ValueError, match="2 replies for 1 inputs"):
        coherence([CONTRACT], [ON_TOPIC, OFF_TOPIC])


def test_input_embeddings_are_kept_by_content_and_a_torn_cache_is_embedded_again(tmp_path: Path) -> None:
    inputs = [CONTRACT, "Either party may terminate this agreement with 30 days' written notice."]
    replies = [ON_TOPIC, OFF_TOPIC]
    fresh = coherence(inputs, replies, tmp_path)
    (kept,) = tmp_path.glob("*.npy")
    assert np.load(kept).shape == (2, 384)

    # The second eval reads what was kept: planted vectors show through in the scores.
    planted = np.zeros((2, 384), dtype=np.float32)
    np.save(kept, planted)
    assert coherence(inputs, replies, tmp_path) == [0.0, 0.0]

    kept.write_bytes(b"\x93NUMPY torn")
    assert coherence(inputs, replies, tmp_path) == pytest.approx(fresh, abs=1e-6)
    assert coherence(inputs[:1], replies[:1], tmp_path) == pytest.approx(fresh[:1], abs=1e-6)
    assert len(list(tmp_path.glob("*.npy"))) == 2  # other inputs, other key
