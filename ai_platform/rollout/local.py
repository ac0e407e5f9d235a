"""Blue/green on the embedded default: vLLM colors behind the local gateway.

A model change: start the candidate's vLLM as the idle color (detached, so it
outlives the Dagster run), health-check it, warm it with a few real requests,
switch the gateway's upstream (one atomic state-file rename, then
`POST /admin/reload`), wait for the old color's in-flight requests to drain,
then stop it by PID. A prompt-only change: same image, new bundle: the state
changes and the gateway reloads the bundle; vLLM is not restarted. Rollback is
a rollout of the previous release as the state keeps it: its image and bundle
records, started with the server settings it was served with.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from ai_platform.errors import ServingError
from ai_platform.evaluation.stage import load_cases
from ai_platform.logs import Log
from ai_platform.oci.layout import OciLayout
from ai_platform.prompts import bundle as prompt_bundle
from ai_platform.prompts.render import request_body
from ai_platform.records import LiveRelease, ModelImage, ModelState, PromptBundle
from ai_platform.serving.release import installed_vllm, release_id, restorable, restored_spec
from ai_platform.serving.state import admin_headers, gateway_url, load, record_live, save, settings
from ai_platform.serving.vllm import SERVE_PYTHON, healthy, launch_image, stop_pid
from ai_platform.specs import SpecSnapshot
from ai_platform.warehouse import Warehouse


@dataclass(frozen=True)
class Rollout:
    state: ModelState
    kind: str  # model | prompts | unchanged | rollback
    switch_s: float | None  # candidate ready -> gateway routing to it
    drained: bool


def _reload_gateway(home: Path, log: Log) -> bool:
    url = gateway_url(home)
    if not url:
        log("no gateway is running (`ai-platform serve` starts one); it will route by the new state when it starts")
        return False
    try:
        httpx.post(f"{url}/admin/reload", headers=admin_headers(home), timeout=10).raise_for_status()
        return True
    except httpx.HTTPError as exc:
        log(f"gateway at {url} did not reload ({type(exc).__name__}); it re-reads the state within a second")
        return False


def _drain(home: Path, old: LiveRelease, log: Log, timeout_s: float = 120.0) -> bool:
    url = gateway_url(home)
    deadline = time.monotonic() + timeout_s
    while url and time.monotonic() < deadline:
        try:
            status = httpx.get(f"{url}/admin/status", headers=admin_headers(home), timeout=5).json()
            in_flight = status["in_flight"].get(old.base_url, 0)
        except (httpx.HTTPError, ValueError, KeyError):
            break
        if in_flight <= 0:
            return True
        time.sleep(0.1)
    log(f"{old.color}: drain not confirmed by the gateway; stopping it anyway")
    return False


def _warm(color: LiveRelease, snap: SpecSnapshot, documents: dict[str, dict[str, Any]], count: int = 3) -> None:
    """A few real requests through the new color before it takes traffic (compile caches, first-batch costs)."""
    cases = load_cases(snap)[:count]
    with httpx.Client(timeout=120) as client:
        for case in cases:
            document = documents[case.get("prompt", snap.spec.prompts[0])]
            body = {**request_body(document, case["vars"], model=snap.spec.name), "max_tokens": 64}
            client.post(f"{color.base_url}/v1/chat/completions", json=body).raise_for_status()


def _record(warehouse: Warehouse, snap: SpecSnapshot, new: LiveRelease, reason: str) -> None:
    with warehouse.write() as con:
        record_live(
            con,
            deployment_id=new.deployment_id,
            model=snap.spec.name,
            target="embedded",
            color=new.color,
            image=new.image,
            bundle=new.bundle,
            reason=reason,
            endpoint=new.base_url,
        )


def runtime() -> str:
    """The runtime a release serves on here: the serve environment's vLLM."""
    return installed_vllm(SERVE_PYTHON)


def release_of(snap: SpecSnapshot, image: str) -> str:
    """The release `image` would be on this machine: with the spec's server settings, on the serve environment."""
    return release_id(image, snap.spec.serving, runtime())


