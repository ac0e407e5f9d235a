"""The quantize workload's GPU pod on Kubernetes, rendered offline by dagster-k8s (the same
`build_pod_body` PipesK8sClient calls) and validated against Kubernetes 1.35 in strict mode."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from dagster_k8s.pipes import build_pod_body
from kubernetes.client import ApiClient

from ai_platform.config import load_platform
from ai_platform.errors import ConfigError
from ai_platform.kube import gpu_pod_spec

PLATFORM = """\
name: acme
execution: {target: kubernetes}
kubernetes:
  namespace: ml
  service_account: quantizer
  home_claim: platform-home
  registry_secret: registry-credentials
  gpu:
    resource: nvidia.com/gpu
    count: 2
    node_selector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    image: vllm/vllm-openai:v0.30.0@sha256:8a69ffad015f138d7170c4ddc429e230a3bc1c1719f67e14324749df200a4b90
    quantize_image: registry.example.com/q@sha256:1212121212121212121212121212121212121212121212121212121212121212
"""


def platform(tmp_path: Path, text: str = PLATFORM):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "platform.yaml").write_text(text)
    (tmp_path / "models").mkdir()
    return load_platform(tmp_path, home=Path("/var/lib/ai-platform"))


def test_gpu_pod_renders_and_validates_strictly(tmp_path: Path) -> None:
    p = platform(tmp_path)
    spec = gpu_pod_spec(
        p,
        p.config.kubernetes.gpu.quantize_image,
        ["python", "-m", "ai_platform.quantize"],
        image_field="quantize_image",
    )
    body = build_pod_body(
        pod_name="dagster-run-1-quantized-weights",
        image=None,
        command=None,
        env_vars={"DAGSTER_PIPES_CONTEXT": "x", "DAGSTER_PIPES_MESSAGES": "y"},
        base_pod_meta=None,
        base_pod_spec=spec,
    )
    # The client's model, serialized as the API server receives it (camelCase, no nulls).
    manifest = {"apiVersion": "v1", "kind": "Pod", **ApiClient().sanitize_for_serialization(body)}
    kubernetes_validate.validate(manifest, "1.35.0", strict=True)

    container = manifest["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "2", "memory": "32Gi"}
    assert manifest["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert manifest["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert manifest["spec"]["serviceAccountName"] == "quantizer"
    assert container["volumeMounts"] == [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "home", "mountPath": "/var/lib/ai-platform"},
    ]
    assert {e["name"] for e in container["env"]} >= {"DAGSTER_PIPES_CONTEXT", "HF_HUB_OFFLINE"}
    assert container["envFrom"] == [{"secretRef": {"name": "registry-credentials"}}]  # the registry store's login


@pytest.mark.parametrize(
    ("gpu", "named"),
    [
        ({}, r"kubernetes\.gpu\.image: required"),
        ({"image": "vllm/vllm-openai:latest", "quantize_image": "q@sha256:" + "0" * 64}, r"not pinned by digest"),
        ({"image": "vllm/vllm-openai:v0.30.0", "quantize_image": "q@sha256:" + "0" * 64}, r"not pinned by digest"),
        ({"image": "v@sha256:" + "0" * 64}, r"kubernetes\.gpu\.quantize_image: required"),
    ],
)
def test_the_kubernetes_target_refuses_unpinned_images(tmp_path: Path, gpu: dict, named: str) -> None:
    """A tag can move: the image the canary passed would not be the one the colours run. The schema refuses an
    unpinned image on any target; the kubernetes backend, chosen from the config, refuses a missing one."""
    from ai_platform.backend import for_config

    text = yaml.safe_dump({"name": "acme", "execution": {"target": "kubernetes"}, "kubernetes": {"gpu": gpu}})
    with pytest.raises(ConfigError, match=named):
        for_config(platform(tmp_path, text).config)
    embedded = yaml.safe_dump({"name": "acme", "kubernetes": {"gpu": gpu}})
    if "pinned" in named:
        with pytest.raises(ConfigError, match=named):
            platform(tmp_path / "embedded", embedded)


def test_kubernetes_profile_is_read_from_the_tracked_branch(tmp_path: Path) -> None:
    """The code location picks k8s_job_executor from platform.yaml on the branch, not the tree; and no step asks
    for a GPU: canary_eval's candidate is a Deployment of its own (a GPU on its step pod sat idle, or deadlocked
    a one-GPU node), and the quantize workload is a pod of its own."""
    import subprocess
    import sys

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "platform.yaml").write_text(PLATFORM)
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "k8s"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "platform.yaml").write_text("name: acme\n")  # uncommitted: not what the branch says
    probe = (
        "import assets.execution as e; from definitions import defs;"
        " print(e.EXECUTION.target, e.EXECUTOR.name,"
        " sorted({t for a in defs.assets if hasattr(a, 'op') for t in a.op.tags if t.startswith('dagster-k8s')}))"
    )
    env = {"AI_PLATFORM_REPO": str(repo), "AI_PLATFORM_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout
    assert out.strip() == "kubernetes k8s []"


def test_a_broken_platform_yaml_stops_the_code_location_and_names_the_field(tmp_path: Path) -> None:
    """No quiet fall back to the embedded executor: the file and field are named when definitions load."""
    import subprocess
    import sys

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "platform.yaml").write_text("name: acme\nexecution: {target: kubernets}\n")
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "typo"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True)
    env = {"AI_PLATFORM_REPO": str(repo), "AI_PLATFORM_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", "import definitions"],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode != 0
    assert "platform.yaml at main" in done.stderr
    assert "execution.target: must be one of 'embedded' or 'kubernetes' (got 'kubernets')" in done.stderr


def test_a_run_pinned_to_another_target_than_the_code_location_loaded_is_refused(
    own_demo_repo: Path, tmp_path: Path
) -> None:
    """The backend is chosen once; a commit that moves platform.yaml to Kubernetes needs a reload first."""
    from conftest import MODEL

    from ai_platform.backend.embedded import EmbeddedBackend
    from ai_platform.specs import snapshot_model_spec
    from assets.execution import ExecutionBackend

    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)  # the demo's platform.yaml: embedded
    embedded = ExecutionBackend(target="embedded").for_run(snap)
    assert isinstance(embedded, EmbeddedBackend), "the library's backend, not the resource"
    with pytest.raises(ConfigError, match="names the 'embedded' backend, but this code location loaded 'kubernetes'"):
        ExecutionBackend(target="kubernetes").for_run(snap)
