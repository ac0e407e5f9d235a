"""Config as code: `platform.yaml` and `models/<name>.yaml` as pydantic models.

Every model forbids unknown fields, so a typo is an error rather than a silently
ignored setting. Loading is all-or-nothing: `load_platform` validates every file
before returning anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import ErrorDetails

from ai_platform.errors import ConfigError
from ai_platform.hosts import loopback
from ai_platform.repo_paths import INSIDE, local_source_roots, model_folder, outside, repo_file
from ai_platform.repo_yaml import parse_yaml, read_yaml

if TYPE_CHECKING:
    from ai_platform.artifacts import ArtifactStore
    from ai_platform.warehouse import Warehouse

MODEL_NAME = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"  # a DNS label: it names k8s objects too
PROMPT_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
PINNED_IMAGE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


S = TypeVar("S", bound=Strict)


# ---------------------------------------------------------------- platform.yaml


class Storage(Strict):
    """Where artifacts and the warehouse live; relative paths are under the platform home.

    `warehouse` is a DuckDB file (the embedded default) or a DuckLake catalog in PostgreSQL
    (`ducklake:postgres:dbname=lake host=HOST user=USER`, the production profile), whose data
    files go under `warehouse_data` (a folder every writer reaches; object storage is not wired yet).

    `artifact_store` is where stages leave their outputs for the next: `folder` keeps them in
    `artifacts` on this machine (the embedded default); `registry` keeps them as OCI artifacts in
    the platform's registry (`registry.url`), so a stage in a fresh pod finds every input, and
    `artifacts` is only this machine's cache and scratch space.
    """

    artifacts: str = "artifacts"
    artifact_store: Literal["folder", "registry"] = "folder"
    warehouse: str = "warehouse.duckdb"
    warehouse_data: str | None = None

    @model_validator(mode="after")
    def _lake_has_data(self) -> Storage:
        if self.warehouse.startswith("ducklake:") and not self.warehouse_data:
            raise ValueError("warehouse_data: a DuckLake warehouse needs the folder or prefix for its data files")
        return self

    def warehouse_location(self, home: Path) -> str:
        """The DuckLake catalog as written, or the DuckDB file under `home`."""
        return self.warehouse if self.warehouse.startswith("ducklake:") else str(under(home, self.warehouse))


class Registry(Strict):
    """`oci-layout://PATH` (embedded default) or `https://host[/prefix]` (any OCI registry); `http://` and
    `insecure` (plain HTTP) only for a registry on this machine's loopback.

    `token_realms`: hosts besides the registry's own that may receive the registry credentials when the
    registry sends the client to a token service there (e.g. `gitlab.com` for `registry.gitlab.com`); always
    over https. Docker Hub's `auth.docker.io` is known without naming it.
    """

    url: str = "oci-layout://registry"
    insecure: bool = False
    token_realms: list[str] = Field(default_factory=list)

    @field_validator("url")
    @classmethod
    def _scheme(cls, url: str) -> str:
        if not re.match(r"^(oci-layout|https?)://.+", url):
            raise ValueError("url must start with oci-layout://, https:// or http://")
        hostname = urlsplit(url).hostname or ""
        if url.startswith("http://") and not loopback(hostname):
            raise ValueError(
                f"plain http:// is for a registry on loopback only (localhost, 127.0.0.0/8, ::1), not {hostname!r}:"
                " its traffic and credentials would cross the network unencrypted; use https://"
            )
        return url

    @field_validator("insecure")
    @classmethod
    def _insecure_on_loopback(cls, insecure: bool, info: ValidationInfo) -> bool:
        url = info.data.get("url", "")
        hostname = urlsplit(url).hostname or ""
        if insecure and not url.startswith("oci-layout://") and not loopback(hostname):
            raise ValueError(
                f"plain HTTP is for a registry on loopback only (localhost, 127.0.0.0/8, ::1), not {hostname!r};"
                " remove it and serve the registry over https"
            )
        return insecure

    @field_validator("token_realms")
    @classmethod
    def _host_names(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if not re.match(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$", host):
                raise ValueError(
                    f"{host!r} is not a host name: name the token service's host only (no scheme, port or path)"
                )
        return [host.lower() for host in hosts]


class Toleration(Strict):
    key: str
    operator: Literal["Equal", "Exists"] = "Exists"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


class GpuPod(Strict):
    """How GPU stages (quantize, serve) are scheduled on Kubernetes."""

    resource: str = "nvidia.com/gpu"
    count: int = Field(default=1, ge=1)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    # Pinned by digest: the canary's candidate and every colour run this very image, so what passed the
    # canary is what serves. The kubernetes backend requires both (`KubernetesBackend.check`).
    image: str | None = None
    quantize_image: str | None = None

    @field_validator("image", "quantize_image")
    @classmethod
    def _pinned(cls, image: str | None) -> str | None:
        if image is not None and not PINNED_IMAGE.match(image):
            raise ValueError(
                f"{image!r} is not pinned by digest; a tag can move, so what passed the canary would not be what"
                " serves (REPO[:TAG]@sha256:<64 hex>)"
            )
        return image


class Autoscaling(Strict):
    """KEDA on vLLM's own saturation signal (`vllm:kv_cache_usage_perc`; `gpu_cache_usage_perc` is deprecated)."""

    min_replicas: int = Field(default=1, ge=0)
    max_replicas: int = Field(default=4, ge=1)
    kv_cache_threshold: float = Field(default=0.8, gt=0.0, le=1.0)
    window: str = Field(default="2m", pattern=r"^\d+[smh]$")
    prometheus_url: str = "http://prometheus-operated.monitoring.svc:9090"


