"""What flows along each edge of the pipeline: one small, typed record per stage output.

A stage function takes its upstream records and returns its own; the asset
reads the records it consumes and publishes the one it produces. This module is
the only one that knows the stage names under which records are kept (refs in
the artifact store, `refs/<stage>/<model>.json`), and `Records.publish` is the
one on-pass rule: a gated stage's record is written only when every gate passed,
so a later stage never reads the output of a failed one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import TypeAdapter, ValidationError

from ai_platform.artifacts import ArtifactStore
from ai_platform.errors import MissingArtifactError


@dataclass(frozen=True)
class SourceFile:
    path: str
    size: int
    sha256: str
    lfs_sha256: str | None = None  # the hub's LFS sha256, when the source is the hub
    git_blob: str | None = None  # the hub's git blob id, for a hub file not in LFS


@dataclass(frozen=True)
class RawWeights:
    """raw_weights: the source pinned to one commit, every file hashed."""

    stage: ClassVar[str] = "raw_weights"
    model: str
    source: dict[str, Any]  # the spec's source, as JSON
    commit: str  # the hub commit, or the platform-repo commit for a local source
    folder: str
    files: tuple[SourceFile, ...]
    digest: str  # over the file list


@dataclass(frozen=True)
class VerifiedWeights:
    """verified_weights: a folder whose every byte matched what was trusted (its manifest is a blob)."""

    stage: ClassVar[str] = "verified_weights"
    folder: str
    digest: str  # manifest digest
    commit: str
    signing_manifest: str  # digest of the OpenSSF model-signing statement


@dataclass(frozen=True)
class QuantizedWeights:
    """quantized_weights: the weights the image is built from, within every quality budget."""

    stage: ClassVar[str] = "quantized_weights"
    digest: str  # manifest digest (a blob); the verified digest for method none
    folder: str
    method: str  # awq | smoothquant | ... | none
    scheme: str  # the scheme produced (the serving preflight's choice); "none" for method none
    recipe_digest: str | None  # None for method none


@dataclass(frozen=True)
class PromptVersion:
    name: str
    version: str  # sha256 of the compiled document's canonical JSON (a blob)


@dataclass(frozen=True)
class CompiledPrompts:
    """compiled_prompts: every prompt the spec uses, compiled and serveable."""

    stage: ClassVar[str] = "compiled_prompts"
    digest: str  # over (name, version) pairs
    commit: str
    prompts: tuple[PromptVersion, ...]


@dataclass(frozen=True)
class PromptBundle:
    """prompt_bundle: the compiled prompts as one OCI artifact."""

    stage: ClassVar[str] = "prompt_bundle"
    digest: str  # manifest digest
    commit: str
    layout: str


@dataclass(frozen=True)
class ModelImage:
    """model_image: the OCI image of the quantized weights."""

    stage: ClassVar[str] = "model_image"
    digest: str  # manifest digest
    ref: str  # where it can be pulled from
    layout: str
    weights_digest: str


@dataclass(frozen=True)
class CanaryPass:
    """canary_eval: an image and bundle whose every canary gate passed; the rollout's only input."""

    stage: ClassVar[str] = "canary_eval"
    image: str
    bundle: str
    run_id: str


Record = RawWeights | VerifiedWeights | QuantizedWeights | CompiledPrompts | PromptBundle | ModelImage | CanaryPass
R = TypeVar("R", RawWeights, VerifiedWeights, QuantizedWeights, CompiledPrompts, PromptBundle, ModelImage, CanaryPass)


class Records:
    """The stage records of one artifact store."""

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store

    def publish(self, record: Record, model: str, *, passed: bool = True) -> None:
        """Make `record` what the next stage reads, only if its stage's gates passed."""
        if passed:
            self.store.set_ref(record.stage, model, TypeAdapter(type(record)).dump_python(record, mode="json"))

    def read(self, kind: type[R], model: str) -> R:
        """The record the last passing materialization of `kind`'s stage published for `model`."""
        raw = self.store.ref(kind.stage, model)
        try:
            return TypeAdapter(kind).validate_python(raw)
        except ValidationError:
            raise MissingArtifactError(
                f"{kind.stage} for '{model}' was written by an older version of the platform: materialize it again"
            ) from None
