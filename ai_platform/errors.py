"""The one exception tree. Every expected failure is a `PlatformError`.

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


class WarehouseError(PlatformError):
    """The DuckDB warehouse cannot be opened, migrated or written."""


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


class PromptError(PlatformError):
    """A .prompt file or a schema notation is invalid; message is `path:line:col: ...`."""


class ServingError(PlatformError):
    """vLLM could not be started, did not become healthy, or failed a request."""


class QuantizationError(PlatformError):
    """Quantization could not run: bad calibration data, inputs that fail re-verification, a crashed workload."""


class FeedbackError(PlatformError):
    """A label file cannot be ingested as a whole: unreadable, undeclared encoding, no usable header."""
