"""The execution backend, chosen once: the only place that asks which target platform.yaml names."""

from __future__ import annotations

from ai_platform.backend.base import Backend, RolloutReport
from ai_platform.config import PlatformConfig

__all__ = ["Backend", "RolloutReport", "for_config"]


def for_config(config: PlatformConfig) -> Backend:
    """The backend platform.yaml's `execution.target` names, once it has checked the config has what it needs
    (a ConfigError naming the field otherwise)."""
    if config.execution.target == "kubernetes":
        from ai_platform.backend.kubernetes import KubernetesBackend

        return KubernetesBackend.check(config)
    from ai_platform.backend.embedded import EmbeddedBackend

    return EmbeddedBackend()
