"""A .prompt file's text with positions, and the error types of the language.

Every error of the compiler is a `PromptSourceError` whose message is
`path:line:col: message`: line and column are 1-based, the column counts
characters (code points), not bytes. Each broken rule has its own type, the
way safetensors names each header rule.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ai_platform.errors import PromptError

BOM = b"\xef\xbb\xbf"


class PromptSourceError(PromptError):
    """A rule of PROMPT_DSL.md is broken at a position of a file."""

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


@dataclass(frozen=True)
class Warning_:
    path: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: warning: {self.message}"


@dataclass
class Source:
    """Decoded text plus what it takes to turn an offset into `line:col`."""

    path: str
    text: str
    _line_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._line_starts = [0] + [i + 1 for i, ch in enumerate(self.text) if ch == "\n"]

    @classmethod
    def decode(cls, path: str, data: bytes) -> Source:
        """UTF-8 with an optional leading BOM; anything else names the first bad byte."""
        body = data[len(BOM) :] if data.startswith(BOM) else data
        try:
            return cls(path, body.decode("utf-8"))
        except UnicodeDecodeError as exc:
            good = body[: exc.start].decode("utf-8")
            line = good.count("\n") + 1
            col = len(good) - (good.rfind("\n") + 1) + 1
            offset = exc.start + (len(data) - len(body))
            raise EncodingError(path, line, col, f"invalid UTF-8 at byte offset {offset}") from None

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def error(self, kind: type[PromptSourceError], offset: int, message: str) -> PromptSourceError:
        line, col = self.position(offset)
        return kind(self.path, line, col, message)

    def warning(self, offset: int, message: str) -> Warning_:
        line, col = self.position(offset)
        return Warning_(self.path, line, col, message)
