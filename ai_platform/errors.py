"""The one exception tree. Every expected failure is a `PlatformError`, and every one is defined here,
so a reader sees every way the platform can refuse in one file.

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
    """A manifest or blob does not hash to the digest asked for, or the registry names another digest for it."""


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


class TrustModelError(PlatformError):
    """A trust model file is unreadable, of another format, or there is too little data to train one."""


class RequestBodyError(PlatformError):
    """A request body the gateway refuses (400) before anything reads it: not JSON, or a field of the wrong shape.

    `param` names the field, as OpenAI's error body does."""

    def __init__(self, message: str, param: str | None = None) -> None:
        self.param = param
        super().__init__(message)


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
    request was at fault (vLLM's message passed on), 502 when the server failed or could not be reached."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class UpstreamStatusError(ServingError):
    """A model server answered an eval request with an HTTP status other than 200; `status` is that status."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text}")
        self.status = status