def deploy(
    snap: SpecSnapshot, image: ModelImage, bundle: PromptBundle, *, reason: str = "canary passed", log: Log = print
) -> Rollout:
    """Make `image` with `bundle` the model's live release, served from where the records say they are."""
    platform, model, home = snap.platform, snap.spec.name, snap.platform.home
    release = release_of(snap, image.digest)
    warehouse = platform.warehouse()
    db = warehouse.location
    state = replace(load(home, model, db), **settings(platform, snap.spec), stopped_at=0.0)  # served again
    documents = prompt_bundle.load(OciLayout(bundle.layout), bundle.digest)
    live = state.live
    if live and live.release == release and healthy(live.base_url):
        if live.bundle == bundle.digest:
            if state != load(home, model, db):  # the same release, new settings (guards, trust threshold, ...)
                save(home, state)
                _reload_gateway(home, log)
            return Rollout(state, "unchanged", None, True)
        new = replace(
            live,
            bundle=bundle.digest,
            bundle_layout=bundle.layout,
            prompt_bundle=bundle,
            deployment_id=uuid.uuid4().hex,
            model_image=live.model_image or image,  # none in a state an older platform wrote
        )
        state = replace(state, live=new, previous=live)
        save(home, state)
        _reload_gateway(home, log)
        _record(warehouse, snap, new, f"{reason}: prompt bundle reloaded, vLLM not restarted")
        return Rollout(state, "prompts", None, True)

    color = state.idle_color
    if live and live.image == image.digest:
        reason = f"{reason}: server settings or runtime changed"
    log(f"starting {color} for {image.digest[:19]} (release {release[7:19]})")
    server = launch_image(
        platform,
        snap.spec,
        image,
        detach=True,
        on_log=log,
        log_path=platform.artifacts_path / "logs" / f"vllm-{model}-{color}.log",
    )
    new = LiveRelease(
        color,
        server.base_url,
        server.pid,
        image.digest,
        bundle.digest,
        bundle.layout,
        uuid.uuid4().hex,
        release,
        server.identity,
        model_image=image,
        prompt_bundle=bundle,
        serving=snap.spec.serving.model_dump(mode="json"),
        runtime=runtime(),
        replicas=1,
        model_dir=str(server.model_dir or ""),
        log_path=str(server.log_path),
    )
    try:
        _warm(new, snap, documents)
    except (httpx.HTTPError, ServingError) as exc:
        server.stop()
        raise ServingError(
            f"{color} failed its warm-up requests; {live.color if live else 'nothing'} stays live: {exc}"
        ) from None
    ready = time.perf_counter()
    state = replace(state, live=new, previous=live)
    save(home, state)
    _reload_gateway(home, log)
    switch_s = time.perf_counter() - ready
    drained = True
    if live is not None:
        drained = _drain(home, live, log)
        if stop_pid(live.pid, live.started, log=log):
            log(f"{live.color} ({live.image[:19]}) drained and stopped")
    _record(warehouse, snap, new, reason)
    return Rollout(state, "model", switch_s, drained)


def rollback(snap: SpecSnapshot, log: Log = print) -> Rollout:
    """Return to the previous release as it was served: its image and bundle, started with its server settings
    (not the spec's as the branch has them now: rolling back a bad `max_model_len` must undo it). The runtime is
    this machine's serve environment; where it has changed since, the log says so."""
    state = load(snap.platform.home, snap.spec.name)
    previous = state.previous
    if previous is None:
        raise ServingError(f"{snap.spec.name}: nothing to roll back to (no previous deployment)")
    restorable(snap.spec.name, previous, cluster=False)
    assert previous.model_image is not None and previous.prompt_bundle is not None  # restorable checked
    if previous.runtime and previous.runtime != runtime():
        log(f"{previous.image[:19]} was served on {previous.runtime}; this machine serves {runtime()} now")
    back = replace(snap, spec=restored_spec(snap.spec, previous))
    result = deploy(
        back, previous.model_image, previous.prompt_bundle, reason=f"rollback to {previous.image[:19]}", log=log
    )
    return replace(result, kind="rollback")


def stop(home: Path, model: str, log: Log = print) -> str | None:
    """Stop a model's live color, clear it from the state and record the stop (`ModelState.stopped_at`): the
    color stopped, or None when nothing was live (and then nothing is written)."""
    state = load(home, model)
    if state.live is None:
        return None
    # cleared first: the gateway stops routing to it, and the supervisor (rollout/heal.py) never restarts a
    # colour whose process it sees end while it is still the live one in the state; the state says it was
    # stopped, and when (`rollout status`), until the next deploy or a rollback
    save(home, replace(state, live=None, stopped_at=time.time()))
    _reload_gateway(home, log)
    # a pid that now names another process is left alone: that colour counts as not running, and is cleared
    stopped = stop_pid(state.live.pid, state.live.started, log=log)
    if stopped:
        log(f"{model}: stopped {state.live.color}")
    return state.live.color if stopped else None
