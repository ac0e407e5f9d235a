"""Weighted admission control (the reference article's §4.3): a moving window of request weights.

A request's weight estimates the model server's work for it: its input tokens,
plus `DECODE_COST` times the tokens it may generate (`max_tokens`), because each
generated token is a sequential decode step while the whole input is one batched
prefill. Weights are counted in units of `UNIT` tokens (the window keeps one entry
per unit). The window is a moving window: on Redis (replicas that share it) the
`limits` library's; in memory (one gateway process) `LocalWindows`, the same moving
window as a deque of (time, weight) with a running total. limits' own memory storage
starts a timer thread whenever its last one has finished, i.e. on nearly every request
at a gateway's request rates (measured: ~0.45 ms of CPU and ~0.9 ms on the event loop
per admitted request), and walks the window entry by entry in Python to test it.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass

from limits import RateLimitItem, RateLimitItemPerSecond, WindowStats
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


class LocalWindows:
    """Moving windows in this process's memory, with the calls of limits' MovingWindowRateLimiter that Windows
    uses: a window admits `cost` when the weights taken within its last `expiry` seconds plus `cost` fit its
    amount. Each window is a deque of (time, cost), oldest first, and their total; the expired are dropped
    whenever the window is looked at."""

    def __init__(self) -> None:
        self.windows: dict[str, tuple[deque[tuple[float, int]], list[int]]] = {}
        self.lock = threading.Lock()

    def _window(
        self, item: RateLimitItem, identifiers: tuple[str, ...], now: float
    ) -> tuple[deque[tuple[float, int]], list[int]]:
        key = item.key_for(*identifiers)
        entries, total = self.windows.setdefault(key, (deque(), [0]))
        horizon = now - item.get_expiry()
        while entries and entries[0][0] <= horizon:
            total[0] -= entries.popleft()[1]
        if not entries:
            total[0] = 0
        return entries, total

    def test(self, item: RateLimitItem, *identifiers: str, cost: int = 1) -> bool:
        with self.lock:
            _, total = self._window(item, identifiers, time.time())
            return total[0] + cost <= item.amount

    def hit(self, item: RateLimitItem, *identifiers: str, cost: int = 1) -> bool:
        with self.lock:
            now = time.time()
            entries, total = self._window(item, identifiers, now)
            if total[0] + cost > item.amount:
                return False
            entries.append((now, cost))
            total[0] += cost
            return True

    def get_window_stats(self, item: RateLimitItem, *identifiers: str) -> WindowStats:
        """When the window's oldest weight leaves it (now, for an empty window), and the room left."""
        with self.lock:
            now = time.time()
            entries, total = self._window(item, identifiers, now)
            start = entries[0][0] if entries else now
            return WindowStats(start + item.get_expiry(), item.amount - total[0])


class Windows:
    """The admission windows of every model and key, in one storage (memory:// or redis://)."""

    def __init__(self, storage: str = "memory://") -> None:
        self.storage_uri = storage
        self.limiter: LocalWindows | MovingWindowRateLimiter = (
            LocalWindows() if storage == "memory://" else MovingWindowRateLimiter(storage_from_string(storage))
        )

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
