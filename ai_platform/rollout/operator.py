"""Operator commands that must run inside the cluster, run there: one operator pod template, a rollback's Job and
the reap CronJob.

A rollback is a switch (`kubernetes.apply_rollout`), which warms every pod of the new colour up at its pod IP
before the Service flips, through the model's NetworkPolicy that admits only the gateway and run pods. From an
operator's laptop outside the pod network that cannot connect, so `ai-platform rollout rollback MODEL` on the
kubernetes target, run outside the cluster, submits a Job whose pod runs the same command with `--here` as a run
pod (`submit_rollback`), waits for it and prints its pod's log. The reap (`rollout reap --all`) runs every few
minutes from a CronJob of the same pod (`reap_cron_job`, in the cluster kit).

The operator pod (`pod_spec`) is a run pod in every way a model's objects tell one apart: the code-location image
(`kubernetes.gateway.image`, pinned by digest), the run pods' account (`rbac.NAME`), their label (`RUN_POD`, which
vLLM's NetworkPolicy admits), the pipeline's environment (the ConfigMap `kubernetes.pipeline_env_config_map`:
the repo and branch to read, and the Secrets the Dagster run pods get), the pull Secrets, the image's user and the
lake's claim (a rollback writes a `deployments` row to the warehouse). It asks for no GPU; its root filesystem
is read-only and its home and /tmp are emptyDirs, as the gateway's.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from collections.abc import Callable
from typing import Any

from ai_platform.config import OBJECT_NAME_MAX, ROLLBACK_HEX, Platform
from ai_platform.errors import ConfigError, ServingError
from ai_platform.kube import lake_volume, non_root, pull_secrets
from ai_platform.logs import Log
from ai_platform.rollout import rbac
from ai_platform.rollout.cluster_gateway import gateway_image
from ai_platform.rollout.kubernetes import RUN_POD

HOME = "/var/lib/ai-platform"  # the pod's home: where the repo's commit is exported; an emptyDir
ROLLOUT_TIMEOUT_S = 1800  # `kubernetes.apply_rollout`'s default: how long a switch may wait for its pods
DEADLINE_S = ROLLOUT_TIMEOUT_S + 600  # a rollback Job's activeDeadlineSeconds: the switch, plus cloning and writing
JOB_TTL_S = 24 * 3600  # a finished Job (and its pod's log) is kept a day, then deleted by the TTL controller
REAP_SCHEDULE = "*/5 * * * *"
REAP_CRON_JOB = "ai-platform-reap"
COMPONENT = "app.kubernetes.io/component"


def in_cluster(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether this process runs in a pod: the kubelet sets KUBERNETES_SERVICE_HOST in every container."""
    return bool(environ.get("KUBERNETES_SERVICE_HOST"))


def labels(component: str, model: str | None = None) -> dict[str, str]:
    """An operator pod's labels: the run pods' (vLLM's NetworkPolicy admits them), and what it is."""
    found = {
        **RUN_POD,
        "app.kubernetes.io/name": "ai-platform-operator",
        "app.kubernetes.io/part-of": "ai-platform",
        COMPONENT: component,
    }
    return found | ({"ai-platform/model": model} if model else {})


def pod_spec(platform: Platform, command: list[str], image: str | None = None) -> dict[str, Any]:
    """The operator pod (a V1PodSpec, camelCase): `command` in the code-location image as a run pod."""
    k8s = platform.config.kubernetes
    lake_volumes, lake_mounts = lake_volume(platform)
    env_from: list[dict[str, Any]] = [{"configMapRef": {"name": k8s.pipeline_env_config_map}}]
    env_from += [
        {"secretRef": {"name": name}}
        for name in (k8s.registry_secret, k8s.lake_secret, k8s.vllm_api_key_secret, k8s.git_secret)
        if name
    ]
    container = {
        "name": "operator",
        "image": gateway_image(platform, image),
        "command": command,
        "envFrom": env_from,
        "env": [{"name": "HOME", "value": HOME}, {"name": "TMPDIR", "value": "/tmp"}],
        "workingDir": HOME,
        "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": [{"name": "home", "mountPath": HOME}, {"name": "tmp", "mountPath": "/tmp"}, *lake_mounts],
        "securityContext": {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return {
        "serviceAccountName": rbac.NAME,
        "restartPolicy": "Never",
        "securityContext": non_root(),
        **pull_secrets(platform),
        "containers": [container],
        "volumes": [{"name": "home", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}, *lake_volumes],
    }


def job_name(model: str, suffix: str | None = None) -> str:
    """`<model>-rollback-<5 hex>`: a Job's name is a label value too (`job-name`), 63 characters at most."""
    name = f"{model}-rollback-{suffix or secrets.token_hex(3)[:ROLLBACK_HEX]}"
    if len(name) > OBJECT_NAME_MAX:
        raise ConfigError(f"{model}: the rollback Job's name {name!r} is longer than {OBJECT_NAME_MAX} characters")
    return name


def rollback_job(platform: Platform, model: str, name: str | None = None) -> dict[str, Any]:
    """The Job that runs `ai-platform rollout rollback MODEL --here` in the cluster, once (no retry: a second
    switch on a half-done one is the operator's decision), for at most DEADLINE_S, kept JOB_TTL_S when done."""
    name = name or job_name(model)
    command = ["ai-platform", "rollout", "rollback", model, "--here", "--home", HOME]
    found = labels("rollback", model)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": platform.config.kubernetes.namespace, "labels": found},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": DEADLINE_S,
            "ttlSecondsAfterFinished": JOB_TTL_S,
            "template": {"metadata": {"labels": found}, "spec": pod_spec(platform, command)},
        },
    }