class ClusterGateway(Strict):
    """The gateway in the cluster: replicas of the code-location image running `ai-platform serve --states-from`."""

    image: str | None = None  # the code-location image (deploy/docker/code-location.Dockerfile), pinned by digest
    replicas: int = Field(default=2, ge=2)  # two at least: a PodDisruptionBudget keeps one while nodes drain
    max_replicas: int = Field(default=8, ge=2)
    cpu_utilization: int = Field(default=70, ge=10, le=100)  # the HPA's target, percent of the CPU request


class Kubernetes(Strict):
    namespace: str = "ai-platform"
    gateway: ClusterGateway = Field(default_factory=ClusterGateway)
    # The Secret whose key AI_PLATFORM_VLLM_API_KEY vLLM requires (`--api-key`); the gateway and the run pods
    # send it (their env carries the same Secret), so nothing else in the cluster can call vLLM
    vllm_api_key_secret: str = "ai-platform-vllm"
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)
    gpu: GpuPod = Field(default_factory=GpuPod)
    service_account: str | None = None
    # With `storage.artifact_store: folder` only: a ReadWriteMany claim holding the platform
    # home, mounted at the same path in workload pods, so a GPU pod reads and writes the
    # artifacts the step sees. With the registry store no pod needs another's disk.
    home_claim: str | None = None
    # A Secret with AI_PLATFORM_REGISTRY_USERNAME and _PASSWORD (or _TOKEN), given to workload
    # pods as environment: they fetch their inputs from the registry and push their output.
    registry_secret: str | None = None


class Execution(Strict):
    """`embedded`: subprocesses on this machine. `kubernetes`: pods and Deployments."""

    target: Literal["embedded", "kubernetes"] = "embedded"


class Feedback(Strict):
    inbox: str = "inbox"  # under the platform home unless absolute
    trust_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    # A JSONL corpus of {"text": clause} in the platform repo: an untrusted reply is asked again
    # with the most relevant clauses. Unset: replies are only marked needs_review.
    retrieval_corpus: str | None = None


DRAIN_S = 25  # gateway.drain_s default: under Kubernetes' default terminationGracePeriodSeconds (30)


class GatewayConfig(Strict):
    """The gateway's settings: where its hashed API keys live (under the platform home unless absolute), where
    the admission windows live, and how long a stopping gateway waits for the requests in flight."""

    keys: str = "gateway/keys.json"
    # Where the admission windows live: memory:// for one gateway process, redis://HOST:PORT for
    # replicas that share them (any storage URI of the `limits` library).
    window_storage: str = "memory://"
    # Seconds a stopping gateway (SIGTERM) lets the requests in flight finish; what is left is then cut (its
    # model server's connection closed). Keep it under the pod's terminationGracePeriodSeconds.
    drain_s: int = Field(default=DRAIN_S, ge=0, le=3600)


class PlatformConfig(Strict):
    name: str = Field(pattern=MODEL_NAME)
    storage: Storage = Field(default_factory=Storage)
    registry: Registry = Field(default_factory=Registry)
    execution: Execution = Field(default_factory=Execution)
    kubernetes: Kubernetes = Field(default_factory=Kubernetes)
    feedback: Feedback = Field(default_factory=Feedback)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)

    @model_validator(mode="after")
    def _store_has_registry(self) -> PlatformConfig:
        if self.storage.artifact_store == "registry" and self.registry.url.startswith("oci-layout://"):
            raise ValueError(
                "storage.artifact_store: registry keeps artifacts in the platform's registry;"
                " registry.url must name one (https://HOST[/PREFIX])"
            )
        return self


