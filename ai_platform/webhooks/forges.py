"""Push webhooks as GitHub, GitLab and Gitea/Forgejo send them: who signed the body, and what it pushed.

Each forge authenticates a delivery its own way, over the exact bytes received, before a byte is parsed:

  GitHub          `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`, delivery id `X-GitHub-Delivery`
  Gitea, Forgejo  `X-Gitea-Signature` / `X-Forgejo-Signature: <hex HMAC-SHA256(secret, body)>` (Forgejo sends
                  both; its own header is the one checked when present), delivery id `X-Gitea-Delivery` /
                  `X-Forgejo-Delivery`
  GitLab          `X-Gitlab-Token: <the secret token itself>`, delivery id `Idempotency-Key` (GitLab 17.4+, the
                  same on a retry), else `X-Gitlab-Event-UUID`

Every comparison is constant-time (`hmac.compare_digest`). None of them signs a timestamp, so a captured
delivery verifies again later: the receiver refuses a delivery id it has taken before (`receiver.Deliveries`).
A push names its branch in `ref` (`refs/heads/<branch>`) and the new head in `after`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ai_platform.errors import BadSignatureError, UnsignedWebhookError, WebhookPayloadError

Forge = Literal["github", "gitlab", "gitea"]
FORGES: tuple[Forge, ...] = ("github", "gitlab", "gitea")
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # SHA-1 or SHA-256 object names
ZERO = "0" * 40  # `after` of a push that deletes the branch


@dataclass(frozen=True)
class Push:
    forge: Forge
    delivery: str  # the forge's delivery id
    event: str  # the forge's event name (push, Push Hook, ping, ...)
    ref: str | None  # refs/heads/<branch>; None for an event that is not a push (ping)
    after: str | None  # the branch's new head

    def branch(self) -> str | None:
        return self.ref.removeprefix("refs/heads/") if self.ref and self.ref.startswith("refs/heads/") else None


def sign(secret: bytes, body: bytes) -> str:
    """The hex HMAC-SHA256 of `body` that GitHub, Gitea and Forgejo send (GitHub prefixes `sha256=`)."""
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name.lower())
    return value.strip() if value is not None else None


def verify(forge: Forge, headers: Mapping[str, str], body: bytes, secret: bytes) -> None:
    """Raise unless `body` carries `forge`'s proof of `secret`. `headers` has lower-case names."""
    if forge == "gitlab":
        token = _header(headers, "X-Gitlab-Token")
        if not token:
            raise UnsignedWebhookError("no X-Gitlab-Token header")
        if not hmac.compare_digest(token.encode(), secret):
            raise BadSignatureError("X-Gitlab-Token does not match the receiver's secret")
        return
    if forge == "github":
        name, given = "X-Hub-Signature-256", _header(headers, "X-Hub-Signature-256")
        if given is not None and not given.startswith("sha256="):
            raise BadSignatureError("X-Hub-Signature-256 is not sha256=<hex>")
        given = given.removeprefix("sha256=") if given else None
    else:  # Forgejo's own header wins: a bad one is not rescued by a good Gitea one
        forgejo = _header(headers, "X-Forgejo-Signature")
        name, given = (
            ("X-Forgejo-Signature", forgejo)
            if forgejo is not None
            else ("X-Gitea-Signature", _header(headers, "X-Gitea-Signature"))
        )
    if not given:
        raise UnsignedWebhookError(f"no {name} header")
    if not hmac.compare_digest(given.lower().encode(), sign(secret, body).encode()):
        raise BadSignatureError(f"{name} does not match the body signed with the receiver's secret")


def delivery_id(forge: Forge, headers: Mapping[str, str]) -> str:
    names = {
        "github": ("X-GitHub-Delivery",),
        "gitlab": ("Idempotency-Key", "X-Gitlab-Event-UUID"),
        "gitea": ("X-Forgejo-Delivery", "X-Gitea-Delivery"),
    }[forge]
    for name in names:
        value = _header(headers, name)
        if value:
            if len(value) > 200:
                raise WebhookPayloadError(f"{name} is {len(value)} characters long")
            return value
    raise WebhookPayloadError(f"no delivery id ({' or '.join(names)}): a replay could not be told from a push")


def event_name(forge: Forge, headers: Mapping[str, str]) -> str:
    names = {
        "github": ("X-GitHub-Event",),
        "gitlab": ("X-Gitlab-Event",),
        "gitea": ("X-Forgejo-Event", "X-Gitea-Event"),
    }[forge]
    for name in names:
        value = _header(headers, name)
        if value:
            return value
    return "push"  # the payload decides below: a body with ref and after is a push


def parse(forge: Forge, headers: Mapping[str, str], body: bytes, secret: bytes) -> Push:
    """Verify, then read: the delivery as a `Push` (`ref` None for an event that is not a push)."""
    verify(forge, headers, body, secret)
    delivery = delivery_id(forge, headers)
    event = event_name(forge, headers)
    if event.lower() == "ping":  # GitHub's and Gitea's hello when a hook is made: signed, nothing pushed
        return Push(forge, delivery, event, None, None)
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WebhookPayloadError(f"the body is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise WebhookPayloadError("the body is not a JSON object")
    # GitLab names a push `Push Hook`, or `System Hook` from an instance-wide hook: its object_kind says push
    pushed = event.lower() in ("push", "push hook") or payload.get("object_kind") == "push"
    if not pushed:
        return Push(forge, delivery, event, None, None)
    ref, after = payload.get("ref"), payload.get("after")
    if not isinstance(ref, str) or not ref.startswith("refs/"):
        raise WebhookPayloadError(f"a push without a ref: {ref!r}")
    if not isinstance(after, str) or not _SHA.match(after):
        raise WebhookPayloadError(f"a push whose `after` is not a commit id: {str(after)[:80]!r}")
    return Push(forge, delivery, event, ref, after)
