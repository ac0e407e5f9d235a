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
from ai_platform.hosts import loopback, service_host
from ai_platform.repo_paths import INSIDE, local_source_roots, model_folder, outside, repo_file
from ai_platform.repo_yaml import parse_yaml, read_yaml

if TYPE_CHECKING:
    from ai_platform.artifacts import ArtifactStore
    from ai_platform.warehouse import Warehouse

MODEL_NAME = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"  # a DNS label: it names k8s objects too
# An object name (Secret, claim): a DNS subdomain, as the API server checks it
K8S_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
PROMPT_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
PINNED_IMAGE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
# Every Kubernetes object a model's manifests name after the model is NAME + one of these (rollout/kubernetes.py):
# the Service (none), a colour's Deployment, ScaledObject and PodDisruptionBudget, the NetworkPolicy, a canary's
# Deployment and Service (12 hex of its image digest), a rollback's Job from an operator's machine (5 random hex,
# `rollout/operator.py`). A Service's name is a DNS-1035 label, 63 characters at most,
# and so is the `app.kubernetes.io/instance` label value a colour's name is: `ModelSpec.name` is held to the longest.
CANARY_HEX = 12
ROLLBACK_HEX = 5
MODEL_OBJECT_SUFFIXES = (
    "",
    "-blue",
    "-green",
    "-vllm",
    "-canary-" + "0" * CANARY_HEX,
    "-rollback-" + "0" * ROLLBACK_HEX,
)
OBJECT_NAME_MAX = 63
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def longest_model_name() -> int:
    """The longest model name whose every object name fits `OBJECT_NAME_MAX`."""
    return OBJECT_NAME_MAX - max(len(suffix) for suffix in MODEL_OBJECT_SUFFIXES)


QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
SCALE = {
    None: 1,
    "m": 0.001,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def quantity(text: str) -> float:
    """A Kubernetes quantity (`500m`, `4`, `32Gi`, `1.5G`) as a number (cores, bytes); ValueError if not one."""
    match = QUANTITY.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a Kubernetes quantity (e.g. 500m, 4, 32Gi)")
    return float(match.group(1)) * SCALE[match.group(2)]


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


class PodResources(Strict):
    """CPU and memory of a GPU pod's container (each colour's vLLM, the canary's, the quantize workload) besides its
    GPUs, and the size of its /dev/shm, as the vLLM production-stack chart sets them (requestCPU, requestMemory,
    shmSize).

    Requests are what the scheduler reserves on the node. Memory is limited, at the request unless `memory_limit`
    says more: a pod past it is OOM-killed, not its neighbours. CPU is not limited unless `cpu_limit` says so: a
    CFS quota throttles vLLM's tokenizer and scheduler threads in bursts, which shows as time to first token.
    `shm_size`: a memory-backed emptyDir at /dev/shm, where PyTorch and NCCL pass tensors between processes (a
    container's own is 64 MiB, which tensor parallelism and multi-process loading outgrow); its pages count
    against the memory limit, so it must stay under it."""

    cpu: str = "4"
    memory: str = "32Gi"
    cpu_limit: str | None = None
    memory_limit: str | None = None
    shm_size: str = "8Gi"

    @field_validator("cpu", "cpu_limit")
    @classmethod
    def _cpu(cls, text: str | None) -> str | None:
        if text is not None and quantity(text) < 0.1:
            raise ValueError(f"{text!r}: at least 100m (a tenth of a core)")
        return text

    @field_validator("memory", "memory_limit")
    @classmethod
    def _memory(cls, text: str | None) -> str | None:
        if text is not None and quantity(text) < 2**30:
            raise ValueError(f"{text!r}: at least 1Gi (vLLM and the quantize workload load a model)")
        return text

    @field_validator("shm_size")
    @classmethod
    def _shm(cls, text: str) -> str:
        if quantity(text) < 64 * 2**20:
            raise ValueError(f"{text!r}: at least 64Mi (what a container has without it)")
        return text

    @property
    def memory_limit_or_request(self) -> str:
        return self.memory_limit or self.memory

    @model_validator(mode="after")
    def _limits_hold_requests(self) -> PodResources:
        if self.memory_limit and quantity(self.memory_limit) < quantity(self.memory):
            raise ValueError(f"memory_limit {self.memory_limit} must be at least the request, memory {self.memory}")
        if self.cpu_limit and quantity(self.cpu_limit) < quantity(self.cpu):
            raise ValueError(f"cpu_limit {self.cpu_limit} must be at least the request, cpu {self.cpu}")
        if quantity(self.shm_size) >= quantity(self.memory_limit_or_request):
            raise ValueError(
                f"shm_size {self.shm_size} must stay under the memory limit ({self.memory_limit_or_request}):"
                " /dev/shm's pages count against it"
            )
        return self


class GpuPod(Strict):
    """How GPU stages (quantize, serve) are scheduled on Kubernetes. `count` GPUs per pod; vLLM runs one server
    tensor-parallel across them (`--tensor-parallel-size count`)."""

    resource: str = "nvidia.com/gpu"
    count: int = Field(default=1, ge=1)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    resources: PodResources = Field(default_factory=PodResources)
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
    # KEDA's Prometheus; unset: the operator's `prometheus-operated` Service in `kubernetes.monitoring.namespace`
    prometheus_url: str | None = None
    # When KEDA cannot read the trigger `fallback_failures` times in a row (Prometheus down), the colour runs
    # `fallback_replicas`, or what it runs now where that is more (KEDA's `currentReplicasIfHigher`, 2.17+): an
    # outage of the metrics neither scales a loaded model down nor an idle one up to its maximum.
    fallback_replicas: int = Field(default=1, ge=1)
    fallback_failures: int = Field(default=3, ge=1, le=100)

    @field_validator("min_replicas")
    @classmethod
    def _not_zero(cls, count: int) -> int:
        if count == 0:
            raise ValueError(
                "0 is scale-to-zero, which nothing here wakes: KEDA's Prometheus trigger reads vLLM's metrics, which"
                " no pod exports at 0 replicas, and the gateway does not hold requests for a cold start; a rollout"
                " would also count 0 of 0 pods as rolled out. Use 1 or more (KEDA's minReplicaCount)"
            )
        return count

    @model_validator(mode="after")
    def _within(self) -> Autoscaling:
        if self.fallback_replicas > self.max_replicas:
            raise ValueError(
                f"fallback_replicas ({self.fallback_replicas}) is more than max_replicas ({self.max_replicas})"
            )
        return self


# Kubernetes label keys and values (apimachinery's validation): an optional DNS-subdomain prefix, a name of 63
LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{LABEL_NAME}$"
LABEL_VALUE = rf"^({LABEL_NAME})?$"


class Monitoring(Strict):
    """The Prometheus (operator) that scrapes the kit: the namespace it runs in (the NetworkPolicies admit scrapes
    from there; KEDA asks its `prometheus-operated` Service) and the labels its `podMonitorSelector`,
    `serviceMonitorSelector` and `ruleSelector` match, set on every PodMonitor and PrometheusRule. The defaults are
    a kube-prometheus-stack chart installed as release `kube-prometheus-stack` in `monitoring`."""

    namespace: str = Field(default="monitoring", pattern=MODEL_NAME)
    labels: dict[
        Annotated[str, Field(pattern=LABEL_KEY, max_length=316)], Annotated[str, Field(pattern=LABEL_VALUE)]
    ] = Field(default_factory=lambda: {"release": "kube-prometheus-stack"})


# Redis 7.4 (alpine), the official image's multi-arch index as several public projects pin it; re-resolve with
# `docker buildx imagetools inspect redis:7.4-alpine` and set kubernetes.redis.image to move.
REDIS_IMAGE = "redis:7.4-alpine@sha256:ff02b58f971e7d7d156a1267e283fcbbeee91773b6aa36c49dac28ecfe28eadf"


class ClusterRedis(Strict):
    """The kit's Redis: where the gateway replicas keep their one set of admission windows (`gateway.window_storage`
    unset on the kubernetes target). Windows only: no persistence, a memory cap, evicting the oldest windows."""

    image: str = REDIS_IMAGE
    max_memory_mb: int = Field(default=128, ge=16, le=65536)

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        if not PINNED_IMAGE.match(image):
            raise ValueError(f"{image!r} is not pinned by digest (REPO[:TAG]@sha256:<64 hex>)")
        return image


class ClusterGateway(Strict):
    """The gateway in the cluster: replicas of the code-location image running `ai-platform serve --states-from`."""

    image: str | None = None  # the code-location image (deploy/docker/code-location.Dockerfile), pinned by digest
    replicas: int = Field(default=2, ge=2)  # two at least: a PodDisruptionBudget keeps one while nodes drain
    max_replicas: int = Field(default=8, ge=2)
    cpu_utilization: int = Field(default=70, ge=10, le=100)  # the HPA's target, percent of the CPU request
    # The gateway's own registry login, pull-only (AI_PLATFORM_REGISTRY_USERNAME and _PASSWORD, or _TOKEN): it
    # reads the rollouts and prompt bundles kept there and pushes nothing, so it never holds the pipeline's
    # push credentials (`kubernetes.registry_secret`). Unset: the registry needs no login to read.
    registry_secret: str | None = Field(default=None, pattern=K8S_NAME)
    # The Secret holding the gateway's hashed API keys (key `keys.json`, `ai-platform keys create`), mounted
    # as a directory, so a rotated key reaches every replica without a restart
    keys_secret: str = Field(default="ai-platform-gateway-keys", pattern=K8S_NAME)


class Kubernetes(Strict):
    """The cluster's names: the namespace every object lives in, and every Secret, claim and account a pod refers
    to (the operator creates them; docs/kubernetes.md says how). No other place names one."""

    namespace: str = Field(default="ai-platform", pattern=MODEL_NAME)  # a DNS label
    gateway: ClusterGateway = Field(default_factory=ClusterGateway)
    # The Secret whose key AI_PLATFORM_VLLM_API_KEY vLLM requires (`--api-key`); the gateway and the run pods
    # send it (their env carries the same Secret), so nothing else in the cluster can call vLLM
    vllm_api_key_secret: str = Field(default="ai-platform-vllm", pattern=K8S_NAME)
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)
    monitoring: Monitoring = Field(default_factory=Monitoring)
    redis: ClusterRedis = Field(default_factory=ClusterRedis)
    gpu: GpuPod = Field(default_factory=GpuPod)
    service_account: str | None = Field(default=None, pattern=K8S_NAME)  # the pods' ServiceAccount
    # With `storage.artifact_store: folder` only: a ReadWriteMany claim holding the platform
    # home, mounted at the same path in workload pods, so a GPU pod reads and writes the
    # artifacts the step sees. With the registry store no pod needs another's disk.
    home_claim: str | None = Field(default=None, pattern=K8S_NAME)
    # A Secret with AI_PLATFORM_REGISTRY_USERNAME and _PASSWORD (or _TOKEN), given to workload
    # pods as environment: they fetch their inputs from the registry and push their output.
    registry_secret: str | None = Field(default=None, pattern=K8S_NAME)
    # `kubernetes.io/dockerconfigjson` Secrets (`kubectl create secret docker-registry`) the kubelet pulls
    # private images with: on every pod that runs or mounts one (vLLM's model image volume, the canary, the
    # gateway, the quantize pod, the step pods). Empty: every image is public, or the nodes can pull them.
    image_pull_secrets: list[str] = Field(default_factory=list)
    # A Secret with PGPASSWORD for the DuckLake catalog (storage.warehouse), for the pods that use the warehouse
    lake_secret: str | None = Field(default=None, pattern=K8S_NAME)
    # A ReadWriteMany PersistentVolumeClaim holding the lake's data files, mounted at storage.warehouse_data in
    # every pod that reads or writes the warehouse (step pods, the gateway); required when that is a path
    lake_claim: str | None = Field(default=None, pattern=K8S_NAME)
    # The ConfigMap of the pipeline's environment (AI_PLATFORM_REPO, AI_PLATFORM_HOME, AI_PLATFORM_BRANCH) that
    # the Dagster run pods and the kit's operator pods (a rollback's Job, the reap CronJob) take. Not
    # `<release>-pipeline-env`: the Dagster chart makes that one itself (`dagster-pipeline-env` for release `dagster`)
    pipeline_env_config_map: str = Field(default="ai-platform-pipeline-env", pattern=K8S_NAME)
    # A Secret with git's own configuration as environment (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n:
    # e.g. `http.https://git.example.com/.extraHeader` = `Authorization: Bearer <token>`), for the pods that fetch
    # a private platform repo: the code location, the run pods, the kit's operator pods. Unset: a public repo
    git_secret: str | None = Field(default=None, pattern=K8S_NAME)

    @field_validator("image_pull_secrets")
    @classmethod
    def _secret_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.match(K8S_NAME, name):
                raise ValueError(
                    f"{name!r} is not a Secret name (a DNS subdomain: lowercase letters, digits, '-', '.')"
                )
        return names


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
    # replicas that share them (any storage URI of the `limits` library). On the kubernetes target, unset means
    # the kit's Redis (`kubernetes.redis`), and memory:// is refused: each replica would admit the whole budget.
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


