"""The pipeline, one module per stage. Read these files top to bottom to see it whole:

platform_repo  model_spec
weights        raw_weights -> verified_weights
quantize       quantized_weights
image          model_image
prompts        compiled_prompts -> prompt_bundle
canary         canary_eval
rollout        deployment
feedback       feedback_labels -> trust_model
"""

import dagster as dg

from assets import canary, feedback, image, platform_repo, prompts, quantize, rollout, weights

MODULES = (platform_repo, weights, quantize, image, prompts, canary, rollout, feedback)
all_assets = [a for module in MODULES for a in dg.load_assets_from_modules([module])]
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
learn_from_feedback = dg.define_asset_job(
    "learn_from_feedback",
    selection=dg.AssetSelection.assets("feedback_labels", "trust_model"),
    description="Ingest reviewer labels and retrain the trust model.",
)
