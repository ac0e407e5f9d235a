"""A rollback from a laptop runs in the cluster (issue 31, "operator commands from anywhere"): the switch warms the
new colour's pods up at their pod IPs, which only run pods reach, so outside the cluster `rollout rollback` submits
a Job of the kit's operator pod that runs `rollout rollback MODEL --here`, waits, prints its log and exits as it
did. The reap runs every 5 minutes from the kit's CronJob (`rollout reap --all`). The operator's Role is held to
the calls the laptop commands make.

Driven through the real `kubernetes` client against the stand-in API server (`fake_kube`), whose Job controller
runs the Job's pod as a subprocess of the very command the Job names (the ConfigMap's AI_PLATFORM_REPO set, as the
pipeline's environment sets it), against the same stand-in cluster and artifact store."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import MODEL, ROOT
from fake_kube import PAUSED
from test_rollout_ops import CODE_IMAGE, kubernetes_platform, ops, roll
from test_rollout_switch import NS, Cluster, running

from ai_platform.config import load_platform
from ai_platform.platform_repo import git
from ai_platform.records import Records
from ai_platform.rollout import operator, rbac
from ai_platform.rollout.kubernetes import RUN_POD

JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"


@pytest.fixture
def repo(own_demo_repo: Path, tmp_path: Path) -> Path:
    return kubernetes_platform(own_demo_repo, tmp_path / "cluster-store")


@pytest.fixture
def cluster(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    for name in ("AI_PLATFORM_REPO", "AI_PLATFORM_HOME", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)  # a laptop's shell
    with running(load_platform(repo, home=tmp_path / "step-pod"), tmp_path, monkeypatch) as found:
        yield found


def the_pod(repo: Path, tmp_path: Path) -> Any:
    """The kubelet of a Job's pod: its container's command, run here with the pipeline's environment (the
    ConfigMap's AI_PLATFORM_REPO), its home an empty folder; (exited 0, its log)."""

    def run(job: dict[str, Any]) -> tuple[bool, str]:
        (container,) = job["spec"]["template"]["spec"]["containers"]
        command = list(container["command"])
        assert command[0] == "ai-platform"
        command[command.index("--home") + 1] = str(tmp_path / "pod-home")
        env = {**os.environ, "AI_PLATFORM_REPO": str(repo), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-m", "ai_platform.cli", *command[1:]],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
        )  # fmt: skip
        return done.returncode == 0, done.stdout + done.stderr

    return run


def two_releases(cluster: Cluster) -> None:
    roll(cluster, cluster.platform, "1")
    roll(cluster, cluster.platform, "2")
    assert cluster.obj("services", MODEL)["spec"]["selector"]["ai-platform/color"] == "green"


def test_a_rollback_from_a_laptop_runs_as_one_job_in_the_cluster_and_prints_its_log(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_releases(cluster)
    cluster.kube.on_job = the_pod(repo, tmp_path)
    where = ("--repo", str(repo), "--home", str(tmp_path / "laptop"), "--json")
    mark = len(cluster.kube.calls)
    code, done, err = ops(capsys, "rollout", "rollback", MODEL, *where)
    assert code == 0, err
    posted = [path for method, path in cluster.kube.calls[mark:] if method == "POST"]
    assert posted == [JOBS]  # exactly one Job, and nothing else created from here
    name = done["job"]
    assert name.startswith(f"{MODEL}-rollback-") and len(name) == len(MODEL) + len("-rollback-") + 5
    job = cluster.obj("jobs", name)
    assert job["spec"] == operator.rollback_job(cluster.platform, MODEL, name)["spec"]
    kubernetes_validate.validate(operator.rollback_job(cluster.platform, MODEL, name), "1.35.0", strict=True)
    pod = job["spec"]["template"]
    assert RUN_POD.items() <= pod["metadata"]["labels"].items()  # vLLM's NetworkPolicy admits it
    (container,) = pod["spec"]["containers"]
    assert container["command"][:5] == ["ai-platform", "rollout", "rollback", MODEL, "--here"]
    assert container["image"] == CODE_IMAGE and pod["spec"]["serviceAccountName"] == rbac.NAME
    assert "nvidia.com/gpu" not in yaml.safe_dump(container["resources"])
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] > 1800
    # what the pod did, and said: the switch back, in the cluster
    assert "live on blue" in err  # its log, printed here
    assert done["color"] == "blue" and done["image"] == "sha256:" + "1" * 64
    assert cluster.obj("services", MODEL)["spec"]["selector"]["ai-platform/color"] == "blue"
    assert cluster.state().live is not None and cluster.state().live.color == "blue"  # type: ignore[union-attr]


