"""Simulated legal reviewers for the offline demo: real traffic through the gateway, graded against the truth.

The demo has no people, but its corpus knows the right answer to every contract
it generates. So the demo sends held-out contracts through the gateway (each
reply logged as a generation with its features) and labels each reply the way a
reviewer would: `missed_risk` when an expected risk is absent, `false_positive`
when the reply raises more risks than the contract has (e.g. one risk twice),
else `correct`. The labels land in the inbox as files, as real ones do.
"""

from __future__ import annotations

import csv
import io
import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from ai_platform.demo import corpus
from ai_platform.evaluation.recall import risk_points, task_recall


def grade(expected: dict[str, Any], output: Any) -> str:
    if task_recall(expected, output) < 1.0:
        return "missed_risk"
    if len(risk_points(output)) > len(expected.get("keywords") or []):
        return "false_positive"
    return "correct"


def ask_all(
    gateway: str, prompt: str, variables: list[dict[str, str]], headers: dict[str, str], workers: int = 4
) -> list[dict[str, Any]]:
    """Each of `variables` through the gateway's `prompt` (with `headers`' invoke key); the replies in order."""

    def ask(values: dict[str, str]) -> dict[str, Any]:
        body = {"variables": values}
        for _ in range(20):  # a polite client: over the admission budget, wait as long as the gateway says
            reply = httpx.post(f"{gateway}/v1/prompts/{prompt}:run", json=body, headers=headers, timeout=120)
            if reply.status_code != 429:
                break
            time.sleep(float(reply.headers.get("retry-after", "1")))
        answer: dict[str, Any] = reply.json()
        return answer

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(ask, variables))


def labeled(replies: list[dict[str, Any]], labels: list[str]) -> list[dict[str, Any]]:
    """Label rows for the replies that were logged (a refused request has no generation), three reviewers in turn,
    seven minutes apart."""
    start = datetime(2026, 2, 2, 9, 0, tzinfo=UTC)
    return [
        {
            "generation_id": reply["generation_id"],
            "reviewer": f"reviewer-{'abc'[i % 3]}",
            "label": label,
            "comment": "",
            "labeled_at": (start + timedelta(minutes=7 * i)).isoformat(),
        }
        for i, (reply, label) in enumerate(zip(replies, labels, strict=True))
        if "generation_id" in reply
    ]


def review(
    gateway: str, inbox: Path, headers: dict[str, str], *, count: int = 160, seed: int = 0, workers: int = 4
) -> list[Path]:
    """`count` held-out contracts through the gateway (with `headers`' invoke key), graded into label files."""
    examples = list(corpus.examples(seed + 3_000_003, count, "review"))
    variables = [{"input_pdf_text": example.text} for example in examples]
    replies = ask_all(gateway, "contract_review", variables, headers, workers)
    labels = [
        grade({"keywords": [r.keyword for r in ex.risks], "levels": [r.level for r in ex.risks]}, reply.get("output"))
        for ex, reply in zip(examples, replies, strict=True)
    ]
    return write_labels(inbox, labeled(replies, labels), f"{seed}")


def review_clauses(
    gateway: str, inbox: Path, headers: dict[str, str], *, count: int = 160, seed: int = 0, workers: int = 4
) -> list[Path]:
    """The clause classifier's reviewers: `count` clauses of a seed stream neither its eval set nor its gates'
    measurement draws from, each labelled `correct` when the reply names the clause's kind, else `incorrect`."""
    from ai_platform.demo import classifier

    pairs = classifier.clauses(seed + 7_000_009, max(1, count // len(classifier.KINDS)))
    replies = ask_all(gateway, classifier.PROMPT, [{"clause": text} for _, text in pairs], headers, workers)
    labels = [
        "correct" if isinstance(out := reply.get("output"), dict) and out.get("kind") == kind else "incorrect"
        for (kind, _), reply in zip(pairs, replies, strict=True)
    ]
    return write_labels(inbox, labeled(replies, labels), f"{classifier.NAME}-{seed}")


def write_labels(inbox: Path, rows: list[dict[str, Any]], name: str) -> list[Path]:
    """As reviewers send them: reviewer-a exports CSV from Excel (with its BOM), the others JSONL; one row is
    not a label at all, so the demo shows a quarantined row with its file, line and reason."""
    inbox.mkdir(parents=True, exist_ok=True)
    columns = ["generation_id", "reviewer", "label", "comment", "labeled_at"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(r for r in rows if r["reviewer"] == "reviewer-a")
    csv_path = inbox / f"reviewers-demo-{name}-a.csv"
    csv_path.write_bytes("\ufeff".encode() + buffer.getvalue().encode("utf-8"))
    others = [r for r in rows if r["reviewer"] != "reviewer-a"]
    if others:
        others.append({**others[0], "label": "looks fine", "comment": "not one of the labels"})
    jsonl_path = inbox / f"reviewers-demo-{name}-bc.jsonl"
    jsonl_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in others), encoding="utf-8")
    return [csv_path, jsonl_path]
