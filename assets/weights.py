"""raw_weights (pinned download) and verified_weights (every byte checked)."""

import dagster as dg

from ai_platform.errors import StageNotBuiltError
from assets.partitions import models_partitions


@dg.asset(
    partitions_def=models_partitions,
    deps=["model_spec"],
    group_name="weights",
    kinds={"huggingface", "safetensors"},
    owners=["team:ml-platform"],
    description="The spec's source downloaded at exactly one commit, with per-file sha256.",
)
def raw_weights() -> dg.MaterializeResult:
    raise StageNotBuiltError("raw_weights", issue=3)


@dg.asset(
    partitions_def=models_partitions,
    deps=["raw_weights"],
    group_name="weights",
    kinds={"safetensors", "duckdb"},
    owners=["team:ml-platform"],
    description="Strict safetensors header validation and per-tensor sha256 against the trusted manifest.",
)
def verified_weights() -> dg.MaterializeResult:
    raise StageNotBuiltError("verified_weights", issue=3)