def test_a_failed_rollback_job_exits_non_zero_with_its_failure_and_its_log(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_releases(cluster)
    cluster.kube.on_job = lambda job: (False, "contract-reviewer: warm-up of 10.0.0.7 timed out\n")
    code, _, err = ops(capsys, "rollout", "rollback", MODEL, "--repo", str(repo), "--home", str(tmp_path / "l"))
    assert code == 1
    assert "warm-up of 10.0.0.7 timed out" in err  # the pod's log
    assert f"{NS}/job {MODEL}-rollback-" in err and "failed: BackoffLimitExceeded" in err
    assert cluster.obj("services", MODEL)["spec"]["selector"]["ai-platform/color"] == "green"  # as it was


def test_nothing_to_roll_back_to_is_said_before_any_job(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    roll(cluster, cluster.platform, "1")
    code, _, err = ops(capsys, "rollout", "rollback", MODEL, "--repo", str(repo), "--home", str(tmp_path / "l"))
    assert code == 1 and "previous" in err
    assert not [call for call in cluster.kube.calls if "/jobs" in call[1]]


def test_the_decision_to_submit_a_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Kubernetes backend decides; the embedded one never submits (its colours are this machine's)."""
    from ai_platform.backend.embedded import EmbeddedBackend
    from ai_platform.backend.kubernetes import KubernetesBackend

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert KubernetesBackend.rolls_back_in_a_job(here=False)
    assert not KubernetesBackend.rolls_back_in_a_job(here=True)  # a laptop on the pod network
    assert EmbeddedBackend().submit_rollback(None, here=False, log=print) is None  # type: ignore[arg-type]
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    assert not KubernetesBackend.rolls_back_in_a_job(here=False)  # in a pod: the Job's own, or a run pod


def test_reap_all_pauses_each_model_past_its_window_and_leaves_the_others(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three models: one past its rollback window, one inside it, one never rolled out."""
    spec = yaml.safe_load((repo / "models" / f"{MODEL}.yaml").read_text())
    for other in ("second", "never"):
        (repo / "models" / f"{other}.yaml").write_text(yaml.safe_dump({**spec, "name": other}))
    git(repo, "add", "models")
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", "two more models")
    platform = load_platform(repo, home=tmp_path / "step-pod")
    from test_rollout_switch import shipped

    from ai_platform.rollout.kubernetes import apply_rollout

    for model in (MODEL, "second"):
        for n in ("1", "2"):
            snap = type("Snap", (), {"platform": platform, "spec": platform.model(model)})
            apply_rollout(snap, *shipped(n), log=cluster.logged.append)
    records = Records(platform.artifacts())
    past = cluster.state()
    records.publish(replace(past, idle_until=time.time() - 1), MODEL)  # its window has passed
    second = records.find(type(past), "second")
    assert second is not None and second.idle_until > time.time()

    where = ("--repo", str(repo), "--home", str(tmp_path / "cron"), "--json")
    code, done, err = ops(capsys, "rollout", "reap", "--all", *where)
    assert code == 0, err
    assert done == {"target": "kubernetes", "reaped": {MODEL: "blue", "second": None}}  # "never": no state
    paused = cluster.obj("scaledobjects", f"{MODEL}-blue")["metadata"]["annotations"][PAUSED]
    kept = cluster.obj("scaledobjects", "second-blue")["metadata"]["annotations"][PAUSED]
    assert paused == "0" and kept == "1"
    assert cluster.state().idle_until == 0.0
    after = records.find(type(past), "second")
    assert after is not None and after.idle_until == second.idle_until

    code, _, err = ops(capsys, "rollout", "reap", *where)  # neither a model nor --all
    assert code == 1 and "--all" in err


def test_the_kit_runs_the_reap_every_five_minutes_as_the_operator_pod(tmp_path: Path) -> None:
    from test_cluster_kit import GATEWAY_IMAGE, RENAMED, cluster_platform

    from ai_platform.rollout.kit import cluster_kit

    platform = cluster_platform(tmp_path, RENAMED)
    kit = cluster_kit(platform)
    (cron,) = [m for m in kit if m["kind"] == "CronJob"]
    kubernetes_validate.validate(cron, "1.35.0", strict=True)
    spec = cron["spec"]
    assert spec["schedule"] == "*/5 * * * *" and spec["concurrencyPolicy"] == "Forbid"
    assert spec["successfulJobsHistoryLimit"] >= 1 and spec["failedJobsHistoryLimit"] >= 1
    pod = spec["jobTemplate"]["spec"]["template"]
    assert pod["spec"] == operator.pod_spec(platform, pod["spec"]["containers"][0]["command"])  # the one template
    (container,) = pod["spec"]["containers"]
    assert container["command"][:4] == ["ai-platform", "rollout", "reap", "--all"]
    assert container["image"] == GATEWAY_IMAGE and pod["spec"]["serviceAccountName"] == rbac.NAME
    assert RUN_POD.items() <= pod["metadata"]["labels"].items()
    # the pipeline's environment, from platform.yaml's names, and the lake's claim (a rollback writes a row)
    assert [e.get("configMapRef", e.get("secretRef"))["name"] for e in container["envFrom"]] == [
        "ai-platform-pipeline-env", "ml-registry-push", "ml-lake", "ml-vllm", "ml-git",
    ]  # fmt: skip
    assert {"name": "lake", "persistentVolumeClaim": {"claimName": "ml-lake-data"}} in pod["spec"]["volumes"]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "ml-pull"}] and pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    writable = {m["mountPath"] for m in container["volumeMounts"]}
    assert {operator.HOME, "/tmp"} <= writable
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}  # no GPU
    # and the operator's Role beside the run pods' one
    roles = {m["metadata"]["name"]: m for m in kit if m["kind"] == "Role"}
    assert set(roles) == {rbac.NAME, rbac.OPERATOR}
    for manifest in kit:
        if manifest["kind"] in ("Role", "CronJob"):
            kubernetes_validate.validate(manifest, "1.35.0", strict=True)


def test_a_rollback_job_name_fits_for_the_longest_model_name() -> None:
    from ai_platform.config import OBJECT_NAME_MAX, longest_model_name

    assert len(operator.job_name("m" * longest_model_name())) <= OBJECT_NAME_MAX
    from ai_platform.errors import ConfigError

    with pytest.raises(ConfigError, match="longer than 63"):
        operator.job_name("m" * (OBJECT_NAME_MAX - len("-rollback-00000") + 1))


# ---------------------------------------------------------------- the operator's own Role


def permissions(method: str, path: str) -> set[tuple[str, str, str]]:
    """What RBAC checks for one request: (API group, resource[/subresource], verb); discovery needs none."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and parts[2:3] == ["namespaces"]:
        group, rest = "", parts[4:]
    elif parts[:1] == ["apis"] and parts[3:4] == ["namespaces"]:
        group, rest = parts[1], parts[5:]
    else:
        return set()
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    if method == "GET":
        return {(group, resource, "get" if len(rest) > 1 else "list")}
    if method == "POST":
        return {(group, resource, "create")}
    if method == "PATCH" and len(rest) == 2:  # server-side apply: a create where the object is new
        return {(group, resource, "create"), (group, resource, "patch")}
    return {(group, resource, method.lower())}


def test_the_operators_role_grants_exactly_what_the_laptop_commands_call(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """status, reap (past the window), rollback (its Job, which the stand-in finishes without calling the API:
    the Job's pod runs as the run pods' account, not the operator's), stop."""
    two_releases(cluster)
    cluster.kube.on_job = lambda job: (True, "done\n")
    records = Records(cluster.platform.artifacts())
    where = ("--repo", str(repo), "--home", str(tmp_path / "laptop"), "--json")
    mark = len(cluster.kube.calls)
    assert ops(capsys, "rollout", "status", MODEL, *where)[0] == 0
    records.publish(replace(cluster.state(), idle_until=time.time() - 1), MODEL)
    assert ops(capsys, "rollout", "reap", MODEL, *where)[0] == 0
    assert ops(capsys, "rollout", "rollback", MODEL, *where)[0] == 0
    assert ops(capsys, "rollout", "stop", MODEL, *where)[0] == 0
    called = set().union(*(permissions(m, p) for m, p in cluster.kube.calls[mark:]))
    granted = {(group, resource, verb) for group, resource, verbs in rbac.OPERATOR_RULES for verb in verbs}
    assert granted - called == set(), "granted but never called"
    assert called - granted == set(), "called but not granted"


def test_a_rollback_that_outlasts_the_wait_names_a_command_the_operators_role_allows(cluster: Cluster) -> None:
    """Before: `kubectl logs job/NAME -f`, which reads the Job (`get` on jobs) and its pod, neither of which the
    Role grants. Now the pod's log by its path: one `get` on pods/log."""
    from ai_platform.backend.kubernetes import connect
    from ai_platform.errors import ServingError

    two_releases(cluster)
    cluster.kube.on_job = None  # its pod runs on: the Job never finishes while the command waits
    with pytest.raises(ServingError, match="not finished after") as failed:
        operator.submit_rollback(cluster.platform, MODEL, connect(NS).client, lambda _: None, timeout_s=0.5)
    (pod,) = [p for (plural, ns, p) in cluster.kube.objects if plural == "pods" and "-rollback-" in p]
    path = f"/api/v1/namespaces/{NS}/pods/{pod}/log"
    assert f"kubectl get --raw '{path}?follow=true'" in str(failed.value)
    granted = {(group, resource, verb) for group, resource, verbs in rbac.OPERATOR_RULES for verb in verbs}
    assert permissions("GET", path) <= granted
