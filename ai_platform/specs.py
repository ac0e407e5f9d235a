"""The model_spec stage: one model's validated spec at one platform-repo commit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ai_platform.artifacts import FolderStore, canonical_json, sha256_hex
from ai_platform.config import ModelSpec, Platform, load_platform
from ai_platform.errors import MissingArtifactError
from ai_platform.platform_repo import Commit, load_at
from ai_platform.records import Pin, Records


@dataclass(frozen=True)
class SpecSnapshot:
    commit: Commit
    platform: Platform
    spec: ModelSpec
    digest: str  # sha256 of the canonical spec: unchanged spec, unchanged version

    def record(self) -> Pin:
        return Pin(
            model=self.spec.name,
            digest=self.digest,
            commit=self.commit.sha,
            author=self.commit.author,
            timestamp=self.commit.timestamp,
            message=self.commit.message,
            snapshot=str(self.platform.root),
        )


def spec_digest(spec: ModelSpec) -> str:
    return sha256_hex(canonical_json(spec.model_dump(mode="json")))


def snapshot_model_spec(repo: Path, home: Path, model: str, ref: str = "HEAD") -> SpecSnapshot:
    """Validate the whole platform repo at `ref` and pin `model`'s spec to that commit."""
    commit, platform = load_at(repo, home, ref)
    spec = platform.model(model)
    snapshot = SpecSnapshot(commit, platform, spec, spec_digest(spec))
    # The pin sits at a fixed place under home: later stages find the commit (and so the
    # artifacts location from that commit's platform.yaml) without re-reading the branch.
    # It goes to the artifact store too, for a stage in a fresh pod (`PlatformRepoResource.pinned`).
    for store in (FolderStore(home), platform.artifacts()):
        Records(store).publish(snapshot.record(), model)
    return snapshot


def pinned_spec(home: Path, model: str) -> SpecSnapshot:
    """The spec as model_spec last materialized it: the same commit for every later stage."""
    pin = Records(FolderStore(home)).find(Pin, model)
    if pin is None:
        raise MissingArtifactError(f"model_spec has not been materialized for '{model}' yet")
    platform = load_platform(Path(pin.snapshot), home=home)
    commit = Commit(sha=pin.commit, author=pin.author, timestamp=pin.timestamp, message=pin.message)
    spec = platform.model(model)
    return SpecSnapshot(commit, platform, spec, spec_digest(spec))
