"""The hub path, run for real: huggingface_hub's own client against a fake hub on 127.0.0.1.

The fake hub (tests/fake_hub.py) holds one repository with two commits of real
safetensors files. HF_ENDPOINT points the client at it; HF_HUB_OFFLINE, which
the suite sets and huggingface_hub copies into a module constant at import
time, is lifted for these tests only.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import MODEL, materialize
from fake_hub import FakeHub, git_blob_id, serve_to_client
from safetensors.numpy import save

from ai_platform.config import HubSource
from ai_platform.errors import HubError, HubListingError, PickleNotAllowedError, UnsafeRepoPathError
from ai_platform.platform_repo import git
from ai_platform.specs import snapshot_model_spec
from ai_platform.weights import hub
from ai_platform.weights.stage import fetch_raw, verify

REPO_ID = "acme/contract-qwen2"


def shard(seed: int, names: list[str]) -> bytes:
    rng = np.random.default_rng(seed)
    return save({name: rng.standard_normal((16, 8), dtype=np.float32) for name in names})


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    repo = FakeHub(REPO_ID)
    repo.commit({"model.safetensors": shard(1, ["a.weight", "b.weight"]), "config.json": b'{"v": 1}'})
    repo.commit(
        {
            "model-00001-of-00002.safetensors": shard(2, ["a.weight"]),
            "model-00002-of-00002.safetensors": shard(3, ["b.weight"]),
            "config.json": b'{"v": 2}',
            "README.md": b"# not allowed by the default patterns\n",
            "pytorch_model.bin": b"\x80\x02}q\x00.",  # a pickle: outside the default patterns, never fetched
        }
    )
    with serve_to_client(repo, monkeypatch):
        yield repo


def source(**fields: object) -> HubSource:
    return HubSource(kind="hub", repo_id=REPO_ID, **fields)


def test_main_resolves_to_its_commit_and_only_that_commits_allowed_files_arrive(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    got = hub.download(source(revision="main"), tmp_path)
    head = fake_hub.commits[fake_hub.main]
    assert got.commit == fake_hub.main and got.folder.name == fake_hub.main
    assert got.files == ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    for name in got.files:
        assert (got.folder / name).read_bytes() == head[name]
    assert not (got.folder / "README.md").exists() and not (got.folder / "pytorch_model.bin").exists()
    # files are fetched at the sha, never at the moving "main"
    assert sorted(fake_hub.downloads()) == sorted(f"/{REPO_ID}/resolve/{fake_hub.main}/{n}" for n in got.files)
    assert got.lfs_sha256 == {
        name: hashlib.sha256(head[name]).hexdigest() for name in got.files if name.endswith(".safetensors")
    }
    assert got.git_blob == {"config.json": git_blob_id(head["config.json"])}  # what is not in LFS


def test_a_pinned_older_commit_downloads_that_commit(fake_hub: FakeHub, tmp_path: Path) -> None:
    first = next(iter(fake_hub.commits))
    got = hub.download(source(revision=first), tmp_path)
    assert got.commit == first and got.files == ["config.json", "model.safetensors"]
    assert (got.folder / "config.json").read_bytes() == b'{"v": 1}'


@pytest.mark.parametrize("name", ["../x.safetensors", "/etc/passwd", "a/../../x.safetensors", "a\\..\\x.json"])
def test_a_listing_that_leaves_the_snapshot_is_refused_before_any_download(
    fake_hub: FakeHub, tmp_path: Path, name: str
) -> None:
    fake_hub.extra_listing.append(name)
    with pytest.raises(UnsafeRepoPathError, match="the listing names files outside the snapshot"):
        hub.download(source(), tmp_path)
    assert not [p for _, p in fake_hub.requests if "/resolve/" in p], "nothing may be fetched"
    assert not (tmp_path / REPO_ID.replace("/", "--")).exists()


def test_pickles_in_the_allowed_files_are_refused_before_any_download(fake_hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(PickleNotAllowedError, match=r"pickle-based weights are refused \(pytorch_model\.bin\)"):
        hub.download(source(allow_patterns=["*.safetensors", "*.bin"]), tmp_path)
    assert not [p for _, p in fake_hub.requests if "/resolve/" in p]


def test_a_listing_without_a_git_blob_id_for_a_small_file_is_refused_before_any_download(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    fake_hub.unlisted_blob_ids.add("config.json")
    with pytest.raises(HubListingError, match=r"the listing gives no git blob id for config\.json"):
        hub.download(source(), tmp_path)
    assert not fake_hub.downloads()


def test_an_unknown_revision_is_a_clear_error(fake_hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(HubError, match=r"acme/contract-qwen2@nope: cannot read the repository from the hub"):
        hub.download(source(revision="nope"), tmp_path)


def point_spec_at(repo: Path, url_revision: str = "main") -> None:
    """The demo model spec, its source switched to the fake hub (held to the hub's LFS sha256)."""
    path = repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["source"] = {"kind": "hub", "repo_id": REPO_ID, "revision": url_revision}
    spec.pop("verification")
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    git(repo, "commit", "--quiet", "-am", "weights from the hub")


def test_raw_weights_records_commit_and_lfs_sha256_per_file(
    fake_hub: FakeHub, own_demo_repo: Path, tmp_path: Path
) -> None:
    point_spec_at(own_demo_repo)
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)
    raw = fetch_raw(snap)
    head = fake_hub.commits[fake_hub.main]
    assert raw.commit == fake_hub.main
    by_path = {f.path: f for f in raw.files}
    assert sorted(by_path) == ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    for name, entry in by_path.items():
        assert entry.sha256 == hashlib.sha256(head[name]).hexdigest()
        assert entry.lfs_sha256 == (entry.sha256 if name.endswith(".safetensors") else None)
        assert entry.git_blob == (None if name.endswith(".safetensors") else git_blob_id(head[name]))
    result = verify(snap, raw)
    assert result.passed and result.source_commit == fake_hub.main
    assert result.against == "the hub's LFS sha256 and git blob ids"


