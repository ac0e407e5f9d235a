"""Request bodies from outside, parsed and checked before the gateway reads a field of them.

JSON goes through pydantic-core's parser: nesting is bounded (a deep `[[[[...` is an error, not a
RecursionError), invalid UTF-8, lone surrogates, NaN and Infinity are refused, and so is a number too large
for a float (Python would read it as inf, which no JSON encoder writes back).

An OpenAI request's fields that the gateway reads, weighs or forwards are checked for their type (anything
else is forwarded as sent, for the model server to judge): `model`; `stream`; `messages` (objects with a
string `role` and `content` a string, null, or a list of parts: strings, or objects whose `text`, `refusal`
and `thinking`, the fields vLLM reads as text, are strings); `prompt` as text (a string or a list of them:
token ids would pass the injection guard unread); and the output limits admission weighs: `max_tokens` and
`max_completion_tokens` (which vLLM prefers to `max_tokens`) at least 1, and `n` 1, since the gateway scores,
guards and logs one choice per request. `input_text` is what the injection guard then reads: every piece of
text the model server will, from the field of the route (a completion's `messages` are not its input).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails, from_json

from ai_platform.errors import RequestBodyError


def json_body(raw: bytes, expected: str = "a JSON object") -> Any:
    """The JSON value of a request body; a RequestBodyError says why it is not JSON."""
    try:
        value = from_json(raw, allow_inf_nan=False)
    except ValueError as exc:
        raise RequestBodyError(f"the body must be JSON ({expected}): {exc}") from None
    if not _finite(value):
        raise RequestBodyError(f"the body must be JSON ({expected}): a number is too large for a float")
    return value


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


class _Checked(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


TEXT_FIELDS = ("text", "refusal", "thinking")  # what vLLM reads as text in a content part (renderers/chat_utils.py)


class _Part(_Checked):
    type: str = "text"  # vLLM's default too
    text: str | None = None
    refusal: str | None = None
    thinking: str | None = None


class _Message(_Checked):
    role: str
    content: str | list[str | _Part] | None = None


class _Request(_Checked):
    model: str | None = None
    stream: bool | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: Literal[1] | None = None


class _Chat(_Request):
    messages: list[_Message] | None = None


class _Completion(_Request):
    prompt: str | list[str] | None = None


def openai_request(payload: dict[str, Any], chat: bool) -> None:
    """Refuse (RequestBodyError, naming the field) a chat or completions request the gateway cannot read safely."""
    try:
        (_Chat if chat else _Completion).model_validate(payload)
    except ValidationError as exc:
        # Of a union's alternatives, the one that got furthest names the problem best.
        first = max(exc.errors(), key=lambda e: len(e["loc"]))
        param = str(first["loc"][0]) if first["loc"] else None
        raise RequestBodyError(_describe(first), param) from None


def input_text(payload: dict[str, Any], chat: bool) -> str:
    """The text of a checked request's input that the model server reads: every message's text, or the prompt."""
    if not chat:
        prompt = payload.get("prompt")
        return "\n".join(prompt) if isinstance(prompt, list) else prompt or ""
    texts = []
    for message in payload.get("messages") or []:
        content = message.get("content")
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                texts += [part[key] for key in TEXT_FIELDS if isinstance(part.get(key), str)]
    return "\n".join(texts)


def _describe(error: ErrorDetails) -> str:
    # A union's alternative shows in the location as its type ('str', 'list[...]', '_Part'): not a field.
    field = ".".join(str(p) for p in error["loc"] if isinstance(p, int) or (p.isidentifier() and not p.startswith("_")))
    field = field.removesuffix(".str")
    shown = repr(error["input"])
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    if field == "n":
        return f"n: the gateway answers one choice per request, so n must be 1 (got {shown})"
    if field.startswith("prompt"):
        return (
            f"{field}: a prompt is text, a string or a list of strings (got {shown}); token ids would pass the"
            " injection guard unread"
        )
    message = error["msg"].removeprefix("Value error, ")
    return f"{field}: {message[:1].lower() + message[1:]} (got {shown})"
