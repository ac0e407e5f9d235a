"""Each stage's code version, in one place.

Bump a stage's version when its logic (in its asset module or the ai_platform
code it calls) changes: the UI then marks its materializations stale, as it does
when an upstream data version changes.
"""

MODEL_SPEC = "2"  # 2: spec_valid refuses rate and count gates no eval set of its size can pass (issue 35)
WEIGHTS = "1"
QUANTIZE = "3"  # 3: on a CPU the workload calibrates and scores in float32 (a float16 source overflowed AWQ)
IMAGE = "3"  # 3: the image depends on the weights only (epoch timestamps, no spec description or commit)
PROMPTS = "1"
CANARY = "2"  # 2: gates decide on per-case pairs and one-sided bounds, not point estimates (issue 35)
ROLLOUT = "1"
