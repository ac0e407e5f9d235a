"""The entry level of a .prompt file: `key: value` pairs, each value with its position.

    file    := (blank | comment | entry)*
    entry   := KEY ws* ":" ws* value (spaces | comment)* (newline | EOF)
    value   := '\"\"\"' ... '\"\"\"' | JSON string | JSON number | true | false | JSON object | JSON array

A triple-quoted string drops the line end right after its opening quotes and the
one right before its closing quotes, and nothing else. CRLF line ends inside it
become LF, so the text a model sees does not depend on a checkout's line-ending
setting (the version still changes: it records the source bytes' sha256).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ai_platform.errors import PromptSyntaxError
from ai_platform.prompts.jsonvalue import JsonReader, Positions
from ai_platform.prompts.source import Source

KEY_START = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
KEY_CHARS = KEY_START + "0123456789"


@dataclass
class Entry:
    key: str
    key_at: int
    value: Any
    value_at: int
    triple: bool = False
    positions: Positions = field(default_factory=Positions)  # inside a JSON object/array value
    # For string values: the text placeholders are looked for in, and where its k-th character sits.
    template: str = ""
    char_offset: Callable[[int], int] = field(default=lambda i: 0, repr=False)


def parse_entries(src: Source) -> list[Entry]:
    text, i = src.text, 0
    entries: list[Entry] = []
    while True:
        i = _skip_blank(text, i)
        if i >= len(text):
            return entries
        if text[i] not in KEY_START:
            raise src.error(PromptSyntaxError, i, f"expected a key like `user:`, got {text[i]!r}")
        key_at = i
        while i < len(text) and text[i] in KEY_CHARS:
            i += 1
        key = text[key_at:i]
        while i < len(text) and text[i] in " \t":
            i += 1
        if not text.startswith(":", i):
            raise src.error(PromptSyntaxError, i, f"expected ':' after key '{key}'")
        i = _skip_blank(text, i + 1)
        entry, i = _value(src, key, key_at, i)
        entries.append(entry)
        while i < len(text) and text[i] in " \t\r":
            i += 1
        if text.startswith("//", i):
            i = _line_end(text, i)
        if i < len(text) and text[i] != "\n":
            raise src.error(PromptSyntaxError, i, f"expected a line end after the value of '{key}'")


def _skip_blank(text: str, i: int) -> int:
    while i < len(text):
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith("//", i):
            i = _line_end(text, i)
        else:
            break
    return i


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _value(src: Source, key: str, key_at: int, i: int) -> tuple[Entry, int]:
    text = src.text
    if i >= len(text):
        raise src.error(PromptSyntaxError, i, f"expected a value after '{key}:'")
    if text.startswith('"""', i):
        return _triple(src, key, key_at, i)
    positions = Positions()
    reader = JsonReader(src, positions)
    if text[i] == '"':
        value, end = reader.string(i)
        offsets = reader.string_offsets(i)
        positions.values[()] = i  # a string schema (`output_schema: "strng"`) points at itself
        return Entry(
            key,
            key_at,
            value,
            i,
            template=value,
            positions=positions,
            char_offset=lambda k: offsets[k] if k < len(offsets) else i,
        ), end
    if text[i] in "{[-0123456789tfn":
        if text.startswith("null", i):
            raise src.error(PromptSyntaxError, i, f"null is not a value for '{key}'")
        value, end = reader.value(i, ())
        return Entry(key, key_at, value, i, positions=positions), end
    raise src.error(PromptSyntaxError, i, f"expected a value after '{key}:', got {text[i]!r}")


def _triple(src: Source, key: str, key_at: int, start: int) -> tuple[Entry, int]:
    text = src.text
    close = text.find('"""', start + 3)
    if close < 0:
        raise src.error(PromptSyntaxError, start, 'unterminated """ string')
    begin, end = start + 3, close
    for line_end in ("\r\n", "\n"):
        if text.startswith(line_end, begin):
            begin += len(line_end)
            break
    for line_end in ("\r\n", "\n"):
        if end - len(line_end) >= begin and text.startswith(line_end, end - len(line_end)):
            end -= len(line_end)
            break
    raw = text[begin:end]
    value = raw.replace("\r\n", "\n")
    return Entry(key, key_at, value, start, triple=True, template=raw, char_offset=lambda k: begin + k), close + 3
