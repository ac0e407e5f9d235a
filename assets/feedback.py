"""feedback_labels and trust_model: reviewers' labels teach which answers to trust."""

import dagster as dg

from ai_platform.errors import StageNotBuiltError


@dg.asset(
    group_name="feedback",
    kinds={"duckdb", "csv"},
    owners=["team:legal-review"],
    description="Label files from the inbox, validated row by row; bad rows quarantined with file, line, reason.",
)
def feedback_labels() -> dg.MaterializeResult:
    raise StageNotBuiltError("feedback_labels", issue=9)


@dg.asset(
    deps=["feedback_labels"],
    group_name="feedback",
    kinds={"scikitlearn", "duckdb"},
    owners=["team:ml-platform"],
    description="A calibrated classifier of trustworthy generations; champion only if it beats the incumbent.",
)
def trust_model() -> dg.MaterializeResult:
    raise StageNotBuiltError("trust_model", issue=9)
