"""Published benign text (`injection_published`): the held-out part is never trained on, and the detector
leaves it alone. Before the model read any of it (feature version 4, 86f64f4), it flagged 3.9% of Debian's Chinese
program messages and 1.1% of the README paragraphs of part 2."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path

import pytest

from ai_platform.demo import injection_published, injection_train
from ai_platform.detectors.injection import injection_score

THRESHOLD = 0.8
HELD_OUT = 2


def test_training_and_calibration_read_no_held_out_package_or_catalog() -> None:
    held_out = set(injection_published.readme_paragraphs(HELD_OUT))
    seen = set(injection_published.readme_paragraphs(0)) | set(injection_published.readme_paragraphs(1))
    only_held_out = held_out - seen  # a licence boilerplate paragraph can be in packages on both sides
    assert only_held_out, "no README paragraphs here: the platform environment has no installed distributions?"
    for part in (0, 1):
        texts = {sample.text for sample in injection_train.corpus(5, 800, part)}
        assert not texts & only_held_out
    messages = injection_published.catalog_messages(0)
    if messages:  # every line of a training passage is a message of part 0's catalogs
        part_0 = {english for english, _ in messages}
        for passage in injection_published.catalog_passages(random.Random(5), 0, "en", 200):
            assert set(passage.split("\n")) <= part_0 | {line for m in part_0 for line in m.split("\n")}


def test_this_package_is_not_among_the_readmes() -> None:
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["name"] == injection_published.OWN_DISTRIBUTION
    names = {name for name, _, _ in injection_published._readmes()}
    assert injection_published.OWN_DISTRIBUTION not in names
    assert "numpy" in names


def test_held_out_readme_paragraphs_are_rarely_flagged() -> None:
    paragraphs = injection_published.readme_paragraphs(HELD_OUT)
    assert paragraphs, "no README paragraphs of part 2: the platform environment's distributions have none?"
    flagged = sum(injection_score(p) >= THRESHOLD for p in paragraphs)
    assert flagged <= 0.0075 * len(paragraphs), f"{flagged} of {len(paragraphs)}"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_held_out_program_messages_are_rarely_flagged(language: str) -> None:
    passages = injection_published.catalog_passages(random.Random(3), HELD_OUT, language, 1000)
    if not passages:
        pytest.skip(f"no readable catalog of part 2 in {injection_published.CATALOGS} (Debian's zh_CN translations)")
    flagged = sum(injection_score(p) >= THRESHOLD for p in passages)
    assert flagged <= 10, f"{flagged} of {len(passages)}"
