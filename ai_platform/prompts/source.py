"""A .prompt file's text with positions, and the error types of the language.

Every error of the compiler is a `PromptSourceError` whose message is
`path:line:col: message`: line and column are 1-based, the column counts
characters (code points), not bytes. Each broken rule has its own type, the
way safetensors names each header rule.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ai_platform.errors import EncodingError, PromptSourceError

BOM = b"\xef\xbb\xbf"


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
