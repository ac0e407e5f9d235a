"""JSON values inside a .prompt file, parsed strictly and with the position of every value.

The standard library's decoder accepts NaN, duplicate keys and gives no
positions below the top; the language needs all three rules and the positions
(a schema error deep in `output_schema` must point at its own line). So this is
a small recursive-descent reader of RFC 8259 JSON that records, for each value,
the offset where it starts (`Positions`, keyed by the path to the value) and,
for each object member, where its key starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ai_platform.errors import DuplicateKeyError, PromptSyntaxError
from ai_platform.prompts.source import Source

Path = tuple[str | int, ...]
MAX_DEPTH = 64  # deeper than any real schema; keeps hostile input from exhausting the stack
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
WHITESPACE = " \t\r\n"


@dataclass
class Positions:
    values: dict[Path, int] = field(default_factory=dict)
    keys: dict[Path, int] = field(default_factory=dict)

    def of(self, path: Path) -> int:
        """Offset of the value at `path`, or of its nearest recorded ancestor."""
        while path not in self.values and path:
            path = path[:-1]
        return self.values.get(path, 0)


class JsonReader:
    def __init__(self, source: Source, positions: Positions) -> None:
        self.src = source
        self.text = source.text
        self.pos = positions

    def fail(self, offset: int, message: str) -> PromptSyntaxError:
        return self.src.error(PromptSyntaxError, offset, message)  # type: ignore[return-value]

    def skip(self, i: int) -> int:
        text = self.text
        while i < len(text):
            if text[i] in WHITESPACE:
                i += 1
            elif text.startswith("//", i) or text.startswith("/*", i):
                raise self.fail(i, "comments are not allowed inside JSON values")
            else:
                return i
        return i

    def value(self, i: int, path: Path, depth: int = 0) -> tuple[Any, int]:
        """(value, offset after it) for the JSON value starting at `i`."""
        if depth > MAX_DEPTH:
            raise self.fail(i, f"JSON nested deeper than {MAX_DEPTH} levels")
        self.pos.values[path] = i
        text = self.text
        ch = text[i] if i < len(text) else ""
        if ch == "{":
            return self._object(i, path, depth)
        if ch == "[":
            return self._array(i, path, depth)
        if ch == '"':
            return self.string(i)
        for word, literal in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, i):
                return literal, i + len(word)
        match = NUMBER.match(text, i)
        if match and match.end() > i:
            return self._number(match.group(), i), match.end()
        got = repr(ch) if ch else "end of file"
        raise self.fail(i, f"expected a JSON value, got {got}")

    def _number(self, literal: str, i: int) -> int | float:
        try:
            if not any(c in literal for c in ".eE"):
                return int(literal)
            number = float(literal)
        except ValueError:  # over Python's int digit limit
            raise self.fail(i, "number too long") from None
        if number in (float("inf"), float("-inf")):
            raise self.fail(i, f"number out of range: {literal}")
        return number

    def _object(self, start: int, path: Path, depth: int) -> tuple[dict[str, Any], int]:
        result: dict[str, Any] = {}
        i = self.skip(start + 1)
        if self.text.startswith("}", i):
            return result, i + 1
        while True:
            if not self.text.startswith('"', i):
                got = repr(self.text[i]) if i < len(self.text) else "end of file"
                raise self.fail(i, f"expected a string key, got {got}")
            key, after = self.string(i)
            if key in result:
                line, col = self.src.position(self.pos.keys[(*path, key)])
                raise self.src.error(DuplicateKeyError, i, f'duplicate key "{key}" (first at {line}:{col})')
            self.pos.keys[(*path, key)] = i
            i = self.skip(after)
            if not self.text.startswith(":", i):
                raise self.fail(i, f'expected ":" after key "{key}"')
            result[key], i = self.value(self.skip(i + 1), (*path, key), depth + 1)
            i = self.skip(i)
            if self.text.startswith("}", i):
                return result, i + 1
            if not self.text.startswith(",", i):
                raise self.fail(i, 'expected "," or "}" in object')
            comma, i = i, self.skip(i + 1)
            if self.text.startswith("}", i):
                raise self.fail(comma, "trailing comma")

    def _array(self, start: int, path: Path, depth: int) -> tuple[list[Any], int]:
        result: list[Any] = []
        i = self.skip(start + 1)
        if self.text.startswith("]", i):
            return result, i + 1
        while True:
            item, i = self.value(i, (*path, len(result)), depth + 1)
            result.append(item)
            i = self.skip(i)
            if self.text.startswith("]", i):
                return result, i + 1
            if not self.text.startswith(",", i):
                raise self.fail(i, 'expected "," or "]" in array')
            comma, i = i, self.skip(i + 1)
            if self.text.startswith("]", i):
                raise self.fail(comma, "trailing comma")

    def string(self, start: int) -> tuple[str, int]:
        """A JSON string starting at the quote at `start`; (value, offset after the closing quote)."""
        text, i = self.text, start + 1
        out: list[str] = []
        while True:
            if i >= len(text):
                raise self.fail(start, "unterminated string")
            ch = text[i]
            if ch == '"':
                return "".join(out), i + 1
            if ch in "\r\n":
                raise self.fail(start, 'unterminated string (a JSON string cannot span lines; use """)')
            if ch < " ":
                raise self.fail(i, f"control character U+{ord(ch):04X} in string; escape it")
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            esc = text[i + 1 : i + 2]
            if esc in ESCAPES:
                out.append(ESCAPES[esc])
                i += 2
            elif esc == "u":
                code, i = self._unicode_escape(i)
                out.append(code)
            else:
                raise self.fail(i, f"invalid escape \\{esc}" if esc else "unterminated string")

    def _unicode_escape(self, i: int) -> tuple[str, int]:
        def hex4(at: int) -> int:
            digits = self.text[at + 2 : at + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise self.fail(at, "invalid \\u escape: expected four hex digits")
            return int(digits, 16)

        high = hex4(i)
        if 0xDC00 <= high <= 0xDFFF:
            raise self.fail(i, "lone low surrogate in \\u escape")
        if 0xD800 <= high <= 0xDBFF:
            if not self.text.startswith("\\u", i + 6) or not 0xDC00 <= (low := hex4(i + 6)) <= 0xDFFF:
                raise self.fail(i, "lone high surrogate in \\u escape")
            return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), i + 12
        return chr(high), i + 6

    def string_offsets(self, start: int) -> list[int]:
        """The source offset of each character of the (valid) string literal at `start`."""
        offsets, i = [], start + 1
        while self.text[i] != '"':
            offsets.append(i)
            if self.text[i] != "\\":
                i += 1
            elif self.text[i + 1] != "u":
                i += 2
            else:
                i += 12 if 0xD800 <= int(self.text[i + 2 : i + 6], 16) <= 0xDBFF else 6
        return offsets
