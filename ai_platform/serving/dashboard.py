"""The Grafana dashboard: the gateway's golden metrics beside vLLM's own, built with grafana-foundation-sdk.

One dashboard for every model, chosen with the `model` variable (the gateway's
`model` label, vLLM's `model_name`: the served name is the spec's name). The
rows follow the reference article: traffic and admission, reply quality (the
golden metrics, with the alert thresholds drawn), guards, the generation log,
and the model servers. `ai-platform rollout render` ships it as a ConfigMap that
Grafana's dashboard sidecar picks up; `deploy/grafana/ai-platform.json` is the
same JSON for a manual import.
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import common, dashboard, prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import GraphThresholdsStyleMode
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    Threshold,
    ThresholdsMode,
    VariableRefresh,
)

UID = "ai-platform-gateway"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
GATEWAY = 'model=~"$model"'
VLLM = 'model_name=~"$model"'
RATE = "[$__rate_interval]"


def _query(expr: str, legend: str, ref: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DATASOURCE)


def _panel(
    title: str, unit: str, queries: list[tuple[str, str]], description: str, threshold: float | None = None
) -> timeseries.Panel:
    panel = timeseries.Panel().title(title).description(description).unit(unit).datasource(DATASOURCE).height(8)
    panel = panel.span(8)
    for ref, (expr, legend) in zip("ABCDEFGH", queries, strict=False):
        panel = panel.with_target(_query(expr, legend, ref))
    if threshold is not None:  # the alert's threshold, drawn as a red line
        steps = [Threshold(value=None, color="green"), Threshold(value=threshold, color="red")]
        panel = panel.thresholds(dashboard.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(steps))
        panel = panel.thresholds_style(common.GraphThresholdsStyleConfig().mode(GraphThresholdsStyleMode.LINE))
    return panel


def _quantile(q: float, metric: str, match: str, by: str = "") -> str:
    return f"histogram_quantile({q}, sum by (le{by}) (rate({metric}_bucket{{{match}}}{RATE})))"


def _ratio(numerator: str, denominator: str) -> str:
    return f"sum(rate({numerator}{RATE})) / sum(rate({denominator}{RATE}))"


def traffic() -> list[timeseries.Panel]:
    return [
        _panel(
            "Requests by status",
            "reqps",
            [(f"sum by (status) (rate(ai_platform_gateway_requests_total{{{GATEWAY}}}{RATE}))", "{{status}}")],
            "Every request the gateway answered, by HTTP status (429: refused by admission control).",
        ),
        _panel(
            "Latency",
            "s",
            [
                (_quantile(0.5, "ai_platform_gateway_request_duration_seconds", GATEWAY), "p50"),
                (_quantile(0.99, "ai_platform_gateway_request_duration_seconds", GATEWAY), "p99"),
                (_quantile(0.95, "ai_platform_gateway_time_to_first_token_seconds", GATEWAY), "p95 first token"),
            ],
            "Whole-request latency and time to the first token, at the gateway.",
        ),
        _panel(
            "Admission",
            "reqps",
            [(f"sum by (decision) (rate(ai_platform_admission_decisions_total{{{GATEWAY}}}{RATE}))", "{{decision}}")],
            "Weighted admission control: admitted, degraded (smaller max_tokens), rejected (429),"
            " too_large (413: never admissible).",
        ),
        _panel(
            "Weight decided",
            "short",
            [
                (
                    f"sum by (decision) (rate(ai_platform_admission_weight_sum{{{GATEWAY}}}{RATE}))",
                    "{{decision}} weight/s",
                )
            ],
            "Request weight per second by decision (input tokens + 4 x max_tokens, in units of 256): "
            "the admitted line is the load the budget holds.",
        ),
    ]


def quality() -> list[timeseries.Panel]:
    match = f"{{{GATEWAY}}}"
    return [
        _panel(
            "Schema-valid replies",
            "percentunit",
            [(_ratio(f"ai_platform_replies_schema_valid_total{match}", f"ai_platform_replies_total{match}"), "valid")],
            "Share of prompt replies that the prompt's output schema accepts (alert under 99%).",
            threshold=0.99,
        ),
        _panel(
            "Repetition (seq-rep-4)",
            "percentunit",
            [
                (
                    _ratio(
                        f"ai_platform_reply_repetition_ratio_sum{match}",
                        f"ai_platform_reply_repetition_ratio_count{match}",
                    ),
                    "mean",
                )
            ],
            "Mean share of repeated 4-grams in replies; the article alerts above 5%.",
            threshold=0.05,
        ),
        _panel(
            "Trust",
            "percentunit",
            [
                (_quantile(0.5, "ai_platform_reply_trust_score", GATEWAY), "p50 trust score"),
                (
                    _ratio(f"ai_platform_replies_needing_review_total{match}", f"ai_platform_replies_total{match}"),
                    "needs review",
                ),
            ],
            "The champion trust model's score of replies, and the share below the review threshold.",
            threshold=0.7,
        ),
    ]


def guards() -> list[timeseries.Panel]:
    return [
        _panel(
            "PII in replies",
            "short",
            [(f"sum by (kind) (increase(ai_platform_reply_pii_entities_total{{{GATEWAY}}}{RATE}))", "{{kind}}")],
            "Validated PII entities found in replies (any is an alert).",
            threshold=1,
        ),
        _panel(
            "System prompt leaked",
            "short",
            [(f"sum by (prompt) (increase(ai_platform_reply_prompt_leaks_total{{{GATEWAY}}}{RATE}))", "{{prompt}}")],
            "Prompt-run replies repeating a run of their compiled system prompt (guards.leak; any is an alert).",
            threshold=1,
        ),
        _panel(
            "Prompt-injection score",
            "percentunit",
            [(_quantile(0.95, "ai_platform_request_injection_score", GATEWAY), "p95")],
            "Injection score of inputs; at 0.8 and above the guard blocks.",
            threshold=0.8,
        ),
        _panel(
            "Guard actions",
            "reqps",
            [
                (
                    f"sum by (guard, action) (rate(ai_platform_guard_actions_total{{{GATEWAY}}}{RATE}))",
                    "{{guard}} {{action}}",
                )
            ],
            "What the guards did: block, mask, log.",
        ),
    ]


def generation_log() -> list[timeseries.Panel]:
    return [
        _panel(
            "Generation log",
            "short",
            [
                ("sum(ai_platform_generation_log_pending)", "pending"),
                (f"sum(rate(ai_platform_generation_log_written_total{RATE}))", "written/s"),
                (f"sum(rate(ai_platform_generation_log_write_failures_total{RATE}))", "failed writes/s"),
            ],
            "Generations journaled but not yet in the warehouse, and the writer's progress (failures are retried).",
        ),
        _panel(
            "Live color",
            "short",
            [(f"ai_platform_gateway_live_color{{{GATEWAY}}}", "{{model}} {{color}}")],
            "The color each model is served by; a step is a rollout.",
        ),
    ]


def serving_health() -> list[timeseries.Panel]:
    return [
        _panel(
            "Model servers up",
            "short",
            [
                (f"ai_platform_gateway_upstream_up{{{GATEWAY}}}", "up {{model}} {{color}}"),
                (f"ai_platform_gateway_upstream_restarts{{{GATEWAY}}}", "restarts {{model}} {{color}}"),
            ],
            "1 while a model's live server passes the gateway's health checks (0: its requests get 503 with "
            "Retry-After); restarts of the live colour by the embedded supervisor (alert: 3 in 15 minutes).",
        ),
        _panel(
            "Outages, cancelled requests, refused states",
            "short",
            [
                (f"sum by (model) (increase(ai_platform_gateway_upstream_down_total{{{GATEWAY}}}{RATE}))", "outages"),
                (f"sum by (model) (rate(ai_platform_gateway_cancelled_total{{{GATEWAY}}}{RATE}))", "cancelled/s"),
                (
                    f"sum by (model) (increase(ai_platform_gateway_states_refused_total{{{GATEWAY}}}{RATE}))",
                    "states refused",
                ),
            ],
            "Model servers found down; requests whose caller left (their model server call closed); rollout "
            "states the gateway refused (it serves the last good one).",
        ),
        _panel(
            "Admission on a replica's own windows",
            "short",
            [(f"sum(rate(ai_platform_gateway_window_fallbacks_total{{{GATEWAY}}}{RATE}))", "decisions/s")],
            "Admission decisions taken on a gateway replica's own windows because the shared store (the kit's "
            "Redis) could not be reached: each replica then admits up to the whole budget.",
        ),
    ]


def model_servers() -> list[timeseries.Panel]:
    return [
        _panel(
            "vLLM requests",
            "short",
            [
                (f"sum(vllm:num_requests_running{{{VLLM}}})", "running"),
                (f"sum(vllm:num_requests_waiting{{{VLLM}}})", "waiting"),
            ],
            "Requests the model servers run and queue (alert: more than 20 waiting).",
        ),
        _panel(
            "vLLM KV cache",
            "percentunit",
            [(f"max(vllm:kv_cache_usage_perc{{{VLLM}}})", "max")],
            "KV-cache use of the fullest server (alert above 95%); KEDA scales on it.",
            threshold=0.95,
        ),
        _panel(
            "vLLM tokens and first token",
            "short",
            [
                (f"sum(rate(vllm:generation_tokens_total{{{VLLM}}}{RATE}))", "generated tokens/s"),
                (_quantile(0.95, "vllm:time_to_first_token_seconds", VLLM), "p95 first token (s)"),
            ],
            "Decode throughput and p95 time to first token inside the servers.",
        ),
    ]


def build() -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard("ai-platform: gateway and models")
        .uid(UID)
        .tags(["ai-platform", "vllm"])
        .refresh("30s")
        .time("now-3h", "now")
        .with_variable(dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
        .with_variable(
            dashboard.QueryVariable("model")
            .label("Model")
            .datasource(DATASOURCE)
            .query("label_values(ai_platform_gateway_live_color, model)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .multi(True)
            .include_all(True)
        )
    )
    rows = [
        ("Traffic and admission", traffic()),
        ("Reply quality (golden metrics)", quality()),
        ("Guards", guards()),
        ("Generation log and rollouts", generation_log()),
        ("Serving health", serving_health()),
        ("Model servers (vLLM)", model_servers()),
    ]
    ids = iter(range(1, 100))  # Grafana links to a panel by its id: unique and stable
    for title, panels in rows:
        board = board.with_row(dashboard.Row(title).id(next(ids)))
        for panel in panels:
            board = board.with_panel(panel.id(next(ids)))
    return board


def as_json() -> dict[str, Any]:
    """The dashboard as Grafana imports it."""
    loaded: dict[str, Any] = json.loads(json.dumps(build().build(), cls=JSONEncoder))
    return loaded


def text() -> str:
    return json.dumps(as_json(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m ai_platform.serving.dashboard > deploy/grafana/ai-platform.json
    print(text(), end="")


def expressions(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard's panels."""
    return [t["expr"] for p in board.get("panels", []) for t in p.get("targets", []) if "expr" in t]
