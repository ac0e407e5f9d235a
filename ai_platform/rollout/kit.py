"""The cluster-wide kit: what an operator applies once, before any model exists, and again when it changes.

Rendered from platform.yaml alone (no model, no model image): the run pods' ServiceAccount and Role and the
operator's Role (`rbac.py`), the gateway in front of every model (`cluster_gateway.py`) and the reap CronJob
(`operator.py`). A model's own objects (its colours,
Service, autoscaler, NetworkPolicy, monitoring) are applied by the pipeline's rollout, never by hand.
`ai-platform rollout kit` writes these; `ai-platform rollout render MODEL` writes them next to a model's.
The gateway's Redis (`redis_kit.py`) and its PodMonitor and alerts are in it too; whatever else the cluster needs
once joins this list, here.
"""

from __future__ import annotations

from typing import Any

from ai_platform.config import Platform
from ai_platform.rollout import cluster_gateway, operator, rbac, redis_kit


def cluster_kit(platform: Platform, gateway_image: str | None = None) -> list[dict[str, Any]]:
    """Every cluster-wide object, in the order they are applied: who the run pods (and operators) are, the gateway
    replicas' shared admission windows (the kit's Redis, unless platform.yaml names another), the gateway and its
    monitoring, then the reap CronJob."""
    return [
        *rbac.manifests(platform),
        *redis_kit.manifests(platform),
        *cluster_gateway.manifests(platform, gateway_image),
        *operator.manifests(platform, gateway_image),
    ]