REDIS_SERVICE = "ai-platform-redis"  # the kit's Redis Service (rollout/redis_kit.py)


def shared_window(config: PlatformConfig) -> str:
    """The admission windows' storage of the cluster's gateway replicas: platform.yaml's `gateway.window_storage`
    where it names one, else the kit's Redis; memory:// (one window per replica) is refused."""
    gateway = config.gateway
    if "window_storage" not in gateway.model_fields_set:
        # bounded waits: a Redis that stops answering (a node gone) costs a request 0.5 s before the replica
        # admits from its own windows (serving/gateway/admission.py), not the kernel's TCP timeouts
        host = service_host(REDIS_SERVICE, config.kubernetes.namespace)
        return f"redis://{host}:6379?socket_timeout=0.5&socket_connect_timeout=0.5"
    if gateway.window_storage.startswith("memory://"):
        raise ValueError(
            f"gateway.window_storage: {gateway.window_storage} keeps one admission window per gateway process, and"
            f" the cluster runs {config.kubernetes.gateway.replicas} or more replicas: together they would admit"
            " that many times the budget. Leave it unset (the kit's Redis) or name a redis://HOST:PORT"
        )
    return gateway.window_storage


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
    Retry-After. A request heavier than one key's share even at `degrade_max_tokens` can never
    be admitted: it gets a 413 naming the limit, never a 429. `max_tokens` is what a request
    that names none gets.
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
    """One canary gate: absolute (`min`/`max`) or relative to the champion (`max_drop`/`max_rise`, a
    non-inferiority margin), decided on the bound of a one-sided interval at `confidence` (evaluation/gates.py)."""

    metric: str
    min: float | None = None
    max: float | None = None
    max_drop: float | None = None
    max_rise: float | None = None
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)

    @model_validator(mode="after")
    def _one_bound(self) -> Gate:
        bounds = [b for b in ("min", "max", "max_drop", "max_rise") if getattr(self, b) is not None]
        if len(bounds) != 1:
            raise ValueError(f"a gate takes exactly one of min, max, max_drop, max_rise (got {bounds or 'none'})")
        return self


