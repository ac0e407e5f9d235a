"""The article's review-and-retrieve step through the real gateway: a reply the champion trust model scores under
the threshold is asked again with clauses from the retrieval corpus; the better-trusted reply stands, and a reply
still under it is marked needs_review with the clauses attached (a stand-in model server answers)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_upstream import FakeUpstream
from gateway_harness import MODEL, api_key, client, roll_out
from starlette.testclient import TestClient

from ai_platform.trust.model import TrustModel
from ai_platform.warehouse import Warehouse

PROMPT = b'system: "Review the contract."\nuser: "{{text}}"\noutput_schema: {"risk_points": [{"point": "string"}]}\n'
CORPUS = [
    {"text": "违约金过高（民法典第五百八十五条）：约定的违约金超过造成损失的百分之三十的，可请求适当减少。"},
    {"text": "付款期限不明确（民法典第五百一十一条）：履行期限不明确的，债务人可以随时履行。"},
]
CONTRACT = "第1条 任何一方违约，应向对方支付合同总额80%的违约金。"
NONE = json.dumps({"risk_points": []})
TWO = json.dumps({"risk_points": [{"point": "违约金过高"}, {"point": "付款期限不明确"}]}, ensure_ascii=False)


def gateway(home: Path, upstream: FakeUpstream) -> TestClient:
    """A champion that trusts a reply by how many risk points it raises: none 0.18, two 0.99."""
    warehouse = Warehouse(home / "wh.duckdb")
    trust = TrustModel(["risk_points"], [0.0], [1.0], [3.0], -1.5)
    with warehouse.write() as con:
        con.execute(
            "INSERT INTO trust_models (version, algorithm, features, metrics, champion, artifact_path, model,"
            " served_model) VALUES (?, 'logistic_regression', '[]', '{}', true, '', ?, ?)",
            [trust.version, trust.to_bytes().decode(), MODEL],
        )
    corpus = home / "legal_basis.jsonl"
    corpus.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CORPUS), encoding="utf-8")
    roll_out(home, upstream, prompt=PROMPT, retrieval_corpus=str(corpus))
    return client(home, api_key(home))


def ask(client: TestClient) -> dict[str, object]:
    reply = client.post("/v1/prompts/review:run", json={"variables": {"text": CONTRACT}})
    assert reply.status_code == 200, reply.text
    client.app.state.gateway.log.flush()  # type: ignore[attr-defined]
    body: dict[str, object] = reply.json()
    return body


def stored(home: Path) -> dict[str, object]:
    _, rows = Warehouse(home / "wh.duckdb").query("SELECT output, trust_score, needs_review, metrics FROM generations")
    ((output, trust, review, metrics),) = rows
    return {"output": output, "trust": trust, "needs_review": review, "metrics": json.loads(metrics)}


def test_a_low_trust_reply_is_asked_again_with_the_clauses_and_the_better_reply_stands(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    upstream.reply(NONE)  # missed the penalty clause: trust 0.18
    upstream.reply(TWO)  # with the legal basis in front of it: trust 0.99
    with gateway(tmp_path, upstream) as client:
        body = ask(client)
    assert len(upstream.requests) == 2
    second = upstream.requests[1]["messages"]
    note = [m["content"] for m in second if m["role"] == "system" and "Reference clauses" in m["content"]]
    assert note and "民法典第五百八十五条" in note[0], second  # the penalty clause's basis was retrieved
    assert body["needs_review"] is False and body["trust_score"] > 0.9
    assert body["output"] == json.loads(TWO)
    retrieval = body["retrieval"]
    assert retrieval["outcome"] == "improved" and retrieval["first_trust_score"] < 0.7
    row = stored(tmp_path)
    assert row["output"] == TWO and row["needs_review"] is False
    assert row["metrics"]["retrieval"]["clauses"][0].startswith("违约金过高")


def test_a_reply_still_untrusted_after_the_re_ask_is_marked_needs_review_with_the_clauses(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    upstream.reply(NONE)
    upstream.reply(NONE)
    with gateway(tmp_path, upstream) as client:
        body = ask(client)
    assert body["needs_review"] is True and body["trust_score"] < 0.7
    assert body["retrieval"]["outcome"] == "not_improved"
    assert any("民法典第五百八十五条" in c for c in body["retrieval"]["clauses"])
    row = stored(tmp_path)
    assert row["needs_review"] is True and row["metrics"]["retrieval"]["clauses"] == body["retrieval"]["clauses"]


def test_a_trusted_reply_is_not_asked_again(tmp_path: Path, upstream: FakeUpstream) -> None:
    upstream.reply(TWO)
    with gateway(tmp_path, upstream) as client:
        body = ask(client)
    assert len(upstream.requests) == 1 and "retrieval" not in body and body["needs_review"] is False
