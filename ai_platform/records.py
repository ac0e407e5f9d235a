"""What flows along each edge of the pipeline: one small, typed record per stage output.

A stage function takes its upstream records and returns its own; the asset
reads the records it consumes and publishes the one it produces. This module is
the only one that knows the stage names under which records are kept (refs in
the artifact store, `refs/<stage>/<model>.json`), and `Records.publish` is the
one on-pass rule: a gated stage's record is written only when every gate passed,
so a later stage never reads the output of a failed one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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
class QuantizeRun:
    """quantize_runs, keyed by the quantization's inputs and code version (`quantize.stage.inputs_key`), not by model:
    the workload's report for them. Asked again with the same inputs, quantized_weights reports it (its output
    re-hashed) instead of running AWQ again."""

    stage: ClassVar[str] = "quantize_runs"
    key: str
    report: dict[str, Any]


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
    layout: str  # the OCI layout holding it on the machine of the platform home
    pullable: str = ""  # HOST/REPO@sha256:… where a registry holds it (a cluster's gateway pulls it); "" if not pushed


@dataclass(frozen=True)
class ImageLocation:
    """Where an image is, as model_image left it: `image.locations.locate` turns it into what a server starts from."""

    layout: str  # the OCI layout holding it on the machine of the platform home (the embedded backend unpacks it)
    pullable: str = ""  # HOST/REPO@sha256:… where a registry holds it (a cluster pulls it); "" if never pushed


@dataclass(frozen=True)
class ModelImage:
    """model_image: the OCI image of the quantized weights."""

    stage: ClassVar[str] = "model_image"
    digest: str  # manifest digest
    location: ImageLocation
    weights_digest: str

    @property
    def ref(self) -> str:
        """Where it can be pulled from, as one string (the `images` table's `ref`)."""
        return self.location.pullable or f"oci:{self.location.layout}@{self.digest}"


@dataclass(frozen=True)
class CanaryPass:
    """canary_eval: an image and bundle whose every canary gate passed; the rollout's only input."""

    stage: ClassVar[str] = "canary_eval"
    image: ModelImage
    bundle: PromptBundle
    run_id: str


@dataclass(frozen=True)
class Pin:
    """pins: the commit model_spec pinned a model to; every later stage of a run reads the spec there."""

    stage: ClassVar[str] = "pins"
    model: str
    digest: str  # of the canonical spec
    commit: str
    author: str
    timestamp: int
    message: str
    snapshot: str  # the platform repo exported at `commit`


@dataclass(frozen=True)
class TrustChampion:
    """trust_model: the served model's promoted trust model (a blob of the artifact store)."""

    stage: ClassVar[str] = "trust_model"
    version: str
    path: str


@dataclass(frozen=True)
class LiveRelease:
    """What a model's users are served: the image and bundle records, the server settings and runtime (together
    the `release`, serving/release.py), the colour, its replicas and where the gateway sends requests.

    The first nine fields are the gateway's routing view (digests and addresses), in the order the rollout state
    file has always had them; `serving/state.Color` is this class. A state written by an older platform lacks the
    records (`model_image`/`prompt_bundle` None): it still routes, but a rollback or a champion needs a rollout
    by this version first.
    """

    color: str
    base_url: str  # where the gateway sends the model's requests
    pid: int  # the vLLM process on this machine; 0 in a cluster (the Service and its pods)
    image: str  # manifest digest of the model image (= model_image.digest)
    bundle: str  # manifest digest of the prompt bundle (= prompt_bundle.digest)
    bundle_layout: str  # where the gateway loads the bundle from: a folder here, HOST/REPO@sha256:… in a cluster
    deployment_id: str
    release: str = ""  # serving/release.py: image, server settings, runtime ("" from an older platform)
    started: str = ""  # vllm.process_identity of `pid` when it started ("" from an older platform, or a cluster)
    model_image: ModelImage | None = None
    prompt_bundle: PromptBundle | None = None
    serving: dict[str, Any] = field(default_factory=dict)  # the spec's `serving` section it was started with
    runtime: str = ""  # the serve environment's vLLM here, the pinned vLLM image in a cluster
    replicas: int = 1  # what the rollout asked for (a cluster's autoscaler moves it from there)
    model_dir: str = ""  # the model folder its vLLM serves on this machine ("" in a cluster): what a restart serves
    log_path: str = ""  # its vLLM's log on this machine
    restarts: int = 0  # times the embedded supervisor started it again after its process died (rollout/heal.py)
    # In a cluster, the GPUs its pods ask for: {"resource", "count", "node_selector"} of platform.yaml's
    # kubernetes.gpu (part of the release there, so a rollback restores it); {} on this machine or from an older
    # platform.
    gpu: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelState:
    """A model's rollout state: what is live and what was (the rollback's target), and the gateway settings of
    the last rollout. The embedded backend keeps it in the platform home (`serving/state.py`); a cluster's
    rollouts keep it in the artifact store under `gateway_state`, which every gateway replica follows."""

    stage: ClassVar[str] = "gateway_state"
    model: str
    warehouse: str
    live: LiveRelease | None = None
    previous: LiveRelease | None = None  # stopped after the drain; rollback starts it again
    trust_threshold: float = 0.7  # platform.yaml feedback.trust_threshold, as of the last rollout
    inbox: str = ""  # where `POST /v1/feedback` drops reviewers' labels
    retrieval_corpus: str = ""  # feedback.retrieval_corpus, resolved; empty: no re-ask
    guards: dict[str, Any] = field(default_factory=dict)  # the model spec's `guards`, as of the last rollout
    keys_file: str = ""  # platform.yaml gateway.keys, resolved: the hashed API keys
    window_storage: str = "memory://"  # platform.yaml gateway.window_storage
    admission: dict[str, Any] = field(default_factory=dict)  # the model spec's serving.admission
    # In a cluster: until when (epoch seconds) the colour the last switch left, `previous`'s, keeps its replicas so
    # that a rollback finds it warm; past it, the next rollout or `rollout.kubernetes.reap_idle` pauses it at 0.
    # 0: nothing is kept warm (never switched, already reaped, or the embedded backend, which stops it at once).
    idle_until: float = 0.0
    # When (epoch seconds) `ai-platform rollout stop` stopped the model: no replica serves it until the next rollout
    # or a rollback, which clear it. 0: not stopped. In a cluster `live` stays what was live (its colours at 0
    # replicas); on this machine the stop clears `live`.
    stopped_at: float = 0.0

    @property
    def stopped(self) -> bool:
        return self.stopped_at > 0

    @property
    def idle_color(self) -> str:
        return "blue" if self.live is None or self.live.color == "green" else "green"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelState:
        """A state as written by this or an older platform (missing fields take their defaults)."""
        found: ModelState = adapter(cls).validate_python(data)
        return found


Record = (
    RawWeights
    | VerifiedWeights
    | QuantizedWeights
    | QuantizeRun
    | CompiledPrompts
    | PromptBundle
    | ModelImage
    | CanaryPass
    | Pin
    | TrustChampion
    | ModelState
)
R = TypeVar(
    "R",
    RawWeights,
    VerifiedWeights,
    QuantizedWeights,
    QuantizeRun,
    CompiledPrompts,
    PromptBundle,
    ModelImage,
    CanaryPass,
    Pin,
    TrustChampion,
    ModelState,
)


class Records:
    """The stage records of one artifact store."""

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store

    def publish(self, record: Record, model: str, *, passed: bool = True) -> None:
        """Make `record` what the next stage reads, only if its stage's gates passed."""
        if passed:
            self.store.set_ref(record.stage, model, adapter(type(record)).dump_python(record, mode="json"))

    def read(self, kind: type[R], model: str) -> R:
        """The record the last passing materialization of `kind`'s stage published for `model`."""
        return _valid(kind, model, self.store.ref(kind.stage, model))

    def find(self, kind: type[R], model: str) -> R | None:
        """`read`, or None where nothing was ever published for `model` (an older version's record still raises)."""
        try:
            raw = self.store.ref(kind.stage, model)
        except MissingArtifactError:
            return None
        return _valid(kind, model, raw)

    def all(self, kind: type[R]) -> dict[str, R]:
        """Every model's record of `kind`."""
        return {model: _valid(kind, model, raw) for model, raw in self.store.refs(kind.stage).items()}


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def adapter(kind: type[Any]) -> TypeAdapter[Any]:
    """The validator of a record type, built once (the gateway re-reads rollout states every second)."""
    found = _ADAPTERS.get(kind)
    if found is None:
        found = _ADAPTERS[kind] = TypeAdapter(kind)
    return found


def _valid(kind: type[R], model: str, raw: dict[str, Any]) -> R:
    try:
        found: R = adapter(kind).validate_python(raw)
        return found
    except ValidationError:
        raise MissingArtifactError(
            f"{kind.stage} for '{model}' was written by an older version of the platform: materialize it again"
        ) from None