# ---------------------------------------------------------------- models/<name>.yaml


class LocalSource(Strict):
    """A folder on disk (or in the platform repo); the embedded default."""

    kind: Literal["local"]
    path: str
    allow_pickle: bool = False


class HubSource(Strict):
    """A Hugging Face Hub repository, pinned to the commit `revision` resolves to."""

    kind: Literal["hub"]
    repo_id: str = Field(pattern=r"^[\w.-]+/[\w.-]+$")
    revision: str = "main"
    allow_patterns: list[str] = Field(
        default_factory=lambda: ["*.safetensors", "*.json", "tokenizer*", "*.jinja", "*.txt"]
    )
    allow_pickle: bool = False


Source = Annotated[LocalSource | HubSource, Field(discriminator="kind")]


class WeightsSignature(Strict):
    """An OpenSSF model-signing signature over the weights, and who must have made it.

    Key-based (`public_key`, a PEM file in the platform repo) or Sigstore keyless
    (`identity` and `oidc_issuer`). Checked with the `model-signing` package.
    """

    path: str  # the signature (a Sigstore bundle) in the platform repo
    public_key: str | None = None
    identity: str | None = None
    oidc_issuer: str | None = None

    @model_validator(mode="after")
    def _one_signer(self) -> WeightsSignature:
        keyless = (self.identity, self.oidc_issuer)
        ok = keyless == (None, None) if self.public_key is not None else all(keyless)
        if not ok:
            raise ValueError("give either public_key, or both identity and oidc_issuer")
        return self


class Verification(Strict):
    manifest: str | None = None  # a trusted manifest in the platform repo
    reference_manifest: str | None = None  # the base model, to flag byte-identical "fine-tunes"
    # With a reference: block when at least this share of tensors is byte-identical to the base's
    # (a "fine-tune" that changed 1 bias of 300 tensors trained nothing; 1.0 blocks exact copies only).
    identical_fraction_limit: float = Field(default=0.99, gt=0.0, le=1.0)
    signature: WeightsSignature | None = None


class Calibration(Strict):
    path: str = "calibration"
    samples: int = Field(default=64, ge=1)
    max_seq_len: int = Field(default=256, ge=16)
    holdout_fraction: float = Field(default=0.2, gt=0.0, lt=1.0)


Scheme = Literal["W4A16", "W8A16", "W3A16", "W2A16", "W8A8"]


class Quantization(Strict):
    """`scheme` is what the spec wants; `fallback` is the rule for a target runtime that cannot serve it.

    The serving preflight asks the target's vLLM which schemes it executes (vLLM's CPU
    build has the W4A16 GEMM only in its AVX-512 kernel libraries). If it cannot run
    `scheme`, the first scheme of `fallback` it can run is produced instead, under the same
    gates; with no such scheme (or an empty `fallback`: the spec insists) the stage
    refuses before any work, naming the missing kernel and what the target serves.
    """

    method: Literal["awq", "none"] = "awq"
    # W4A16 is the production scheme; W8A8 (int8, SmoothQuant) is what AVX2-only CPUs
    # serve; the others exist to measure against it (W2A16 is what a broken recipe looks
    # like: the gates must stop it).
    scheme: Scheme = "W4A16"
    fallback: list[Scheme] = Field(default_factory=list)
    group_size: int = Field(default=128, ge=16)
    symmetric: bool = False
    ignore: list[str] = Field(default_factory=lambda: ["lm_head"])
    calibration: Calibration = Field(default_factory=Calibration)
    max_ppl_increase: float = Field(default=0.10, ge=0.0)
    # Perplexity alone misses damage that averages out: on the demo model 2-bit weights
    # *lowered* held-out perplexity 1.6% while the mean KL(base || quantized) per token
    # rose 22x over 4-bit (0.028 vs 0.0013). Both gates are blocking.
    max_kl_divergence: float = Field(default=0.01, ge=0.0)

    @model_validator(mode="after")
    def _fallback_differs(self) -> Quantization:
        if self.scheme in self.fallback or len(set(self.fallback)) != len(self.fallback):
            raise ValueError(f"fallback {self.fallback} repeats a scheme (scheme is {self.scheme})")
        return self


