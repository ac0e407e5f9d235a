"""The embedded default heals itself: a live colour whose vLLM died is started again, with backoff.

`ai-platform serve` on this machine (the gateway that follows these rollout states)
runs a `Supervisor` thread. Every second it reads each model's state; a live colour
whose process is gone (its PID not running, a zombie, or now another process: its
`process_identity` changed) is started again from what the state records of it:
the same model folder, the same server settings (`serving`), the serve
environment, on a fresh port. The state then names the new process (`pid`,
`started`, `base_url`) and counts the restart (`restarts`); the gateway follows it
within a second. Meanwhile the gateway answers the model's requests with 503 and
`Retry-After` (serving/gateway/health.py). A start that fails is tried again after
1, 2, 4 ... 60 s. Each restart is logged, on the gateway's /metrics
(`ai_platform_gateway_upstream_restarts`, from the state) and behind the
`VllmRestartingRepeatedly` alert.

A state that names no model folder (written by an older rollout, or by hand) is
not the supervisor's to heal. A rollout wins every race: a state that changed while a colour was being started
again (a rollout, a rollback, `rollout stop`) is left as it is and the new process
is stopped. `rollout stop` clears the state before it stops the process, so a
stopped colour is never started again.

A cluster needs none of this: the kubelet restarts a vLLM container that dies, and
its Deployment replaces a pod.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ai_platform.config import Serving
from ai_platform.errors import ServingError
from ai_platform.logs import Log
from ai_platform.records import LiveRelease, ModelState
from ai_platform.serving.state import load, read_all, save
from ai_platform.serving.vllm import SERVE_PYTHON, VllmServer, launch, local_device, pid_alive, process_identity

Start = Callable[[str, LiveRelease], VllmServer]  # model, the colour that died -> its new server, healthy


def start_again(model: str, live: LiveRelease) -> VllmServer:
    """`live`'s vLLM started again as it was: its model folder and server settings, the serve environment."""
    if not live.model_dir:
        raise ServingError(f"{model}: the state does not say which model folder {live.color} served (an older rollout)")
    log_path = Path(live.log_path or Path(live.model_dir).parent / f"vllm-{model}-{live.color}.log")
    return launch(
        Path(live.model_dir),
        model,
        Serving.model_validate(live.serving),
        python=SERVE_PYTHON,
        device=local_device(),
        detach=True,
        log_path=log_path,
    )


def dead(live: LiveRelease) -> bool:
    """Whether a colour's process on this machine has ended (a cluster's colour, pid 0, is never ours to judge)."""
    if live.pid <= 0:
        return False
    if not pid_alive(live.pid):
        return True
    return bool(live.started) and process_identity(live.pid) != live.started


@dataclass
class Attempts:
    """The backoff of one model's restarts."""

    failures: int = 0
    next_at: float = 0.0


class Supervisor:
    def __init__(
        self,
        home: Path,
        start: Start = start_again,
        *,
        interval_s: float = 1.0,
        backoff_s: tuple[float, float] = (1.0, 60.0),
        log: Log = print,
    ) -> None:
        self.home, self.start, self.interval_s, self.backoff_s, self.log = Path(home), start, interval_s, backoff_s, log
        self.attempts: dict[str, Attempts] = {}
        self.started: list[VllmServer] = []  # the servers it started: their exit is reaped here (no zombies)
        self.stopping = threading.Event()

    def run(self) -> None:
        """Check and heal until `stopping` is set."""
        while not self.stopping.wait(self.interval_s):
            try:
                self.check()
            except Exception as exc:  # one bad pass must not end the supervision; said, then tried again
                self.log(f"supervisor: {type(exc).__name__}: {exc}")

    def thread(self) -> threading.Thread:
        found = threading.Thread(target=self.run, name="supervisor", daemon=True)
        found.start()
        return found

    def check(self) -> list[ModelState]:
        """One pass: every model whose live colour died started again (where its backoff allows); the new
        states."""
        for server in self.started:
            server.process.poll()
        self.started = [s for s in self.started if s.process.returncode is None]
        states, _ = read_all(self.home)
        healed = []
        for model, state in states.items():
            if state.live is None or not state.live.model_dir or not dead(state.live):  # no folder: not ours
                self.attempts.pop(model, None)
                continue
            attempt = self.attempts.setdefault(model, Attempts())
            if time.monotonic() < attempt.next_at:
                continue
            new = self.heal(state, attempt)
            if new is not None:
                healed.append(new)
        return healed

    def heal(self, state: ModelState, attempt: Attempts) -> ModelState | None:
        assert state.live is not None
        model, live = state.model, state.live
        self.log(f"{model}: {live.color} (pid {live.pid}) is gone; starting it again")
        with contextlib.suppress(ProcessLookupError, PermissionError):  # what is left of it (its engine process)
            os.killpg(live.pid, signal.SIGKILL)
        try:
            server = self.start(model, live)
        except Exception as exc:  # a start that fails is tried again later, never given up on
            attempt.failures += 1
            wait = min(self.backoff_s[0] * 2 ** (attempt.failures - 1), self.backoff_s[1])
            attempt.next_at = time.monotonic() + wait
            self.log(f"{model}: {live.color} did not start again ({exc}); next try in {wait:.0f} s")
            return None
        now = load(self.home, model)
        if now.live != live:  # a rollout, a rollback or a stop came first: it wins
            self.log(f"{model}: the rollout state changed meanwhile; the restarted {live.color} is stopped")
            server.stop()
            return None
        self.started.append(server)
        healed = replace(
            now,
            live=replace(
                live,
                pid=server.pid,
                started=server.identity,
                base_url=server.base_url,
                restarts=live.restarts + 1,
            ),
        )
        save(self.home, healed)
        self.attempts.pop(model, None)
        self.log(f"{model}: {live.color} serves again at {server.base_url} (restart {live.restarts + 1})")
        return healed
