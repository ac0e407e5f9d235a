"""Rollout and rollback notifications to a webhook (Slack's incoming-webhook body: {"text": ...}).

The URL comes from `AI_PLATFORM_ROLLOUT_WEBHOOK` and is a secret (a Slack
webhook URL is its own credential): it is never logged, not even on failure.
A notification that cannot be sent never fails the rollout.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import httpx

ENV = "AI_PLATFORM_ROLLOUT_WEBHOOK"


def notify(text: str, log: Callable[[str], None] = print) -> bool:
    url = os.environ.get(ENV)
    if not url:
        return False
    try:
        httpx.post(url, json={"text": text}, timeout=10).raise_for_status()
    except httpx.HTTPStatusError as exc:
        log(f"rollout notification not delivered: the webhook answered HTTP {exc.response.status_code}")
        return False
    except httpx.HTTPError as exc:
        log(f"rollout notification not delivered: {type(exc).__name__}")  # no URL: it is the credential
        return False
    return True