class ImageSpec(Strict):
    """How the model image is packed.

    `base`: an image whose layers go under the model's, named by digest so the build
    stays reproducible (an index digest is fine: its linux/amd64 image is used). A
    KServe modelcar needs one with a shell, e.g. busybox: KServe runs the image as a
    sidecar whose shell links its /models into the serving container and sleeps. Unset:
    the model files alone, which is all a Kubernetes image volume needs.
    """

    base: str | None = Field(default=None, pattern=r"^\S+@sha256:[0-9a-f]{64}$")


class Admission(Strict):
    """The gateway's weighted admission control for one model (docs/architecture.md, "Admission control").

    A request weighs what it will cost the model server: its input tokens plus four times
    its `max_tokens`, in units of 256. The weights admitted in the last `window_s` seconds
    may sum to `budget`, and one key to `key_share` of it. Over either, the request is
    retried at `degrade_max_tokens` (if set and smaller), else refused with 429 and a
    Retry-After. `max_tokens` is what a request that names none gets.
    """

    window_s: int = Field(default=10, ge=1)
    # The rate limiter (`limits`) keeps one entry per unit admitted in the window: a bound keeps that in memory
    # (a million units, 256M tokens per window, is far past any model server).
    budget: int = Field(default=400, ge=1, le=1_000_000)
    key_share: float = Field(default=0.5, gt=0.0, le=1.0)
    max_tokens: int = Field(default=512, ge=1)
    degrade_max_tokens: int | None = Field(default=128, ge=1)


class Serving(Strict):
    max_model_len: int = Field(default=2048, ge=64)
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    block_size: int = Field(default=32, ge=1)
    cpu_kv_cache_space_gib: int = Field(default=1, ge=1)
    gpu_memory_utilization: float = Field(default=0.9, gt=0.0, le=1.0)
    max_num_seqs: int = Field(default=16, ge=1)
    # The prompt compiler proves every schema with xgrammar, so serve with xgrammar too.
    # Compact JSON: with free whitespace a weak model can emit whitespace forever (seen).
    structured_outputs_backend: Literal["xgrammar"] = "xgrammar"
    compact_json: bool = True
    extra_args: list[str] = Field(default_factory=list)
    admission: Admission = Field(default_factory=Admission)


class Gate(Strict):
    """One canary gate: absolute (`min`/`max`) or relative to the champion (`max_drop`/`max_rise`)."""

    metric: str
    min: float | None = None
    max: float | None = None
    max_drop: float | None = None
    max_rise: float | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Gate:
        bounds = [b for b in ("min", "max", "max_drop", "max_rise") if getattr(self, b) is not None]
        if len(bounds) != 1:
            raise ValueError(f"a gate takes exactly one of min, max, max_drop, max_rise (got {bounds or 'none'})")
        return self


class Canary(Strict):
    evals: list[str] = Field(default_factory=list, min_length=1)
    concurrency: int = Field(default=4, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)  # per case, per attempt
    retries: int = Field(default=2, ge=0)  # transport errors and 429/5xx only; a failure is never hidden
    # Gates judge greedy replies (reproducible) unless the prompt sets its own temperature;
    # max_tokens bounds a degenerate candidate that would otherwise never stop.
    max_tokens: int = Field(default=512, ge=1)
    injection_model: str | None = None  # a local text-classification model folder; rules are the default
    # At least one: a canary with no gate passes every candidate, which is no canary at all
    gates: list[Gate] = Field(min_length=1)


class InjectionGuard(Strict):
    action: Literal["block", "log"] = "block"
    threshold: float = Field(default=0.8, ge=0.0, le=1.0)  # the input's injection score that triggers it


class Guards(Strict):
    """What the gateway does when a guard fires on this model's traffic; every action is an audit row.

    `pii`: validated PII in a reply is withheld (`block`, the reply says why), replaced by
    `[PII:kind]` (`mask`), or only recorded (`log`). `injection`: an input scoring at or over
    the threshold is refused (`block`) or recorded (`log`). `store_inputs`: what
    `generations.input` keeps: the input as it came (`raw`), with PII masked (`masked`), or
    nothing (`none`). The defaults are the reference article's (§5.2).
    """

    pii: Literal["block", "mask", "log"] = "block"
    injection: InjectionGuard = InjectionGuard()  # frozen: one shared default is safe
    store_inputs: Literal["raw", "masked", "none"] = "masked"