class Canary(Strict):
    evals: list[str] = Field(default_factory=list, min_length=1)
    concurrency: int = Field(default=4, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)  # the longest silence of a case's streamed reply, per attempt
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


class LeakGuard(Strict):
    action: Literal["block", "log"] = "log"
    # a run of this many consecutive tokens (words; CJK characters) of the compiled system prompt is a leak
    min_tokens: int = Field(default=8, ge=4, le=64)


class Guards(Strict):
    """What the gateway does when a guard fires on this model's traffic; every action is an audit row.

    `pii`: validated PII in a reply is withheld (`block`, the reply says why), replaced by
    `[PII:kind]` (`mask`), or only recorded (`log`). `injection`: an input scoring at or over
    the threshold is refused (`block`) or recorded (`log`). `store_inputs`: what
    `generations.input` keeps: the input as it came (`raw`), with PII masked (`masked`), or
    nothing (`none`). The defaults are the reference article's (§5.2). `leak`: a prompt run's
    reply that repeats `min_tokens` or more consecutive tokens of its compiled system prompt
    (detectors/leak.py) is recorded (`log`, the default) or withheld as a PII block is (`block`).
    """

    pii: Literal["block", "mask", "log"] = "block"
    injection: InjectionGuard = InjectionGuard()  # frozen: one shared default is safe
    leak: LeakGuard = LeakGuard()
    store_inputs: Literal["raw", "masked", "none"] = "masked"
    # Whose national phone formats the PII guard reads (ISO 3166 codes libphonenumber knows); `+CC` numbers
    # are found for every region whatever this lists.
    phone_regions: tuple[str, ...] = Field(default=("CN", "US", "GB", "DE", "FR", "JP"), min_length=1)

    @field_validator("phone_regions", mode="before")
    @classmethod
    def _known_regions(cls, value: object) -> object:
        if not isinstance(value, list | tuple):
            return value
        import phonenumbers  # only when a spec names regions: config stays cheap to import

        regions = tuple(str(v).upper() for v in value)
        unknown = [r for r in regions if r not in phonenumbers.SUPPORTED_REGIONS]
        if unknown:
            raise ValueError(f"not a region libphonenumber knows (ISO 3166 alpha-2): {', '.join(unknown)}")
        return regions


