"""canary_eval: the candidate on real vLLM against the eval set, gated on quality."""

import dagster as dg

from ai_platform.errors import StageNotBuiltError
from assets.partitions import models_partitions


@dg.asset(
    partitions_def=models_partitions,
    deps=["model_image", "prompt_bundle"],
    group_name="release",
    kinds={"vllm", "duckdb"},
    owners=["team:ml-platform"],
    description="Champion vs challenger on the eval set: schema validity, repetition, coherence, PII, recall, latency.",
)
def canary_eval() -> dg.MaterializeResult:
    raise StageNotBuiltError("canary_eval", issue=7)
