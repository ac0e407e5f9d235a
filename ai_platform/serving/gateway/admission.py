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

import logging
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from limits import RateLimitItem, RateLimitItemPerSecond, WindowStats
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter
from redis.exceptions import RedisError

from ai_platform.config import Admission

LOG = logging.getLogger(__name__)
DECODE_COST = 4  # one generated token ~ four input tokens of model-server time
UNIT = 256  # tokens per weight unit
BYTES_PER_TOKEN = 3  # UTF-8 bytes per token, a conservative estimate without the model's tokenizer


def weight(input_bytes: int, max_tokens: int) -> int:
    """The weight of a request with `input_bytes` of input text that may generate `max_tokens`."""
    tokens = math.ceil(input_bytes / BYTES_PER_TOKEN) + DECODE_COST * max_tokens
    return max(1, math.ceil(tokens / UNIT))


def key_limit(policy: Admission) -> int:
    """The most weight one key may hold in a window: its share of the model's budget (at least one unit). No
    request weighing more can ever be admitted, whatever the window holds."""
    return max(1, int(policy.budget * policy.key_share))


def too_large(policy: Admission, input_bytes: int, max_tokens: int) -> Decision | None:
    """A `too_large` decision for a request that no window could ever admit: even at the smallest max_tokens
    admission would try (`degrade_max_tokens`), it weighs more than its key may hold (`key_limit`). None for
    any other request. Retrying it can never help, so it is refused at once and told why (not a 429): this
    costs nothing, and is decided before the guards read the input."""
    smallest = min(max_tokens, policy.degrade_max_tokens or max_tokens)
    cost, limit = weight(input_bytes, smallest), key_limit(policy)
    if cost <= limit:
        return None
    reason = (
        f"the request weighs {cost} units (~{math.ceil(input_bytes / BYTES_PER_TOKEN)} input tokens"
        f" + {DECODE_COST} x max_tokens {smallest}, in units of {UNIT} tokens); one key may be admitted at most"
        f" {limit} units per {policy.window_s} s (serving.admission: budget {policy.budget} x key_share"
        f" {policy.key_share}), so it can never be admitted"
    )
    return Decision("too_large", cost, smallest, reason=reason)


@dataclass(frozen=True)
class Decision:
    kind: str  # admitted | degraded | rejected | too_large (never admissible: see too_large)
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
        self.keys: dict[tuple[RateLimitItem, tuple[str, ...]], str] = {}  # item.key_for(*identifiers), built once
        self.lock = threading.Lock()

    def _window(
        self, item: RateLimitItem, identifiers: tuple[str, ...], now: float
    ) -> tuple[deque[tuple[float, int]], list[int]]:
        key = self.keys.get((item, identifiers))
        if key is None:
            key = self.keys[(item, identifiers)] = item.key_for(*identifiers)
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
    """The admission windows of every model and key, in one storage (memory:// or redis://).

    A shared store (Redis) that cannot be reached is no outage: each request it fails is admitted from this
    process's own windows (`LocalWindows`: the budget per replica rather than per cluster, looser, never a refusal
    of everything), and for `retry_shared_s` the store is not asked again, so a dead Redis costs one connection
    attempt per interval, not one per request. Each decision taken on the replica's own windows meanwhile is told
    to `on_fallback` (a metric); the log says it once per failed attempt."""

    def __init__(
        self,
        storage: str = "memory://",
        *,
        on_fallback: Callable[[str], None] | None = None,
        retry_shared_s: float = 5.0,
    ) -> None:
        self.storage_uri = storage
        self.local = LocalWindows()
        self.shared = None if storage == "memory://" else MovingWindowRateLimiter(storage_from_string(storage))
        self.on_fallback, self.retry_shared_s = on_fallback, retry_shared_s
        self.down_until = 0.0  # while the shared store is taken for down: monotonic time
        self.items: dict[tuple[int, float, int], tuple[RateLimitItemPerSecond, RateLimitItemPerSecond]] = {}

    @property
    def shared_down(self) -> bool:
        return self.shared is not None and time.monotonic() < self.down_until

    @property
    def limiter(self) -> LocalWindows | MovingWindowRateLimiter:
        """The windows asked now: the shared store's, unless there is none or it is taken for down."""
        return self.local if self.shared is None or self.shared_down else self.shared

    def admit(self, model: str, key: str, policy: Admission, input_bytes: int, max_tokens: int) -> Decision:
        """Admit at `max_tokens`, else degrade to the policy's smaller max_tokens, else reject (`decide`), on the
        shared windows; where they cannot be reached, on this process's own (the class docstring)."""
        limiter = self.limiter
        if limiter is self.local:
            if self.shared is not None and self.on_fallback is not None:  # the shared store is taken for down
                self.on_fallback("the shared windows were unreachable moments ago")
            return self.decide(limiter, model, key, policy, input_bytes, max_tokens)
        try:
            return self.decide(limiter, model, key, policy, input_bytes, max_tokens)
        except (RedisError, StorageError) as exc:
            self.down_until = time.monotonic() + self.retry_shared_s
            reason = f"{type(exc).__name__}: {exc}"
            LOG.warning("admission windows at %s unreachable (%s); this replica's own for now", self.where, reason)
            if self.on_fallback is not None:
                self.on_fallback(reason)
            return self.decide(self.local, model, key, policy, input_bytes, max_tokens)

    @property
    def where(self) -> str:
        """The storage URI fit for a log line (a password in it masked)."""
        return re.sub(r"(://)[^/@]*@", r"\1***@", self.storage_uri)

    def decide(
        self,
        limiter: LocalWindows | MovingWindowRateLimiter,
        model: str,
        key: str,
        policy: Admission,
        input_bytes: int,
        max_tokens: int,
    ) -> Decision:
        """Admit at `max_tokens`, else degrade to the policy's smaller max_tokens, else reject, on `limiter`."""
        attempts = [max_tokens]
        if policy.degrade_max_tokens is not None and policy.degrade_max_tokens < max_tokens:
            attempts.append(policy.degrade_max_tokens)
        model_window, key_window = self._items(policy)
        key_full = False
        for tokens in attempts:
            cost = weight(input_bytes, tokens)
            if not limiter.test(key_window, model, key, cost=cost):
                key_full = True
                continue
            key_full = False
            if not limiter.test(model_window, model, cost=cost):
                continue
            # test-then-hit: a concurrent request may take the room in between; hit() says so.
            if not limiter.hit(model_window, model, cost=cost):
                continue
            if not limiter.hit(key_window, model, key, cost=cost):
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
        return Decision(
            "rejected", cost, attempts[-1], self._retry_after(limiter, model, key, model_window, key_window), reason
        )

    def _items(self, policy: Admission) -> tuple[RateLimitItemPerSecond, RateLimitItemPerSecond]:
        """The model's window and a key's of `policy`, built once per policy."""
        found = self.items.get((policy.budget, policy.key_share, policy.window_s))
        if found is None:
            found = (
                RateLimitItemPerSecond(policy.budget, policy.window_s),
                RateLimitItemPerSecond(key_limit(policy), policy.window_s),
            )
            self.items[(policy.budget, policy.key_share, policy.window_s)] = found
        return found

    def _retry_after(
        self,
        limiter: LocalWindows | MovingWindowRateLimiter,
        model: str,
        key: str,
        model_window: RateLimitItemPerSecond,
        key_window: RateLimitItemPerSecond,
    ) -> int:
        now = time.time()
        resets = [
            limiter.get_window_stats(model_window, model).reset_time,
            limiter.get_window_stats(key_window, model, key).reset_time,
        ]
        return max(1, math.ceil(max(resets) - now))