def test_small_files_that_do_not_match_their_git_blob_id_fail_verification(
    fake_hub: FakeHub, own_demo_repo: Path, tmp_path: Path
) -> None:
    """config.json, the tokenizer and the chat template are plain git files: the listing's blob id covers them."""
    listed = fake_hub.commits[fake_hub.main]["config.json"]
    rewritten = b'{"v": 9}'  # same length, so the client's size check passes; only the blob id can tell
    fake_hub.served[(fake_hub.main, "config.json")] = rewritten
    point_spec_at(own_demo_repo)
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)
    result = verify(snap, fetch_raw(snap))
    assert not result.passed
    assert result.problems == [
        f"config.json: git blob {git_blob_id(rewritten)[:12]}… != the hub's git blob id {git_blob_id(listed)[:12]}…"
    ]


def test_bytes_that_do_not_match_the_lfs_sha256_fail_the_blocking_check(
    fake_hub: FakeHub, instance, own_demo_repo: Path
) -> None:
    victim = "model-00002-of-00002.safetensors"
    data = bytearray(fake_hub.commits[fake_hub.main][victim])
    data[-5] ^= 0x01  # same length, so the client's size check passes; only the sha256 can tell
    fake_hub.served[(fake_hub.main, victim)] = bytes(data)
    point_spec_at(own_demo_repo)  # the clone `instance` points the resources at

    result = materialize(instance, "model_spec", "raw_weights", "verified_weights", "quantized_weights")
    checks = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    (evaluation,) = [c for c in checks if c.check_name == "weights_match_trusted_hashes"]  # model_spec has its own
    assert not evaluation.passed
    problems = evaluation.metadata["problems"].value
    assert problems.startswith(f"{victim}: sha256 ") and "lfs_sha256" in problems
    assert "config.json" not in problems and "model-00001" not in problems
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert "quantized_weights" not in ran


def huggingface_reachable() -> bool:
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
    except OSError:
        return False
    return True


@pytest.mark.hub
def test_live_hub_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same path against huggingface.co itself, where it can be reached."""
    if not huggingface_reachable():
        pytest.skip("huggingface.co is not reachable from here")
    import huggingface_hub.constants

    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    from ai_platform.weights.hashing import sha256_file

    live = source(allow_patterns=["*.safetensors", "config.json"]).model_copy(
        update={"repo_id": "hf-internal-testing/tiny-random-gpt2"}
    )
    got = hub.download(live, tmp_path)
    assert hub.COMMIT_SHA.fullmatch(got.commit) and "config.json" in got.files
    assert sorted(p.name for p in got.folder.iterdir() if p.name != ".cache") == sorted(got.files)
    for name, sha in got.lfs_sha256.items():  # the hub's LFS sha256 holds for the bytes it served
        assert sha256_file(got.folder / name) == sha, name
