"""Operating a model from a laptop (issue 31): `rollout status`, `rollback`, `stop` and `reap` read platform.yaml
from the platform repo and the live release from where the cluster keeps it (the model's `ModelState` in the
artifact store), never a spec pinned in the local home. A rollback restores the previous *release*: image,
bundle, server settings, vLLM image and GPU shape.

The commands run in process (`ai_platform.cli.main`) with a fresh, empty `--home`, against the stand-in API
server (`fake_kube`, which records every call) whose pods are stand-in vLLM servers, and a folder artifact store
outside that home: the store a cluster's rollouts write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from conftest import MODEL
from test_rollout_switch import NS, Cluster, running, shipped

from ai_platform.artifacts import FolderStore
from ai_platform.cli import main
from ai_platform.config import Platform, load_platform
from ai_platform.platform_repo import git
from ai_platform.records import ModelState, Pin, Records

CODE_IMAGE = "registry.example.com/ai-platform/code@sha256:" + "c0" * 32


def kubernetes_platform(repo: Path, store: Path, **gpu: Any) -> Path:
    """The demo repo serving on Kubernetes, its artifact store a folder outside any home, committed on main."""
    config = yaml.safe_load((repo / "platform.yaml").read_text())
    config["execution"] = {"target": "kubernetes"}
    config["storage"]["artifacts"] = str(store)
    config["kubernetes"]["gpu"]["quantize_image"] = "registry.example.com/q@sha256:" + "12" * 32
    config["kubernetes"].setdefault("gateway", {})["image"] = CODE_IMAGE
    config["kubernetes"]["gpu"].update(gpu)
    (repo / "platform.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-am", "serve on kubernetes")
    return repo


def commit_serving(repo: Path, **serving: Any) -> None:
    path = repo / "models" / f"{MODEL}.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["serving"].update(serving)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-am", f"serving: {serving}")


@pytest.fixture
def repo(own_demo_repo: Path, tmp_path: Path) -> Path:
    return kubernetes_platform(own_demo_repo, tmp_path / "cluster-store")


@pytest.fixture
def cluster(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    monkeypatch.delenv("AI_PLATFORM_REPO", raising=False)
    monkeypatch.delenv("AI_PLATFORM_HOME", raising=False)
    with running(load_platform(repo, home=tmp_path / "step-pod"), tmp_path, monkeypatch) as found:
        yield found


def roll(cluster: Cluster, platform: Platform, n: str, bundle: str | None = None) -> dict[str, Any]:
    """A rollout as the deployment step runs it: the spec as `platform` has it."""
    snap = SimpleNamespace(platform=platform, spec=platform.model(MODEL))
    image, prompts = shipped(n)
    from ai_platform.rollout.kubernetes import apply_rollout

    return apply_rollout(snap, image, shipped(bundle)[1] if bundle else prompts, log=cluster.logged.append)


def ops(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip().startswith("{") else out, err


def args_of(deployment: dict[str, Any]) -> list[str]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def laptop_has_no_pin(home: Path) -> bool:
    return Records(FolderStore(home)).find(Pin, MODEL) is None and not (home / "artifacts").exists()


def test_rollback_of_a_serving_only_change_from_an_empty_home_restores_the_old_settings(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Blue serves max_model_len 1024; a commit raises it to 4096 and the same image goes live on green (a
    serving-only change). From a laptop with an empty home, `rollout status` says so and `rollout rollback`
    returns to blue with 1024: the release recorded, not the spec on the branch (which still says 4096)."""
    roll(cluster, cluster.platform, "1")
    commit_serving(repo, max_model_len=4096)
    bad = load_platform(repo, home=tmp_path / "step-pod")
    assert roll(cluster, bad, "1")["color"] == "green"  # same image, new flags: a switch
    assert "4096" in args_of(cluster.obj("deployments", f"{MODEL}-green"))
    blue = cluster.pod_names("blue")

    laptop = tmp_path / "laptop"
    where = ("--repo", str(repo), "--home", str(laptop), "--json")
    code, status, err = ops(capsys, "rollout", "status", MODEL, *where)
    assert code == 0, err
    assert status["target"] == "kubernetes" and status["stopped"] is False
    assert status["live"]["color"] == "green" and status["live"]["serving"]["max_model_len"] == 4096
    assert status["previous"]["color"] == "blue" and status["previous"]["serving"]["max_model_len"] == 1024
    assert status["idle_until"] > 0 and status["rollback_window_open"] is True
    assert status["colors"] == {
        "blue": {"replicas": 1, "available": 1},
        "green": {"replicas": 1, "available": 1},
    }

    code, done, err = ops(capsys, "rollout", "rollback", MODEL, *where, "--here")  # on the pod network
    assert code == 0, err
    assert done["color"] == "blue" and done["serving"]["max_model_len"] == 1024
    assert cluster.obj("services", MODEL)["spec"]["selector"]["ai-platform/color"] == "blue"
    assert (
        args_of(cluster.obj("deployments", f"{MODEL}-blue"))[
            args_of(cluster.obj("deployments", f"{MODEL}-blue")).index("--max-model-len") + 1
        ]
        == "1024"
    )
    assert cluster.pod_names("blue") == blue  # within the window: onto the warm pods, nothing restarted
    live = cluster.state().live
    assert live is not None and live.serving["max_model_len"] == 1024 and live.color == "blue"
    assert laptop_has_no_pin(laptop)


