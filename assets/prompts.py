"""compiled_prompts and prompt_bundle: .prompt files into schema-enforced requests."""

import dagster as dg

from ai_platform.errors import StageNotBuiltError
from assets.partitions import models_partitions


@dg.asset(
    partitions_def=models_partitions,
    deps=["model_spec"],
    group_name="prompts",
    kinds={"json"},
    owners=["team:prompt-owners"],
    description="Every prompt the spec uses, compiled to canonical JSON with a JSON Schema 2020-12 output.",
)
def compiled_prompts() -> dg.MaterializeResult:
    raise StageNotBuiltError("compiled_prompts", issue=4)


@dg.asset(
    partitions_def=models_partitions,
    deps=["compiled_prompts"],
    group_name="prompts",
    kinds={"oci"},
    owners=["team:prompt-owners"],
    description="All compiled prompts of a model as one small OCI artifact; hot-reloaded by the gateway.",
)
def prompt_bundle() -> dg.MaterializeResult:
    raise StageNotBuiltError("prompt_bundle", issue=4)