class Trust(Strict):
    """When a trust model trained on this model's labels may become its champion (the blocking checks of
    `trust_model`): enough labels, a holdout AUC above the floor and above the best single feature's, and a
    holdout calibration error (ECE, 10 bins) under the bound."""

    min_labels: int = Field(default=20, ge=10)
    min_auc: float = Field(default=0.6, ge=0.5, le=1.0)
    max_ece: float = Field(default=0.1, gt=0.0, le=1.0)


class Rollout(Strict):
    """How a blue/green switch in the cluster hands requests over (docs/kubernetes.md, "What a switch does").

    `drain_s`: each vLLM container's preStop sleep, the time for its pod's endpoint to leave every node's
    kube-proxy (and the gateways' connection pools) before vLLM is told to stop; the pod's grace period is
    derived from it and `serving.max_model_len` (`rollout.kubernetes.grace_period_s`). `rollback_window_s`: how long
    the colour a switch left keeps its replicas, so a rollback within it finds warm pods; then it is paused at 0.
    """

    drain_s: int = Field(default=15, ge=1, le=120)
    rollback_window_s: int = Field(default=600, ge=0, le=86_400)


class ModelSpec(Strict):
    name: str = Field(pattern=MODEL_NAME)
    description: str = ""
    owner: str = ""
    source: Source
    verification: Verification = Field(default_factory=Verification)
    quantization: Quantization = Field(default_factory=Quantization)
    serving: Serving = Field(default_factory=Serving)
    rollout: Rollout = Field(default_factory=Rollout)
    image: ImageSpec = Field(default_factory=ImageSpec)
    prompts: list[Annotated[str, Field(pattern=PROMPT_NAME)]] = Field(min_length=1)
    canary: Canary
    guards: Guards = Field(default_factory=Guards)
    trust: Trust = Field(default_factory=Trust)


# ---------------------------------------------------------------- loading


class Platform(BaseModel):
    """A validated platform repository at one commit: its config and every model spec.

    `root` holds the repo's files (prompts, evals, ...); `home` holds the state
    that runs write (artifacts, warehouse, inbox): state never lives in git.
    """

    model_config = ConfigDict(frozen=True)

    root: Path
    home: Path
    config: PlatformConfig
    models: dict[str, ModelSpec]
    source_roots: tuple[Path, ...] = ()  # where model folders outside the repo may be ($AI_PLATFORM_LOCAL_SOURCES)

    def file(self, relative: str) -> Path:
        """A file of the platform repo, e.g. an eval set named by a model spec; never one outside it."""
        return repo_file(self.root, relative)

    def model_folder(self, relative: str) -> Path:
        """A local model source: a folder of the repo, or one under a root the operator allows."""
        return model_folder(self.root, relative, self.source_roots)

    def state(self, relative: str) -> Path:
        """A state location from platform.yaml (artifacts, warehouse, inbox)."""
        return under(self.home, relative)

    @property
    def artifacts_path(self) -> Path:
        """This machine's artifact folder: the store itself on the embedded default, else its cache."""
        return self.state(self.config.storage.artifacts)

    # The site (`ai_platform.site`) builds the store and the warehouse; these two remain only for the stages
    # not yet handed theirs (image, evaluation, rollout, weights, prompts, specs, serving state, feedback),
    # and decide nothing: the store factory and the warehouse module do.
    def warehouse(self) -> Warehouse:
        from ai_platform.warehouse import at

        return at(self.config.storage.warehouse_location(self.home), self.config.storage.warehouse_data)

    def artifacts(self) -> ArtifactStore:
        from ai_platform.oci.store import open_store

        return open_store(self.config.storage.artifact_store, self.artifacts_path, self.config.registry)

    @property
    def gateway_keys_path(self) -> Path:
        return self.state(self.config.gateway.keys)

    @property
    def inbox_path(self) -> Path:
        return self.state(self.config.feedback.inbox)

    def model(self, name: str) -> ModelSpec:
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(sorted(self.models)) or "none"
            raise ConfigError(f"no model '{name}' in {self.root / 'models'} (known: {known})") from None


def under(base: Path, relative: str) -> Path:
    """A location from the config: `relative` under `base`, unless it is absolute (or starts with ~)."""
    path = Path(relative).expanduser()
    return path if path.is_absolute() else base / path


def _read_yaml(root: Path, relative: str) -> Any:
    """A config file of the repo at `root`: inside it (repo_paths), read and parsed by repo_yaml."""
    return read_yaml(repo_file(root, relative, relative))


