"""A first deploy from docs/kubernetes.md: the cluster-wide kit renders without a model, every pod that pulls a
private image names the pull Secret, the lake's data claim is mounted (and owned by the images' user) wherever the
warehouse is used, the gateway holds only what it uses, its keys rotate without a restart, and every Secret,
claim and namespace comes from platform.yaml's `kubernetes` section."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import MODEL, ROOT
from k8s_schema import validate_strictly

from ai_platform.config import Platform, load_platform
from ai_platform.errors import ConfigError, KeyRefused

DOCS = ROOT / "docs" / "kubernetes.md"
VALUES = ROOT / "deploy" / "helm" / "dagster-values.yaml"
INSTANCE = ROOT / "deploy" / "dagster-instance.kubernetes.yaml"
GATEWAY_IMAGE = "registry.example.com/ai-platform/code@sha256:" + "ef" * 32
MODEL_IMAGE = f"registry.example.com/ai-platform/{MODEL}@sha256:" + "ab" * 32


def docs_platform_yaml() -> dict[str, Any]:
    """The platform.yaml docs/kubernetes.md tells the operator to write (its one ```yaml block that names
    `execution`), with the digests the operator's pushes print filled in."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), flags=re.DOTALL)
    (text,) = [b for b in blocks if b.startswith("execution:") or "\nexecution:" in b]
    text = text.replace("sha256:…", "sha256:" + "12" * 32)  # the docs' one placeholder
    config: dict[str, Any] = yaml.safe_load(text)
    return config


def cluster_platform(tmp_path: Path, changes: dict[str, Any] | None = None, models: Path | None = None) -> Platform:
    """docs/kubernetes.md's platform.yaml (with `changes` to its kubernetes section), and the demo's model."""
    config = {"name": "acme", **docs_platform_yaml()}
    config["kubernetes"] = {**config["kubernetes"], **(changes or {})}
    repo = tmp_path / "platform"
    if models is not None:  # the demo repo: its model specs with their prompts
        shutil.copytree(models.parent, repo, ignore=shutil.ignore_patterns(".git"))
    (repo / "models").mkdir(parents=True, exist_ok=True)
    (repo / "platform.yaml").write_text(yaml.safe_dump(config))
    return load_platform(repo, home=Path("/var/lib/ai-platform"))


RENAMED = {
    "namespace": "ml-serving",
    "image_pull_secrets": ["ml-pull"],
    "registry_secret": "ml-registry-push",
    "lake_secret": "ml-lake",
    "lake_claim": "ml-lake-data",
    "vllm_api_key_secret": "ml-vllm",
    "git_secret": "ml-git",
    "gateway": {"image": GATEWAY_IMAGE, "registry_secret": "ml-registry-read", "keys_secret": "ml-gateway-keys"},
}


def pod_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
    return spec


def step_job(platform: Platform) -> dict[str, Any]:
    """A step pod's Job, as k8s_job_executor builds it: the run launcher's config (the instance file), the code
    location's container context (its Helm values, `includeConfigInLaunchedRuns`), then the executor's
    step_k8s_config, merged by dagster-k8s itself; serialized as the API server receives it."""
    from dagster_k8s.container_context import K8sContainerContext
    from dagster_k8s.job import UserDefinedDagsterK8sConfig, construct_dagster_k8s_job
    from kubernetes.client import ApiClient

    from ai_platform.backend import for_config
    from assets.execution import step_k8s

    launcher = yaml.safe_load(INSTANCE.read_text())["run_launcher"]["config"]
    values = yaml.safe_load(VALUES.read_text())
    (location,) = values["dagster-user-deployments"]["deployments"]
    step_config = step_k8s(for_config(platform.config).steps(platform.config))
    context = (
        K8sContainerContext(
            image_pull_secrets=launcher["image_pull_secrets"],
            env_secrets=launcher["env_secrets"],
            volumes=launcher["volumes"],
            volume_mounts=launcher["volume_mounts"],
            namespace=launcher["job_namespace"],
            run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(launcher["run_k8s_config"]),
        )
        .merge(
            K8sContainerContext(
                image_pull_secrets=values["dagster-user-deployments"]["imagePullSecrets"],
                volumes=location["volumes"],
                volume_mounts=location["volumeMounts"],
            )
        )
        .merge(K8sContainerContext(run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(step_config)))
    )
    chart = SimpleNamespace(
        job_image=None, dagster_home="/opt/dagster/home", instance_config_map="dagster-instance",
        postgres_password_secret=None,
    )  # fmt: skip
    job = construct_dagster_k8s_job(
        job_config=context.get_k8s_job_config(GATEWAY_IMAGE, chart),
        args=["dagster", "api", "execute_step"],
        job_name="dagster-step-1",
        pod_name="dagster-step-1",
        component="step_worker",
        user_defined_k8s_config=context.run_k8s_config,
    )
    manifest: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "Job", **ApiClient().sanitize_for_serialization(job)}
    return manifest


# ---------------------------------------------------------------- 1. pull Secrets


def test_every_pod_that_pulls_a_private_image_names_the_pull_secret(demo_repo: Path, tmp_path: Path) -> None:
    """Model images (image volumes), the gateway, the quantize image and the code-location image are private."""
    from ai_platform.backend.kubernetes import KubernetesBackend
    from ai_platform.rollout import cluster_gateway, operator, redis_kit
    from ai_platform.rollout.kubernetes import canary_manifests, deployment
    from assets.execution import step_k8s

    platform = cluster_platform(tmp_path, RENAMED, models=demo_repo / "models")
    spec = platform.model(MODEL)
    wanted = [{"name": "ml-pull"}]
    canary = next(m for m in canary_manifests(platform, spec, MODEL_IMAGE, "d") if m["kind"] == "Deployment")
    pods = {
        "blue": pod_spec(deployment(platform, spec, "blue", MODEL_IMAGE, "sha256:" + "cd" * 32)),
        "green": pod_spec(deployment(platform, spec, "green", MODEL_IMAGE, "sha256:" + "cd" * 32)),
        "canary": pod_spec(canary),
        "gateway": pod_spec(cluster_gateway.manifests(platform)[0]),
        "redis": pod_spec(redis_kit.manifests(platform)[0]),  # kubernetes.redis.image may be on a private mirror
        "reap": operator.reap_cron_job(platform)["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        "quantize": KubernetesBackend().workload(platform, "ai_platform.quantize").spec,
        "step": step_k8s(KubernetesBackend().steps(platform.config))["pod_spec_config"],
    }  # fmt: skip
    for name, pod in pods.items():
        assert pod.get("imagePullSecrets") == wanted, f"{name}: {pod.get('imagePullSecrets')}"
    # the step pod as dagster-k8s builds it from the deploy files and the docs' platform.yaml: one pull Secret
    docs = cluster_platform(tmp_path / "docs")
    assert step_job(docs)["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "ai-platform-pull"}]
    values = yaml.safe_load(VALUES.read_text())
    assert values["imagePullSecrets"] == values["dagster-user-deployments"]["imagePullSecrets"]
    assert [s["name"] for s in values["imagePullSecrets"]] == docs_platform_yaml()["kubernetes"]["image_pull_secrets"]
    with pytest.raises(ConfigError, match="image_pull_secrets"):
        cluster_platform(tmp_path / "bad", {"image_pull_secrets": ["Not_A_Secret"]})


# ---------------------------------------------------------------- 2. the lake's data path


def test_a_lake_on_a_path_in_the_cluster_needs_a_claim_to_hold_it(tmp_path: Path) -> None:
    """A path is each pod's own disk: Parquet written there is lost while the catalog points at it."""
    from ai_platform.backend import for_config

    platform = cluster_platform(tmp_path, {"lake_claim": None})
    with pytest.raises(ConfigError, match=r"storage\.warehouse_data: /mnt/lake/ .*kubernetes\.lake_claim"):
        for_config(platform.config)


def test_step_pods_mount_the_lake_claim_once_as_the_user_that_owns_it(tmp_path: Path) -> None:
    """The step pods write the warehouse: the executor mounts the claim at storage.warehouse_data; the code
    location's Helm values mount it in the same words, and dagster-k8s's merge leaves one volume, one mount."""
    platform = cluster_platform(tmp_path)
    job = step_job(platform)
    kubernetes_validate.validate(job, "1.35.0", strict=True)
    pod = job["spec"]["template"]["spec"]
    claim = platform.config.kubernetes.lake_claim
    assert [v for v in pod["volumes"] if "persistentVolumeClaim" in v] == [
        {"name": "lake", "persistentVolumeClaim": {"claimName": claim}}
    ]
    (container,) = pod["containers"]
    assert [m for m in container["volumeMounts"] if m["name"] == "lake"] == [
        {"name": "lake", "mountPath": platform.config.storage.warehouse_data}
    ]
    assert pod["securityContext"]["fsGroup"] == 10001 and pod["securityContext"]["runAsUser"] == 10001
    values = yaml.safe_load(VALUES.read_text())
    (location,) = values["dagster-user-deployments"]["deployments"]
    assert location["podSecurityContext"]["fsGroup"] == 10001
    assert location["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim
    assert location["volumeMounts"][0]["mountPath"] == platform.config.storage.warehouse_data


# ---------------------------------------------------------------- 3. what the gateway holds


def test_the_cluster_gateway_writes_the_lake(demo_repo: Path, tmp_path: Path) -> None:
    """Why the gateway keeps the lake's password and claim: a cluster rollout tells it the lake catalog as the
    warehouse (`serving/state.settings`), and it writes every reply there in batches larger than DuckLake's
    inlining limit, which DuckLake writes out as Parquet under the data path."""
    from ai_platform.serving.gateway.generations import BATCH_ROWS
    from ai_platform.serving.state import settings
    from ai_platform.warehouse.ducklake import INLINE_ROWS

    platform = cluster_platform(tmp_path, models=demo_repo / "models")
    told = settings(platform, platform.model(MODEL), local=False)
    assert told["warehouse"] == platform.config.storage.warehouse
    assert BATCH_ROWS > INLINE_ROWS


def test_the_gateway_holds_a_read_only_registry_login_and_never_the_push_one(tmp_path: Path) -> None:
    from ai_platform.rollout import cluster_gateway

    platform = cluster_platform(tmp_path, RENAMED)
    deployment = cluster_gateway.manifests(platform)[0]
    (container,) = pod_spec(deployment)["containers"]
    assert [e["secretRef"]["name"] for e in container["envFrom"]] == ["ml-registry-read", "ml-lake", "ml-vllm"]
    assert "ml-registry-push" not in yaml.safe_dump(deployment)
    assert {"name": "lake", "mountPath": platform.config.storage.warehouse_data} in container["volumeMounts"]
    pod = pod_spec(deployment)
    assert {"name": "lake", "persistentVolumeClaim": {"claimName": "ml-lake-data"}} in pod["volumes"]


# ---------------------------------------------------------------- 4. keys that rotate


def test_gateway_keys_are_a_directory_mount_and_the_pod_runs_as_the_image_user(tmp_path: Path) -> None:
    """A subPath mount is never updated by the kubelet: a rotated key would need a restart."""
    from ai_platform.rollout import cluster_gateway

    platform = cluster_platform(tmp_path, RENAMED)
    deployment = cluster_gateway.manifests(platform)[0]
    kubernetes_validate.validate(deployment, "1.35.0", strict=True)
    pod = pod_spec(deployment)
    (container,) = pod["containers"]
    assert all("subPath" not in m for m in container["volumeMounts"]), container["volumeMounts"]
    keys = next(m for m in container["volumeMounts"] if m["name"] == "keys")
    assert not keys["mountPath"].startswith(cluster_gateway.HOME)  # outside the home's emptyDir
    args = container["args"]
    assert args[args.index("--keys") + 1] == f"{keys['mountPath']}/keys.json"
    secret = next(v for v in pod["volumes"] if v["name"] == "keys")["secret"]
    assert secret["secretName"] == "ml-gateway-keys"
    assert pod["securityContext"] == {
        "runAsUser": 10001,
        "runAsGroup": 10001,
        "fsGroup": 10001,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert {cluster_gateway.HOME, "/tmp"} <= writable  # the journal, the bundle cache, temporary files


def test_a_rotated_key_is_accepted_without_a_restart_through_the_kubelets_symlink_swap(tmp_path: Path) -> None:
    """The kubelet's Secret volume: `keys.json -> ..data/keys.json`, `..data -> ..<timestamp>/`; a rotation writes
    a new timestamped directory and renames a new `..data` link over the old one. The new file may have the old
    one's size and modification time (same-length keys, a coarse clock): the gateway must still see it."""
    from ai_platform.serving.gateway import keys

    volume = tmp_path / "gateway-keys"
    volume.mkdir()
    old_dir = volume / "..2026_01_01_00_00_00.1"
    old_dir.mkdir()
    keys.write(old_dir / "keys.json", [])
    old_raw = keys.create(old_dir / "keys.json", "app", ["invoke"])
    (volume / "..data").symlink_to(old_dir.name)
    (volume / "keys.json").symlink_to("..data/keys.json")
    ring = keys.KeyRing(volume / "keys.json")
    assert ring.authorize(f"Bearer {old_raw}", "invoke").name == "app"

    new_dir = volume / "..2026_01_02_00_00_00.2"
    new_dir.mkdir()
    keys.write(new_dir / "keys.json", [])
    new_raw = keys.create(new_dir / "keys.json", "app", ["invoke"])  # the same name: the same size
    before = (old_dir / "keys.json").stat()
    assert (new_dir / "keys.json").stat().st_size == before.st_size
    os.utime(new_dir / "keys.json", ns=(before.st_atime_ns, before.st_mtime_ns))
    (volume / "..data_tmp").symlink_to(new_dir.name)
    os.rename(volume / "..data_tmp", volume / "..data")  # atomic, as the kubelet's AtomicWriter does it

    assert ring.authorize(f"Bearer {new_raw}", "invoke").name == "app"
    with pytest.raises(KeyRefused, match="invalid API key"):
        ring.authorize(f"Bearer {old_raw}", "invoke")


# ---------------------------------------------------------------- 5. names from config


def test_every_secret_claim_and_namespace_comes_from_platform_yaml(tmp_path: Path) -> None:
    from ai_platform.rollout.kit import cluster_kit

    platform = cluster_platform(tmp_path, RENAMED)
    text = yaml.safe_dump_all(cluster_kit(platform))
    for default in ("ai-platform-registry", "ai-platform-lake", "ai-platform-vllm", "ai-platform-gateway-keys"):
        assert default not in text, default
    assert re.findall(r"namespace: (\S+)", text) and set(re.findall(r"namespace: (\S+)", text)) == {"ml-serving"}
    # no other place in the code names one: config.py's defaults are the one place
    secret = re.compile(r"[\"']ai-platform-(registry|lake|vllm|gateway-keys|pull|lake-data)[\"']")
    namespace = re.compile(r"namespace\W+[\"']ai-platform[\"']|[\"']ai-platform[\"']\W+namespace", re.IGNORECASE)
    for path in sorted((ROOT / "ai_platform").rglob("*.py")):
        if path.name == "config.py":
            continue
        for line in path.read_text().splitlines():
            assert not secret.search(line) and not namespace.search(line), f"{path}: {line}"


# ---------------------------------------------------------------- 6. the kit without a model


def test_the_kit_renders_from_platform_yaml_alone(tmp_path: Path) -> None:
    """Before the first run no model image exists: the kit needs none, and no model spec either."""
    platform = cluster_platform(tmp_path, {"gateway": {"image": GATEWAY_IMAGE}})
    out = tmp_path / "kit"
    env = {**os.environ, "AI_PLATFORM_HOME": str(tmp_path / "home")}
    command = ["rollout", "kit", "--repo", str(platform.root), "--out", str(out), "--json"]
    done = subprocess.run([sys.executable, "-m", "ai_platform.cli", *command], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    found = sorted(
        (m["kind"], m["metadata"]["name"]) for m in (yaml.safe_load(p.read_text()) for p in out.glob("*.yaml"))
    )
    gateway, redis, run = "ai-platform-gateway", "ai-platform-redis", "ai-platform-run"
    assert found == sorted(
        [("ServiceAccount", run), ("Role", run), ("RoleBinding", run), ("Role", "ai-platform-operator"),
         ("Deployment", redis), ("Service", redis), ("NetworkPolicy", redis),  # the replicas' one window
         ("Deployment", gateway), ("Service", gateway), ("HorizontalPodAutoscaler", gateway),
         ("PodDisruptionBudget", gateway), ("PodMonitor", gateway), ("PrometheusRule", gateway),
         ("CronJob", "ai-platform-reap")]
    )  # fmt: skip
    for path in out.glob("*.yaml"):
        validate_strictly(yaml.safe_load(path.read_text()))


def test_the_lake_claim_the_docs_apply_is_the_one_platform_yaml_names() -> None:
    claim = yaml.safe_load((ROOT / "deploy" / "lake-claim.yaml").read_text())
    kubernetes_validate.validate(claim, "1.35.0", strict=True)
    assert claim["metadata"]["name"] == docs_platform_yaml()["kubernetes"]["lake_claim"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert "kubectl -n ai-platform apply -f deploy/lake-claim.yaml" in DOCS.read_text()


def test_the_deploy_files_name_what_the_docs_platform_yaml_names() -> None:
    """A values file cannot read platform.yaml: the names are repeated there, and held to it here."""
    k8s = docs_platform_yaml()["kubernetes"]
    values = yaml.safe_load(VALUES.read_text())
    instance = yaml.safe_load(INSTANCE.read_text())["run_launcher"]["config"]
    pipeline = [k8s["registry_secret"], k8s["lake_secret"], k8s["vllm_api_key_secret"], k8s["git_secret"]]
    (location,) = values["dagster-user-deployments"]["deployments"]
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    assert [s["name"] for s in location["envSecrets"]] == pipeline
    assert [s["name"] for s in launcher["envSecrets"]] == pipeline
    assert instance["env_secrets"] == pipeline
    assert launcher["jobNamespace"] == instance["job_namespace"] == k8s["namespace"]
    assert [s["name"] for s in instance["image_pull_secrets"]] == k8s["image_pull_secrets"]
    # the pipeline's environment: the ConfigMap the docs create and the kit's operator pods take, never the chart's
    # own `<release>-pipeline-env` (Helm refuses to adopt one that kubectl made)
    from ai_platform.config import Kubernetes

    config_map = k8s.get("pipeline_env_config_map", Kubernetes().pipeline_env_config_map)
    assert [c["name"] for c in location["envConfigMaps"]] == [config_map]
    assert [c["name"] for c in launcher["envConfigMaps"]] == [config_map]
    assert instance["env_config_maps"] == [config_map]
    assert f"create configmap {config_map} " in DOCS.read_text()
    assert config_map != "dagster-pipeline-env"  # the chart's, for the docs' release `dagster`
    assert instance["volumes"] == location["volumes"] and instance["volume_mounts"] == location["volumeMounts"]


def test_a_private_platform_repo_is_fetched_with_the_git_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The platform repo is private: the code location, the run pods and the kit's operator pods (the reap
    CronJob, a rollback's Job) fetch it, so each takes `kubernetes.git_secret` as its environment: git's own
    `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` (an `http.<url>.extraHeader` with a token), which
    every git call of ours passes on. Before: no pod had a way to a credential, and a private repo failed to fetch.
    Here a real `git fetch` of a URL that exists nowhere succeeds through the same environment mechanism (an
    `insteadOf` that points it at a local repository), as the Secret's header would authenticate it."""
    from ai_platform.changes import sync
    from ai_platform.platform_repo import git
    from ai_platform.rollout.operator import pod_spec

    platform = cluster_platform(tmp_path, {"gateway": {"image": GATEWAY_IMAGE}})
    secret = docs_platform_yaml()["kubernetes"]["git_secret"]
    spec = pod_spec(platform, ["ai-platform", "rollout", "reap", "--all"])
    assert {"secretRef": {"name": secret}} in spec["containers"][0]["envFrom"]
    assert f"create secret generic {secret} " in DOCS.read_text()

    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "--quiet", "-b", "main")
    (origin / "platform.yaml").write_text("name: acme\n")
    git(origin, "add", "-A")
    git(origin, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "--quiet", "--no-gpg-sign", "-m", "first")
    url = "https://git.example.com/ml/platform.git"
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.file://{origin}/.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", url)
    mirror = sync(url, tmp_path / "home", "main")
    assert git(mirror, "show", "main:platform.yaml").decode().strip() == "name: acme"


@pytest.mark.parametrize("field", ["home_claim", "service_account"])
def test_a_claim_or_account_name_kubernetes_would_refuse_is_refused_in_platform_yaml(
    tmp_path: Path, field: str
) -> None:
    """Every name a pod refers to is a DNS subdomain, checked where it is written, not at `kubectl apply`."""
    with pytest.raises(ConfigError, match=rf"kubernetes\.{field}"):
        cluster_platform(tmp_path, {field: "Home_Claim"})
    assert getattr(cluster_platform(tmp_path, {field: "ml-home.v2"}).config.kubernetes, field) == "ml-home.v2"
