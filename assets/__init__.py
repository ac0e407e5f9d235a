"""The pipeline, one module per stage. Read these files top to bottom to see it whole:

platform_repo  model_spec
weights        raw_weights -> verified_weights
quantize       quantized_weights
image          model_image
prompts        compiled_prompts -> prompt_bundle
canary         canary_eval
rollout        deployment
feedback       generations -> feedback_labels -> trust_model -> trust_champion -> gateway
"""

import dagster as dg

from assets import canary, feedback, image, platform_repo, prompts, quantize, rollout, weights

MODULES = (platform_repo, weights, quantize, image, prompts, canary, rollout, feedback)
# The gateway is not run by Dagster: an external asset, so the graph shows what consumes the trust model.
all_assets = [*(a for module in MODULES for a in dg.load_assets_from_modules([module])), feedback.gateway]
all_checks = [c for module in MODULES for c in dg.load_asset_checks_from_modules([module])]

SHIP_CHAIN = (
    "model_spec",
    "raw_weights",
    "verified_weights",
    "quantized_weights",
    "model_image",
    "compiled_prompts",
    "prompt_bundle",
    "canary_eval",
    "deployment",
)

ship_model = dg.define_asset_job(
    "ship_model",
    selection=dg.AssetSelection.assets(*SHIP_CHAIN),
    description="Carry one model (partition) from its spec to a live blue/green deployment.",
)
ingest_feedback = dg.define_asset_job(
    "ingest_feedback",
    selection=dg.AssetSelection.assets("generations", "feedback_labels"),
    description="Take stock of what was served and ingest the reviewers' label files from the inbox.",
)
learn_from_feedback = dg.define_asset_job(
    "learn_from_feedback",
    selection=dg.AssetSelection.assets("trust_model", "trust_champion"),
    description="Train one served model's (partition's) trust model on its labels; promote it if it earns it.",
)
# Labels ingested -> each model's trust model retrains, and is promoted only past its blocking checks.
feedback_automation = dg.AutomationConditionSensorDefinition(
    "feedback_automation",
    target=dg.AssetSelection.assets("trust_model", "trust_champion"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Retrains each model's trust model when new labels are ingested, and promotes it past its checks.",
)