def parse_platform_config(text: str, where: str) -> PlatformConfig:
    """platform.yaml's text, validated; every problem in one ConfigError naming `where` and the field."""
    return parse(PlatformConfig, parse_yaml(text, where), Path(where))


def _describe(error: ErrorDetails) -> str:
    field = ".".join(str(part) for part in error["loc"]) or "(top level)"
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "literal_error":
        return f"{field}: must be one of {ctx.get('expected')} (got {error['input']!r})"
    if kind == "union_tag_invalid":
        return f"{field}: must be one of {ctx.get('expected_tags')} (got {ctx.get('tag')!r})"
    if kind == "extra_forbidden":
        return f"{field}: unknown field"
    if kind == "missing":
        return f"{field}: required field is missing"
    message = error["msg"].removeprefix("Value error, ")
    return f"{field}: {message} (got {error['input']!r})"


def parse(model: type[S], data: Any, path: Path) -> S:
    """Validate `data` read from `path`; all problems in one ConfigError naming file and field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "\n  ".join(_describe(e) for e in exc.errors())
        raise ConfigError(f"{path}: invalid {model.__name__}:\n  {problems}") from None


def spec_files(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """(field, path) of every repo file a model spec names (the model folder is `model_folder`'s)."""
    yield "quantization.calibration.path", spec.quantization.calibration.path
    for i, path in enumerate(spec.canary.evals):
        yield f"canary.evals.{i}", path
    if spec.canary.injection_model:
        yield "canary.injection_model", spec.canary.injection_model
    verification = spec.verification
    for name in ("manifest", "reference_manifest"):
        value = getattr(verification, name)
        if value:
            yield f"verification.{name}", value
    if verification.signature:
        yield "verification.signature.path", verification.signature.path
        if verification.signature.public_key:
            yield "verification.signature.public_key", verification.signature.public_key


def path_problems(
    root: Path, config: PlatformConfig, specs: dict[str, ModelSpec], roots: tuple[Path, ...]
) -> list[str]:
    """Every path of platform.yaml and the specs that leads outside the repo, as `file: field: why`."""
    found = []
    corpus = config.feedback.retrieval_corpus
    if corpus and (why := outside(root, corpus)):
        found.append(f"{Path(root) / 'platform.yaml'}: feedback.retrieval_corpus: {why}; {INSIDE}")
    for name, spec in specs.items():
        where = Path(root) / "models" / f"{name}.yaml"
        for field, path in spec_files(spec):
            if why := outside(root, path):
                found.append(f"{where}: {field}: {why}; {INSIDE}")
        source = getattr(spec.source, "path", None)
        if source is not None:
            try:
                model_folder(root, source, roots)
            except ConfigError as exc:
                found.append(f"{where}: {exc}")
    return found


def load_platform(root: Path, home: Path | None = None, source_roots: tuple[Path, ...] | None = None) -> Platform:
    """Read and validate `platform.yaml` and all `models/*.yaml` under `root`.

    `home` is where state goes (default: `<root>/.state`). Every file they name must be inside `root`; a local
    model folder may be under `source_roots` instead (default: $AI_PLATFORM_LOCAL_SOURCES; ai_platform.repo_paths).
    """
    root = Path(root)
    config = parse(PlatformConfig, _read_yaml(root, "platform.yaml"), root / "platform.yaml")
    models: dict[str, ModelSpec] = {}
    for path in sorted((root / "models").glob("*.yaml")):
        spec = parse(ModelSpec, _read_yaml(root, f"models/{path.name}"), path)
        if spec.name != path.stem:
            raise ConfigError(f"{path}: name: must equal the file stem '{path.stem}' (got {spec.name!r})")
        models[spec.name] = spec
    roots = local_source_roots() if source_roots is None else source_roots
    escaping = path_problems(root, config, models, roots)
    if escaping:
        raise ConfigError("\n".join(escaping))
    for spec in models.values():
        for prompt in spec.prompts:
            if not (root / "prompts" / f"{prompt}.prompt").is_file():
                raise ConfigError(
                    f"{root / 'models' / (spec.name + '.yaml')}: prompts: no file prompts/{prompt}.prompt"
                )
        for eval_path in spec.canary.evals:
            if not (root / eval_path).is_file():
                raise ConfigError(f"{root / 'models' / (spec.name + '.yaml')}: canary.evals: no file {eval_path}")
    home = Path(home) if home else root / ".state"
    return Platform(root=root, home=home, config=config, models=models, source_roots=roots)
