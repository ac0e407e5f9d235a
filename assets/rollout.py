"""deployment: blue/green rollout of a candidate whose every blocking check passed."""

import dagster as dg

from ai_platform.errors import StageNotBuiltError
from assets.partitions import models_partitions


@dg.asset(
    partitions_def=models_partitions,
    deps=["canary_eval"],
    group_name="release",
    kinds={"vllm", "kubernetes"},
    owners=["team:ml-platform"],
    # eager() alone ignores blocking checks (Dagster issue 17332)
    automation_condition=dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed(),
    description="The idle color started, health-checked and warmed, then traffic switched atomically.",
)
def deployment() -> dg.MaterializeResult:
    raise StageNotBuiltError("deployment", issue=8)