def test_stop_scales_to_zero_and_records_it_until_the_next_rollout(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    roll(cluster, cluster.platform, "1")
    roll(cluster, cluster.platform, "2")
    laptop = tmp_path / "laptop"
    where = ("--repo", str(repo), "--home", str(laptop), "--json")
    mark = len(cluster.kube.calls)
    code, done, err = ops(capsys, "rollout", "stop", MODEL, *where)
    assert code == 0, err
    assert done["stopped"] and "blue" in done["stopped"] and "green" in done["stopped"]
    assert cluster.pod_names("blue") == [] and cluster.pod_names("green") == []
    patched = [path for method, path in cluster.kube.calls[mark:] if method == "PATCH"]
    assert f"/apis/apps/v1/namespaces/{NS}/deployments/{MODEL}-green/scale" in patched
    state = cluster.state()
    assert state.stopped_at > 0 and state.idle_until == 0.0  # recorded where the cluster keeps it
    assert state.live is not None and state.live.color == "green"  # what was live, for the record

    code, status, err = ops(capsys, "rollout", "status", MODEL, *where)
    assert code == 0, err
    assert status["stopped"] is True and status["stopped_at"] == state.stopped_at
    assert status["colors"] == {"blue": {"replicas": 0, "available": 0}, "green": {"replicas": 0, "available": 0}}
    code, human, _ = ops(capsys, "rollout", "status", MODEL, *where[:-1])  # what an operator reads
    assert code == 0 and f"{MODEL} on kubernetes" in human and "stopped at" in human
    assert "live: green" in human and "blue: 0 of 0 replicas available" in human

    # the next rollout starts the model again, even of the very release that was stopped, and clears the mark
    again = roll(cluster, cluster.platform, "2", bundle="3")
    assert again["kind"] == "model" and cluster.pod_names(again["color"])
    assert cluster.state().stopped_at == 0.0
    assert laptop_has_no_pin(laptop)


def test_a_rollback_clears_the_stop(cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    roll(cluster, cluster.platform, "1")
    roll(cluster, cluster.platform, "2")
    where = ("--repo", str(repo), "--home", str(tmp_path / "laptop"), "--json")
    assert ops(capsys, "rollout", "stop", MODEL, *where)[0] == 0
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")  # in a pod: the switch runs here, no Job
    code, done, err = ops(capsys, "rollout", "rollback", MODEL, *where)
    assert not [call for call in cluster.kube.calls if "/jobs" in call[1]]
    assert code == 0, err
    assert done["color"] == "blue" and len(cluster.pod_names("blue")) == 1
    assert cluster.obj("services", MODEL)["spec"]["selector"]["ai-platform/color"] == "blue"
    assert cluster.state().stopped_at == 0.0


@pytest.mark.parametrize("command", ["status", "live", "stop"])
def test_a_stale_pin_in_the_home_is_never_read(
    command: str, cluster: Cluster, repo: Path, demo_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The home holds a pin of an old run on this machine (the embedded demo): the commands follow the repo's
    platform.yaml (Kubernetes) and the cluster's state all the same."""
    from ai_platform.specs import snapshot_model_spec

    roll(cluster, cluster.platform, "1")
    laptop = tmp_path / "laptop"
    snapshot_model_spec(demo_repo, laptop, MODEL)  # pinned here, to the embedded demo platform
    code, found, err = ops(capsys, "rollout", command, MODEL, "--repo", str(repo), "--home", str(laptop), "--json")
    assert code == 0, err
    if command == "stop":
        assert found["target"] == "kubernetes" and "blue" in found["stopped"]
        assert cluster.pod_names("blue") == []
    else:
        live = found if command == "live" else found["live"]
        assert live["color"] == "blue" and live["image"] == shipped("1")[0].digest


def test_a_rollback_to_a_release_recorded_without_its_settings_is_refused(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A previous release written by an older platform lacks its server settings, runtime or GPU shape: the
    rollback says what is missing and changes nothing (rebuilding it with today's settings would not be it)."""
    roll(cluster, cluster.platform, "1")
    roll(cluster, cluster.platform, "2")
    state = cluster.state()
    assert state.previous is not None
    old = replace(state, previous=replace(state.previous, serving={}, runtime="", gpu={}))
    Records(cluster.platform.artifacts()).publish(old, MODEL)
    mark = len(cluster.kube.events)
    where = ("--repo", str(repo), "--home", str(tmp_path / "laptop"))
    code, _, err = ops(capsys, "rollout", "rollback", MODEL, *where, "--here")
    assert code == 1
    assert "recorded by an older platform" in err and "serving" in err and "GPU shape" in err
    assert cluster.kube.events[mark:] == [] and cluster.state() == old


def test_the_operator_commands_need_the_platform_repo(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Without --repo or $AI_PLATFORM_REPO nothing says which backend serves the model: a clear error."""
    from ai_platform.serving.state import save

    monkeypatch.delenv("AI_PLATFORM_REPO", raising=False)
    home = tmp_path / "home"
    save(home, ModelState(MODEL, ""))
    code, _, err = ops(capsys, "rollout", "rollback", MODEL, "--home", str(home))
    assert code == 1 and "--repo" in err and "AI_PLATFORM_REPO" in err


def test_moving_a_model_to_other_gpus_is_a_new_release(
    cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The GPU shape (count, resource, node selector) is part of the release in a cluster: a commit that moves
    the model to other GPUs switches colours, the state records the shape, and a rollback restores it."""
    roll(cluster, cluster.platform, "1")
    before = cluster.state().live
    assert before is not None and before.gpu == {
        "resource": "nvidia.com/gpu",
        "count": 1,
        "node_selector": {"nvidia.com/gpu.present": "true"},
    }
    config = yaml.safe_load((repo / "platform.yaml").read_text())
    config["kubernetes"]["gpu"]["node_selector"] = {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}
    (repo / "platform.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-am", "onto H100s")
    moved = load_platform(repo, home=tmp_path / "step-pod")
    done = roll(cluster, moved, "1")
    assert done["kind"] == "model" and done["color"] == "green"  # not "the same release, prompts only"
    green = cluster.obj("deployments", f"{MODEL}-green")["spec"]["template"]["spec"]
    assert green["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}
    after = cluster.state().live
    assert after is not None and after.release != before.release
    assert after.gpu["node_selector"] == {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}

    where = ("--repo", str(repo), "--home", str(tmp_path / "laptop"), "--json")
    code, back, err = ops(capsys, "rollout", "rollback", MODEL, *where, "--here")
    assert code == 0, err
    assert back["color"] == "blue"
    restored = cluster.state().live
    assert restored is not None and restored.gpu == before.gpu and restored.release == before.release
    blue = cluster.obj("deployments", f"{MODEL}-blue")["spec"]["template"]["spec"]
    assert blue["nodeSelector"] == {"nvidia.com/gpu.present": "true"}


def test_the_embedded_release_id_is_unchanged_and_the_clusters_carries_the_gpu_shape() -> None:
    from ai_platform.artifacts import canonical_json, sha256_hex
    from ai_platform.config import Serving
    from ai_platform.serving.release import release_id

    image, serving = "sha256:" + "ab" * 32, Serving()
    settings = serving.model_dump(mode="json", exclude={"admission"})
    old = "sha256:" + sha256_hex(canonical_json({"image": image, "serving": settings, "runtime": "vllm 0.30.0"}))
    assert release_id(image, serving, "vllm 0.30.0") == old  # an embedded model does not restart on upgrade
    shape = {"resource": "nvidia.com/gpu", "count": 1, "node_selector": {}}
    on_gpus = release_id(image, serving, "vllm 0.30.0", gpu=shape)
    assert on_gpus != old
    assert release_id(image, serving, "vllm 0.30.0", gpu={**shape, "count": 2}) != on_gpus
    assert release_id(image, serving, "vllm 0.30.0", gpu={**shape, "resource": "amd.com/gpu"}) != on_gpus


def test_stop_and_status_on_the_embedded_backend(demo_repo: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The same commands on this machine: the home's rollout state says the model was stopped, and when."""
    import subprocess

    from ai_platform.records import LiveRelease
    from ai_platform.serving.state import load, save

    home = tmp_path / "home"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a colour whose process has ended: nothing to signal, but the model is stopped all the same
    live = LiveRelease("blue", "http://127.0.0.1:9", gone.pid, "sha256:" + "1" * 64, "sha256:" + "2" * 64, "/b", "d")
    save(home, ModelState(MODEL, "", live=live))
    where = ("--repo", str(demo_repo), "--home", str(home), "--json")
    code, done, err = ops(capsys, "rollout", "stop", MODEL, *where)
    assert code == 0, err
    assert done["target"] == "embedded"
    assert load(home, MODEL).live is None and load(home, MODEL).stopped_at > 0
    code, status, err = ops(capsys, "rollout", "status", MODEL, *where)
    assert code == 0, err
    assert status["target"] == "embedded" and status["stopped"] is True and status["live"] is None
    assert status["colors"] == {}


@pytest.mark.parametrize("command", ["status", "reap"])
def test_the_platform_repo_as_a_url_is_fetched_into_an_empty_home(
    command: str, cluster: Cluster, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """In the cluster the repo is the URL the pipeline follows (the pipeline env ConfigMap's AI_PLATFORM_REPO) and
    the operator pod's home is an empty emptyDir: the command fetches the branch into the home's mirror and reads
    platform.yaml there. Before, it read a mirror nothing had fetched: the reap CronJob and every rollback Job
    failed ("cannot change to <home>/mirrors/…", "unknown model")."""
    roll(cluster, cluster.platform, "1")
    monkeypatch.setenv("AI_PLATFORM_REPO", f"file://{repo}")
    monkeypatch.setenv("AI_PLATFORM_HOME", str(tmp_path / "operator-pod"))
    argv = ["rollout", "reap", "--all"] if command == "reap" else ["rollout", "status", MODEL]
    code, found, err = ops(capsys, *argv, "--json")
    assert code == 0, err
    if command == "status":
        assert found["live"]["color"] == "blue" and found["live"]["image"] == shipped("1")[0].digest
    assert list((tmp_path / "operator-pod" / "mirrors").glob("*.git"))  # the fetched mirror, under the home
