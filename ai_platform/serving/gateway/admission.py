"""Weighted admission control (the reference article's §4.3): a moving window of request weights.

A request's weight estimates the model server's work for it: its input tokens,
plus `DECODE_COST` times the tokens it may generate (`max_tokens`), because each
generated token is a sequential decode step while the whole input is one batched
prefill. Weights are counted in units of `UNIT` tokens (the window keeps one entry
per unit). The window is the `limits` library's moving window, in memory for one
gateway process or on Redis for replicas that share it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from limits import RateLimitItemPerSecond
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from ai_platform.config import Admission

DECODE_COST = 4  # one generated token ~ four input tokens of model-server time
UNIT = 256  # tokens per weight unit
BYTES_PER_TOKEN = 3  # UTF-8 bytes per token, a conservative estimate without the model's tokenizer


def weight(input_bytes: int, max_tokens: int) -> int:
    """The weight of a request with `input_bytes` of input text that may generate `max_tokens`."""
    tokens = math.ceil(input_bytes / BYTES_PER_TOKEN) + DECODE_COST * max_tokens
    return max(1, math.ceil(tokens / UNIT))


@dataclass(frozen=True)
class Decision:
    kind: str  # admitted | degraded | rejected
    weight: int
    max_tokens: int
    retry_after_s: int = 0  # for a rejection: when the window will have room again
    reason: str = ""


class Windows:
    """The admission windows of every model and key, in one storage (memory:// or redis://)."""

    def __init__(self, storage: str = "memory://") -> None:
        self.storage_uri = storage
        self.limiter = MovingWindowRateLimiter(storage_from_string(storage))

    def admit(self, model: str, key: str, policy: Admission, input_bytes: int, max_tokens: int) -> Decision:
        """Admit at `max_tokens`, else degrade to the policy's smaller max_tokens, else reject."""
        attempts = [max_tokens]
        if policy.degrade_max_tokens is not None and policy.degrade_max_tokens < max_tokens:
            attempts.append(policy.degrade_max_tokens)
        model_window = RateLimitItemPerSecond(policy.budget, policy.window_s)
        key_window = RateLimitItemPerSecond(max(1, int(policy.budget * policy.key_share)), policy.window_s)
        key_full = False
        for tokens in attempts:
            cost = weight(input_bytes, tokens)
            if not self.limiter.test(key_window, model, key, cost=cost):
                key_full = True
                continue
            key_full = False
            if not self.limiter.test(model_window, model, cost=cost):
                continue
            # test-then-hit: a concurrent request may take the room in between; hit() says so.
            if not self.limiter.hit(model_window, model, cost=cost):
                continue
            if not self.limiter.hit(key_window, model, key, cost=cost):
                continue
            return Decision("admitted" if tokens == max_tokens else "degraded", cost, tokens)
        cost = weight(input_bytes, attempts[-1])
        if key_full:
            reason = (
                f"this key ({key}) has used its share of {model}'s admission budget"
                f" ({key_window.amount} of {policy.budget} per {policy.window_s} s)"
            )
        else:
            reason = f"{model} is at its admission budget ({policy.budget} per {policy.window_s} s)"
        return Decision("rejected", cost, attempts[-1], self._retry_after(model, key, model_window, key_window), reason)

    def _retry_after(
        self, model: str, key: str, model_window: RateLimitItemPerSecond, key_window: RateLimitItemPerSecond
    ) -> int:
        now = time.time()
        resets = [
            self.limiter.get_window_stats(model_window, model).reset_time,
            self.limiter.get_window_stats(key_window, model, key).reset_time,
        ]
        return max(1, math.ceil(max(resets) - now))
