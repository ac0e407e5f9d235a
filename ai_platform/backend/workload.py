"""How a backend runs the pipeline's steps and its heavy workloads, as plain data.

The backend decides (`Backend.steps`, `Backend.workload`); the orchestration layer (`assets/execution.py`) only
hands these to Dagster: a `Subprocess` to its subprocess Pipes client, a `Pod` to its Kubernetes one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Steps:
    """Where a run's steps execute: processes on this machine, or (`namespace` set) a pod per step there."""

    max_concurrent: int
    namespace: str | None = None
    pod_labels: dict[str, str] = field(default_factory=dict)  # on each step pod (vLLM's NetworkPolicy admits them)
    # V1PodSpec fields (camelCase) of each step pod: the Secrets its image is pulled with, the user and the group
    # that owns its volumes, the volumes (the lake's data claim); and where its one container mounts them
    pod_spec: dict[str, Any] = field(default_factory=dict)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Subprocess:
    """`python -m module` on this machine, in its own environment."""

    command: list[str]
    env: dict[str, str]


@dataclass(frozen=True)
class Pod:
    """A pod of its own in the cluster: a V1PodSpec (camelCase), in `namespace`."""

    namespace: str
    spec: dict[str, Any]


Workload = Subprocess | Pod