def reap_cron_job(platform: Platform, image: str | None = None) -> dict[str, Any]:
    """Every 5 minutes, `ai-platform rollout reap --all`: each model's colour kept warm past its rollback window
    is paused at 0 replicas (`kubernetes.reap_idle`), so it does not hold its GPUs until the next rollout. One run
    at a time (`Forbid`); a run that is late by more than a schedule's period is skipped."""
    command = ["ai-platform", "rollout", "reap", "--all", "--home", HOME]
    found = labels("reap")
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": REAP_CRON_JOB, "namespace": platform.config.kubernetes.namespace, "labels": found},
        "spec": {
            "schedule": REAP_SCHEDULE,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 300,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "metadata": {"labels": found},
                "spec": {
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": 600,
                    "ttlSecondsAfterFinished": 3600,
                    "template": {"metadata": {"labels": found}, "spec": pod_spec(platform, command, image)},
                },
            },
        },
    }


def manifests(platform: Platform, image: str | None = None) -> list[dict[str, Any]]:
    """What the kit renders of this: the reap CronJob (a rollback's Job is made when one is asked for)."""
    return [reap_cron_job(platform, image)]


def submit_rollback(
    platform: Platform,
    model: str,
    client: Any,
    log: Log,
    *,
    out: Callable[[str], None] = lambda text: print(text, file=sys.stderr, end=""),
    poll_s: float = 5.0,
    timeout_s: float = DEADLINE_S + 120,
) -> str:
    """Create the rollback Job, wait until it has succeeded or failed (saying so every minute; its status read
    every `poll_s` at most), write its pod's log to `out`; the Job's name, or a ServingError with the Job's
    failure. `client`: a kubernetes ApiClient (`backend.kubernetes.connect(namespace).client`). The calls (the
    operator's Role, `rbac.OPERATOR_RULES`): create a Job, get its status, list its pods, get a pod's log."""
    from kubernetes.client import BatchV1Api, CoreV1Api
    from kubernetes.client.exceptions import ApiException

    namespace = platform.config.kubernetes.namespace
    job = rollback_job(platform, model)
    name: str = job["metadata"]["name"]
    batch, core = BatchV1Api(client), CoreV1Api(client)
    try:
        batch.create_namespaced_job(namespace, job)
    except ApiException as exc:
        raise ServingError(f"{namespace}/job {name}: creating it: {exc.status} {exc.reason}") from None
    log(
        f"{model}: the rollback runs in the cluster, where vLLM's pods are reachable: Job {namespace}/{name}"
        " (`--here` runs it on this machine instead)"
    )
    started = time.monotonic()
    said, wait = started, 0.25  # a quick Job is seen quickly: the wait doubles up to poll_s
    while True:
        try:
            status = batch.read_namespaced_job_status(name, namespace).status
        except ApiException as exc:
            raise ServingError(f"{namespace}/job {name}: reading its status: {exc.status} {exc.reason}") from None
        outcome = finished(status)
        if outcome is not None:
            break
        now = time.monotonic()
        if now - started > timeout_s:
            raise ServingError(
                f"{namespace}/job {name}: not finished after {timeout_s:.0f}s; it goes on in the cluster"
                f" ({follow_log(core, namespace, name)})"
            )
        if now - said >= 60:
            log(f"{model}: Job {name} running for {now - started:.0f}s (active pods: {status.active or 0})")
            said = now
        time.sleep(wait)
        wait = min(poll_s, wait * 2)
    text = pod_log(core, namespace, name)
    if text:
        out(text if text.endswith("\n") else text + "\n")
    succeeded, why = outcome
    if not succeeded:
        raise ServingError(f"{namespace}/job {name} failed: {why}; the Service is as the log above says")
    return name


def finished(status: Any) -> tuple[bool, str] | None:
    """(succeeded, why) once a Job's status says it is done (its Complete or Failed condition, or a count);
    None while it runs."""
    for condition in (status.conditions if status else None) or []:
        if condition.status != "True":
            continue
        if condition.type == "Complete":
            return True, ""
        if condition.type == "Failed":
            return False, f"{condition.reason or 'Failed'}: {condition.message or 'its pod failed'}"
    if status and status.succeeded:
        return True, ""
    if status and status.failed:
        return False, "its pod failed"
    return None


def job_pod(core: Any, namespace: str, job: str) -> str | None:
    """The name of the Job's pod (the last one made, there is one with backoffLimit 0); None before it has one."""
    pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items
    if not pods:
        return None
    name: str = max(pods, key=lambda p: (str(p.metadata.creation_timestamp or ""), p.metadata.name)).metadata.name
    return name


def follow_log(core: Any, namespace: str, job: str) -> str:
    """How the operator follows the Job's pod's log with what their Role grants (`rbac.OPERATOR_RULES`): `get` on
    pods/log alone. `kubectl logs POD` (or `job/NAME`) reads the pod (or the Job) first, which the Role does not
    grant; `get --raw` on the log's path is that one call."""
    pod = job_pod(core, namespace, job)
    if pod is None:
        return f"no pod yet; `kubectl -n {namespace} get pods -l job-name={job}` lists it once it is made"
    return f"its log: `kubectl get --raw '/api/v1/namespaces/{namespace}/pods/{pod}/log?follow=true'`"


def pod_log(core: Any, namespace: str, job: str) -> str:
    """The log of the Job's pod (`job_pod`); empty if it has none."""
    from kubernetes.client.exceptions import ApiException

    pod = job_pod(core, namespace, job)
    if pod is None:
        return ""
    try:
        text: str = core.read_namespaced_pod_log(pod, namespace)
    except ApiException as exc:
        return f"(no log from {namespace}/{pod}: {exc.status} {exc.reason})\n"
    return text
