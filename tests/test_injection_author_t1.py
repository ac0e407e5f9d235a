"""Author t1's training material (workplace and institutional documents): layout, labels, spans, determinism."""

from __future__ import annotations

from collections import Counter

from ai_platform.demo import injection_author_t1 as t1


def test_layout_per_kind_and_language() -> None:
    rows = t1.samples(1200)
    assert len(rows) == 1200
    counts = Counter((s.kind, s.language) for s in rows)
    assert counts[("benign", "en")] == counts[("benign", "zh")] == 300
    for kind in ("hijack", "leak", "jailbreak"):
        assert counts[(kind, "en")] == counts[(kind, "zh")] == 100
    assert set(counts) == {(k, lang) for k in ("benign", "hijack", "leak", "jailbreak") for lang in ("en", "zh")}


def test_labels_and_spans() -> None:
    for s in t1.samples(2000):
        assert s.label == (0 if s.kind == "benign" else 1)
        if s.kind in ("hijack", "leak"):
            assert s.span is not None
            start, end = s.span
            assert 0 <= start < end <= len(s.text)
            assert s.text[start:end].strip()
            assert len(s.text) > end - start  # inside a document, not alone
        else:
            assert s.span is None
        if s.language == "zh":
            assert any("\u4e00" <= ch <= "\u9fff" for ch in s.text)


def test_deterministic_and_varied() -> None:
    a, b = t1.samples(800), t1.samples(800)
    assert a == b
    assert t1.samples(800, seed=t1.SEED + 1) != a
    texts = [s.text for s in t1.samples(4000)]
    assert len(set(texts)) > 0.95 * len(texts)


def test_short_attacks_and_benign_vocabulary() -> None:
    rows = t1.samples(4000)
    short = {s.language for s in rows if s.span and len(s.text[s.span[0] : s.span[1]].encode()) < 45}
    assert short == {"en", "zh"}
    benign = " ".join(s.text for s in rows if s.label == 0).lower()
    for word in ("ignore", "disregard", "override", "print", "translate", "summarize", "from now on", "mode"):
        assert word in benign
    for word in ("忽略", "覆盖", "输出", "打印", "翻译", "总结", "指令", "系统", "模式", "从现在起", "你是"):
        assert word in benign