class Trust(Strict):
    """When a trust model trained on this model's labels may become its champion (the blocking checks of
    `trust_model`): enough labels, a holdout AUC above the floor and above the best single feature's, and a
    holdout calibration error (ECE, 10 bins) under the bound. And its review threshold (`trust.threshold`):
    the highest that flags at most `review_budget` of the holdout's replies, with an upper bound at
    `miss_confidence` on the miss rate among the replies it leaves unflagged."""

    min_labels: int = Field(default=20, ge=10)
    min_auc: float = Field(default=0.6, ge=0.5, le=1.0)
    max_ece: float = Field(default=0.1, gt=0.0, le=1.0)
    # The share of replies flagged for review, and the confidence of the bound on the misses the rest leave.
    review_budget: float = Field(default=0.15, gt=0.0, le=1.0, strict=True, allow_inf_nan=False)
    miss_confidence: float = Field(default=0.9, gt=0.5, lt=1.0, strict=True, allow_inf_nan=False)

    @property
    def review(self) -> tuple[float, float]:
        """(review_budget, miss_confidence): what the review threshold is chosen for."""
        return self.review_budget, self.miss_confidence


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

    @field_validator("name")
    @classmethod
    def _object_names_fit(cls, name: str) -> str:
        """Every object name the model's manifests make is a valid DNS-1035 label (`MODEL_OBJECT_SUFFIXES`)."""
        if not DNS_1035.match(name):
            raise ValueError(f"{name!r} names Kubernetes Services, whose names must start with a letter (DNS-1035)")
        longest = max((name + suffix for suffix in MODEL_OBJECT_SUFFIXES), key=len)
        if len(longest) > OBJECT_NAME_MAX:
            raise ValueError(
                f"makes the Kubernetes object name {longest!r} (a canary's Service), {len(longest)} characters, over"
                f" the {OBJECT_NAME_MAX} a Service name may have: at most {longest_model_name()} characters"
            )
        return name


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
