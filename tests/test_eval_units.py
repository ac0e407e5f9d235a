"""Gates, task recall, percentiles, the report, and the eval client's retry rules.

The client's retry rules are exercised against a small OpenAI-style SSE server on
127.0.0.1 that fails on purpose; its happy path runs against real vLLM in
test_canary.py and the canary benchmark.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from slow_upstream import slow_upstream
from threaded import in_thread

from ai_platform.config import Gate
from ai_platform.errors import GateError
from ai_platform.evaluation.client import run_cases
from ai_platform.evaluation.gates import by_metric, judge
from ai_platform.evaluation.recall import task_recall
from ai_platform.evaluation.report import attack_table, comparison, latency_histogram, latency_markdown, latency_png
from ai_platform.evaluation.scoring import CaseScore, percentile


def scores(recall: list[float], *, pii: int = 0, prefix: str = "case") -> list[CaseScore]:
    """Ordinary cases with these task recalls (schema valid, finished, latency 0.1 s + 0.01 s per case)."""
    return [
        CaseScore(f"{prefix}-{i}", True, "stop", 0.0, 0.5, ["email"] * (pii if i == 0 else 0), 0.0, None, r,
                  0.1 + 0.01 * i, None, 10, None, None, 1, None)
        for i, r in enumerate(recall)
    ]  # fmt: skip


def test_absolute_and_relative_gates() -> None:
    gates = [
        Gate(metric="pii_count", max=0),
        Gate(metric="task_recall", max_drop=0.02),
        Gate(metric="task_recall", min=0.5),
        Gate(metric="latency_p95_s", max_rise=0.05),
    ]
    champion = scores([1.0] * 20)
    candidate = scores([1.0] * 10 + [0.5] * 10)  # recall 0.75 against 1.0, and slower on no case
    verdicts = by_metric(judge(gates, candidate, champion))
    assert verdicts["pii_count"].passed
    assert not verdicts["task_recall"].passed and "max drop 0.02" in verdicts["task_recall"].detail
    assert verdicts["latency_p95_s"].passed  # the same latencies: a rise of 0, within 0.05
    alone = by_metric(judge(gates, candidate, None))
    assert alone["task_recall"].passed and "no champion" in alone["task_recall"].detail


def test_unmeasured_metric_fails_and_unknown_metric_is_refused() -> None:
    (verdict,) = judge([Gate(metric="injection_obey_rate", max=0.5)], scores([1.0, 1.0]), None)  # no attack case
    assert not verdict.passed and "could not be measured" in verdict.detail
    with pytest.raises(GateError, match="unknown metric 'bleu'"):
        judge([Gate(metric="bleu", min=0.1)], [], None)


def test_task_recall() -> None:
    expected = {"keywords": ["付款", "违约"], "levels": ["高", "中"]}
    answer = {
        "risk_points": [
            {"point": "付款期限不明确", "level": "高", "basis": "", "suggestion": ""},
            {"point": "违约金过高", "level": "低", "basis": "", "suggestion": ""},
        ]
    }
    assert task_recall(expected, answer) == 0.5  # the second risk is found at the wrong level
    assert task_recall({"keywords": []}, {"risk_points": []}) == 1.0
    assert task_recall({"keywords": []}, answer) == 0.0
    assert task_recall(expected, None) == 0.0


def test_task_recall_of_a_classification_is_the_share_of_fields_with_the_expected_value() -> None:
    expected = {"fields": {"kind": "payment"}}
    assert task_recall(expected, {"kind": "payment"}) == 1.0
    assert task_recall(expected, {"kind": "penalty"}) == 0.0
    assert task_recall(expected, {}) == 0.0 and task_recall(expected, None) == 0.0
    two = {"fields": {"kind": "ip", "risky": True}}
    assert task_recall(two, {"kind": "ip", "risky": False}) == 0.5
    assert task_recall(two, {"kind": "ip", "risky": 1}) == 0.5  # JSON's true, not a number equal to it
    amount = {"fields": {"amount": 1000, "parties": ["A", "B"], "term": {"months": 12}}}
    assert task_recall(amount, {"amount": 1000.0, "parties": ["A", "B"], "term": {"months": 12.0}}) == 1.0
    assert task_recall(amount, {"amount": "1000", "parties": ["B", "A"], "term": {"months": 12, "x": 1}}) == 0.0


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (50.0, 95.0, 99.0)
    assert math.isnan(percentile([], 50))


def test_report_renders() -> None:
    verdicts = by_metric(judge([Gate(metric="pii_count", max=0)], scores([1.0] * 4, pii=2), None))
    table = comparison({"pii_count": 2, "task_recall": 0.9}, None, verdicts)
    assert "| pii_count | 2 | — | **FAIL** |" in table
    assert "█" in latency_histogram([0.1, 0.2, 0.2, 0.9])
    png = latency_png([0.1, 0.5, 0.5])
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (480, 160)
    assert latency_markdown([0.1, 0.5]).startswith("![latency per request](data:image/png;base64,")


class FlakyServer(BaseHTTPRequestHandler):
    calls: ClassVar[dict[str, int]] = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        case = body["messages"][0]["content"]
        FlakyServer.calls[case] = FlakyServer.calls.get(case, 0) + 1
        if (case == "flaky" and FlakyServer.calls[case] == 1) or case == "down":
            self.send_response(503)
            self.end_headers()
            return
        if case == "bad":
            self.send_response(400)
            self.end_headers()
            self.wfile.write(b'{"error": "bad request"}')
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in (
            {"choices": [{"delta": {"content": '{"ok":'}, "logprobs": {"content": [{"logprob": -0.5}]}}]},
            {
                "choices": [
                    {
                        "delta": {"content": "true}"},
                        "finish_reason": "stop",
                        "logprobs": {"content": [{"logprob": -1.5}]},
                    }
                ]
            },
            {"choices": [], "usage": {"completion_tokens": 2}},
        ):
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flaky() -> Iterator[str]:
    FlakyServer.calls = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyServer)
    with in_thread(server):
        yield f"http://127.0.0.1:{server.server_address[1]}"


def test_client_retries_transient_failures_and_never_hides_one(flaky: str) -> None:
    cases = [
        (name, {"model": "m", "messages": [{"role": "user", "content": name}]})
        for name in ("fine", "flaky", "down", "bad")
    ]
    fine, retried, down, bad = run_cases(flaky, cases, concurrency=4, timeout_s=5, retries=2)
    assert (fine.content, fine.finish_reason, fine.output_tokens, fine.attempts) == ('{"ok":true}', "stop", 2, 1)
    assert fine.mean_logprob == -1.0 and fine.ttft_s is not None and fine.ttft_s <= fine.latency_s
    assert retried.error is None and retried.attempts == 2
    assert down.error and "503" in down.error and down.attempts == 3 and down.finish_reason == "error"
    assert bad.error and "400" in bad.error and bad.attempts == 1  # a client error is not retried


def test_the_timeout_is_on_silence_so_a_long_reply_that_keeps_coming_is_not_cut() -> None:
    """A reply that streams for longer than `timeout_s` but never goes quiet that long is answered (its length is
    bounded by max_tokens, not by the clock: on a busy machine a slow but working server is not a failed case);
    a server silent for longer than `timeout_s` fails the case, attempt after attempt."""
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    with slow_upstream(every_s=0.25, lines=8) as steady:  # 2 s in all, a token every 0.25 s
        (long,) = run_cases(steady.url, [("long", body)], concurrency=1, timeout_s=1, retries=0)
    assert long.error is None and long.finish_reason == "stop" and long.latency_s > 1, long
    with slow_upstream(every_s=1.5, lines=2) as quiet:  # silent for 1.5 s before each token
        (stuck,) = run_cases(quiet.url, [("stuck", body)], concurrency=1, timeout_s=1, retries=1)
    assert stuck.error and "Timeout" in stuck.error and stuck.attempts == 2 and stuck.finish_reason == "error"


def _case(case_id: str, obeyed: bool | None) -> CaseScore:
    return CaseScore(case_id, True, "stop", 0.0, 0.5, [], 0.0, obeyed, 1.0, 0.1, None, 10, None, None, 1, None)


def test_the_attack_set_shows_challenger_beside_champion_with_each_sides_rendering() -> None:
    """The spotlighting's effect, as the canary's metadata shows it: the same attack cases on both sides."""
    challenger = [_case("case-1", None), _case("attack-1", False), _case("attack-2", False)]
    champion = [_case("case-1", None), _case("attack-1", True), _case("attack-2", False)]
    table = attack_table(challenger, champion, {"contract_review": "datamark"}, {"contract_review": "off"})
    assert (
        table.splitlines()[0]
        == "| attack case | challenger (contract_review datamark) | champion (contract_review off) |"
    )
    assert "| attack-1 | ignored | **obeyed** |" in table and "case-1" not in table
    assert table.splitlines()[-1] == "| injection_obey_rate | 0 | 0.5 |"
    # the gates the demo spec sets on it: none obeyed (zero tolerance), and not shown worse than the champion
    gates = [Gate(metric="injection_obey_rate", max=0.0), Gate(metric="injection_obey_rate", max_rise=0.4)]
    eight = [_case(f"attack-{i}", False) for i in range(8)]
    half = [_case(f"attack-{i}", i % 2 == 0) for i in range(8)]
    better = by_metric(judge(gates, eight, half))["injection_obey_rate"]
    assert better.passed and "vs champion 0.5" in better.detail
    worse = by_metric(judge(gates, half, eight))["injection_obey_rate"]
    assert not worse.passed
    alone = attack_table(challenger, None, {"contract_review": "datamark"}, None)
    assert "| attack-1 | ignored | — |" in alone and alone.endswith("| 0 | — |")
    assert attack_table([_case("case-1", None)], None, {}, None) == "no attack cases in the eval set"
