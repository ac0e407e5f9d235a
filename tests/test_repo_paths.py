"""Every file the platform repo names is a file of the repo: one commit must not make the pipeline read any file
on the host. Absolute paths, `..` and symlinks that lead out are refused when the repo is loaded (and by
`Platform.file`, which the stages read through). A model folder outside the repo is allowed only under a root
the operator names in $AI_PLATFORM_LOCAL_SOURCES: platform.yaml is in the repo, so it cannot widen that."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from ai_platform.config import load_platform
from ai_platform.errors import ConfigError
from ai_platform.platform_repo import git
from ai_platform.repo_paths import LOCAL_SOURCES_ENV
from ai_platform.specs import snapshot_model_spec

SPEC = "models/contract-reviewer.yaml"


@pytest.fixture
def repo(demo_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(LOCAL_SOURCES_ENV, raising=False)
    copy = tmp_path / "repo"
    shutil.copytree(demo_repo, copy, ignore=shutil.ignore_patterns(".git"))
    return copy


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file of the host that is no business of the platform repo's."""
    path = tmp_path / "host" / "secret.jsonl"
    path.parent.mkdir()
    path.write_text('{"id": "x", "vars": {"input_pdf_text": "TOP SECRET"}}\n')
    return path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def refusal(repo: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_platform(repo)
    print(info.value)
    return str(info.value)


@pytest.mark.parametrize(
    ("field", "old", "new"),
    [
        ("canary.evals.0", "evals: [evals/contract_review.jsonl", "evals: [{secret}"),
        ("canary.evals.0", "evals: [evals/contract_review.jsonl", "evals: [../host/secret.jsonl"),
        ("quantization.calibration.path", "    path: calibration", "    path: {folder}"),
        ("verification.manifest", "manifest: manifests/contract-qwen2.json", "manifest: {secret}"),
        (
            "verification.reference_manifest",
            "manifest: manifests/contract-qwen2.json",
            "manifest: manifests/contract-qwen2.json\n  reference_manifest: evals/../../host/secret.jsonl",
        ),
        (
            "verification.signature.public_key",
            "manifest: manifests/contract-qwen2.json",
            "manifest: manifests/contract-qwen2.json\n  signature: {{path: sig.json, public_key: {secret}}}",
        ),
        ("source.path", "path: hub/contract-qwen2", "path: {folder}"),
    ],
)
def test_a_spec_cannot_name_a_file_outside_the_repo(repo: Path, secret: Path, field: str, old: str, new: str) -> None:
    edit(repo / SPEC, old, new.format(secret=secret, folder=secret.parent))
    message = refusal(repo)
    assert SPEC in message and f"{field}:" in message and "outside the platform repo" in message


def test_platform_yaml_cannot_name_a_retrieval_corpus_outside_the_repo(repo: Path, secret: Path) -> None:
    config = yaml.safe_load((repo / "platform.yaml").read_text())
    config.setdefault("feedback", {})["retrieval_corpus"] = str(secret)
    (repo / "platform.yaml").write_text(yaml.safe_dump(config))
    message = refusal(repo)
    assert "platform.yaml" in message and "feedback.retrieval_corpus:" in message


def test_a_symlink_in_the_repo_that_leads_out_is_refused(repo: Path, secret: Path) -> None:
    (repo / "evals/contract_review.jsonl").unlink()
    (repo / "evals/contract_review.jsonl").symlink_to(secret)
    message = refusal(repo)
    assert "canary.evals.0:" in message and "symlink" in message and str(secret) in message

    (repo / "evals/contract_review.jsonl").unlink()
    (repo / "evals/contract_review.jsonl").symlink_to(repo / "evals/../calibration/contracts.jsonl")
    load_platform(repo)  # a symlink that stays inside the repo is fine


def test_platform_file_is_confined_too(repo: Path, secret: Path) -> None:
    """The stages read the repo's files through Platform.file: a name built at run time is held to the repo."""
    platform = load_platform(repo)
    assert platform.file("evals/contract_review.jsonl").is_file()
    for name in (str(secret), "../host/secret.jsonl", "evals/../../host/secret.jsonl"):
        with pytest.raises(ConfigError, match="outside the platform repo"):
            platform.file(name)


def test_a_model_folder_outside_the_repo_needs_the_operator_s_allow_list(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    shutil.move(repo / "hub/contract-qwen2", models / "contract-qwen2")
    edit(repo / SPEC, "path: hub/contract-qwen2", f"path: {models / 'contract-qwen2'}")
    assert LOCAL_SOURCES_ENV in refusal(repo)

    monkeypatch.setenv(LOCAL_SOURCES_ENV, str(tmp_path / "elsewhere"))
    assert "outside the platform repo" in refusal(repo)

    monkeypatch.setenv(LOCAL_SOURCES_ENV, str(models))
    platform = load_platform(repo)
    source = platform.model("contract-reviewer").source
    assert platform.model_folder(source.path) == (models / "contract-qwen2").resolve()  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="outside the platform repo"):  # only model folders: not an eval set
        platform.file(str(models / "contract-qwen2" / "config.json"))

    # the pipeline pins it at a commit: the outside folder is no path of git's
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "-A")
    env = {k: "t" for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")}
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", "outside model", env=env)
    snap = snapshot_model_spec(repo, tmp_path / "home", "contract-reviewer")
    assert snap.platform.model_folder(source.path) == (models / "contract-qwen2").resolve()  # type: ignore[union-attr]


def test_the_allow_list_is_the_operator_s_not_the_repo_s(repo: Path) -> None:
    edit(repo / "platform.yaml", "name: demo\n", "name: demo\nsources:\n  local_roots: [/]\n")
    assert "sources: unknown field" in refusal(repo)
