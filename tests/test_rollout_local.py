"""Blue/green on the embedded default with real vLLM and the real gateway: a client sends requests
the whole time, the switch loses none and takes under a second; a prompt-only rollout restarts no
vLLM; rollback returns to the previous image."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import MODEL, SERVE_PYTHON, materialize
from gateway_harness import api_key, served
from prometheus_client.parser import text_string_to_metric_families

from ai_platform.oci.layout import OciLayout
from ai_platform.platform_repo import git
from ai_platform.prompts import bundle
from ai_platform.prompts.compiler import CompiledPrompt
from ai_platform.records import ModelImage, PromptBundle, Records
from ai_platform.rollout import local
from ai_platform.serving.state import GATEWAY_URL_FILE, load
from ai_platform.serving.vllm import VLLM_ENTRYPOINT, healthy
from ai_platform.specs import pinned_spec
from assets import SHIP_CHAIN

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(not SERVE_PYTHON.is_file(), reason="serve environment missing; `make envs` creates it"),
]
CHAIN = SHIP_CHAIN[: SHIP_CHAIN.index("canary_eval")]  # the rollout is called by hand here

KEY: dict[str, str] = {}  # the Authorization header for the running gateway (set by its fixture)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[str]:
    """The real gateway on a free port; KEY holds an invoke key for it."""
    home = tmp_path / "home"
    with served(home) as (url, _):
        (home / "rollout").mkdir(parents=True, exist_ok=True)
        (home / "rollout" / GATEWAY_URL_FILE).write_text(url)
        KEY["Authorization"] = f"Bearer {api_key(home)}"
        yield url
    local.stop(home, MODEL, log=lambda _: None)


class Traffic:
    """A client calling the prompt endpoint back to back until stopped; every answer is kept."""

    def __init__(self, url: str, variables: dict[str, str]) -> None:
        self.url, self.variables = url, variables
        self.statuses: Counter[int] = Counter()
        self.images: Counter[str] = Counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        with httpx.Client(timeout=120) as client:
            while not self.stop.is_set():
                try:
                    reply = client.post(
                        f"{self.url}/v1/prompts/contract_review:run", json={"variables": self.variables}, headers=KEY
                    )
                    self.statuses[reply.status_code] += 1
                    if reply.status_code == 200:
                        self.images[reply.json()["image"]] += 1
                except httpx.HTTPError as exc:
                    self.statuses[type(exc).__name__] += 1  # type: ignore[index]

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=150)


def lighter_release(repo: Path) -> None:
    """A test-only commit in this test's own repo: the weights as trained (no AWQ) and a canary of 8 ordinary cases
    with the two gates 8 cases can show. This test guards the switch, the reload and the rollback, not quantization
    or the gates: AWQ takes ~75 s on 2 cores, each vLLM start of its W4A16 checkpoint compiles ~30 s longer than one
    of the checkpoint as trained (four starts here), and 32 cases twice ~35 s. The demo's own spec (AWQ, 32 cases,
    8 gates) is shipped through the canary to live by test_a_guard_or_gate_only_commit_restarts_no_vllm, and the
    gates are checked row by row by tests/test_canary.py."""
    spec_path = repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec["quantization"]["method"] = "none"
    # vLLM's CPU build traces the model with torch.compile (inductor off) at every start, its saved compile cache
    # not loading back ("Compiling model again due to a load failure"): 11-26 s of each start here. This test
    # guards the switch, not how vLLM runs the model; the other vLLM tests serve it compiled.
    spec["serving"]["extra_args"] = ["--enforce-eager"]
    cases = (repo / "evals/contract_review.jsonl").read_text(encoding="utf-8").splitlines()[:8]
    (repo / "evals/rollout.jsonl").write_text("\n".join(cases) + "\n", encoding="utf-8")
    spec["canary"]["evals"] = ["evals/rollout.jsonl"]
    spec["canary"]["gates"] = [{"metric": "schema_valid_rate", "min": 1.0}, {"metric": "finish_stop_rate", "min": 1.0}]
    spec_path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "test: no AWQ, a canary of 8 cases")


def test_blue_green_prompt_reload_and_rollback(instance, own_demo_repo: Path, tmp_path: Path, gateway: str) -> None:
    lighter_release(own_demo_repo)
    assert materialize(instance, *CHAIN).success
    home = tmp_path / "home"
    snap = pinned_spec(home, MODEL)
    records = Records(snap.platform.artifacts())
    record_a, prompts_a = records.read(ModelImage, MODEL), records.read(PromptBundle, MODEL)
    image_a, bundle_a = record_a.digest, prompts_a.digest
    case = json.loads((own_demo_repo / "evals/contract_review.jsonl").read_text(encoding="utf-8").splitlines()[0])

    first = local.deploy(snap, record_a, prompts_a, log=print)
    assert first.kind == "model" and first.state.live is not None
    assert first.state.live.model_image == record_a and first.state.live.prompt_bundle == prompts_a
    reply = httpx.post(
        f"{gateway}/v1/prompts/contract_review:run", json={"variables": case["vars"]}, headers=KEY, timeout=120
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["schema_valid"] and body["output"]["risk_points"] and body["generation_id"].startswith("gen-")

    # A commit that changes only `serving`: the canary runs on a server started with the new flag (the live one
    # has the old flag), the colour flips while traffic flows, and afterwards the live server has the new flag.
    spec_path = own_demo_repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec["serving"]["max_model_len"] = 992  # the demo model knows 1024 positions
    spec_path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(own_demo_repo, "commit", "--quiet", "-am", "serving: max_model_len 992")
    judged = materialize(instance, *CHAIN, "canary_eval")
    assert judged.success
    canary_log = [e.user_message for e in instance.all_logs(judged.run_id) if e.step_key == "canary_eval"]
    assert any("evaluating on the live" in m and "the champion as users get it" in m for m in canary_log)
    assert not any("same release" in m for m in canary_log), "the candidate must not run on the old flags"
    # The rollout, with 8 clients from the moment the new colour answers until after the switch (not while it starts:
    # a minute on 2 cores, twice that with 8 clients taking the cores).
    with LoadAtTheFlip(home, gateway, case["vars"], first.state.live.base_url) as flip:
        shipped = materialize(instance, "deployment")
    assert shipped.success
    traffic, crowd = flip.traffic, flip.crowd
    assert flip.switched is not None, "the clients never saw the gateway switch to the new colour"
    crowd.check_none_failed({200})
    assert any(a[0] < flip.switched for a in crowd.answers) and any(a[0] > flip.switched for a in crowd.answers)
    (deployed,) = shipped.asset_materializations_for_node("deployment")
    assert deployed.metadata["kind"].value == "model", deployed.metadata
    snap = pinned_spec(home, MODEL)
    record_b = Records(snap.platform.artifacts()).read(ModelImage, MODEL)
    image_b = record_b.digest
    second = load(home, MODEL)
    assert second.live is not None and second.live.color == "green" and second.live.image == image_b
    cards = httpx.get(f"{second.live.base_url}/v1/models", timeout=10).json()["data"]
    assert cards[0]["max_model_len"] == 992
    assert set(traffic.statuses) == {200}, traffic.statuses
    assert traffic.images[image_a] and traffic.images[image_b], traffic.images

    # Prompt-only: a new bundle on the same image; the same vLLM process keeps serving.
    documents = bundle.load(OciLayout(prompts_a.layout), bundle_a)
    edited = {**documents["contract_review"], "description": "reviewed by legal, 2026-12"}
    bundle_c = bundle.build(OciLayout(prompts_a.layout), MODEL, [CompiledPrompt(edited, "", ())]).digest
    pid = second.live.pid
    third = local.deploy(snap, record_b, replace(prompts_a, digest=bundle_c), log=print)
    assert third.kind == "prompts" and third.state.live.pid == pid
    served = httpx.post(
        f"{gateway}/v1/prompts/contract_review:run", json={"variables": case["vars"]}, headers=KEY, timeout=120
    )
    assert served.json()["prompt_version"] != body["prompt_version"]

    with Clients(gateway, case["vars"], 8) as crowd:  # rollback under load: bundle A, same vLLM
        back = local.rollback(snap, log=print)
        time.sleep(2)
    crowd.check_none_failed({200})
    assert back.kind == "rollback" and back.state.live.bundle == bundle_a and back.state.live.image == image_b

    status = httpx.get(f"{gateway}/healthz", timeout=10).json()
    assert status["status"] == "ok" and status["models"][MODEL]["image"] == image_b
    metrics = text_string_to_metric_families(httpx.get(f"{gateway}/metrics", timeout=10).text)
    served_ok = {
        sample.labels["model"]: sample.value
        for family in metrics
        for sample in family.samples
        if sample.name == "ai_platform_gateway_requests_total"
        and sample.labels == {**sample.labels, "route": "/v1/prompts/{name}:run", "status": "200"}
    }
    assert served_ok.get(MODEL, 0) >= 3, served_ok
    time.sleep(1.5)  # the generation log writes in batches
    warehouse = snap.platform.warehouse()
    _, rows = warehouse.query("SELECT count(*) FROM generations WHERE source = 'gateway'")
    assert rows[0][0] >= sum(traffic.statuses.values())
    _, deployments = warehouse.query("SELECT status, count(*) FROM deployments GROUP BY status ORDER BY status")
    assert dict(deployments) == {"live": 1, "retired": 3}

    kill_the_live_server_under_load(home, gateway, case["vars"])


def vllm_urls(home: Path) -> set[str]:
    """The base URLs of the vLLM servers running a model folder under `home` (their command lines say)."""
    urls = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if VLLM_ENTRYPOINT in args and "--port" in args and "--model" in args:
            model_dir = args[args.index("--model") + 1]
            if model_dir.startswith(f"{home}/"):
                urls.add(f"http://{args[args.index('--host') + 1]}:{args[args.index('--port') + 1]}")
    return urls


class LoadAtTheFlip:
    """8 clients (Traffic and 7 Clients) started once a vLLM server other than `old` answers under `home` (the new
    colour, before its warm-up and the switch), kept on until 3 s after the block; `switched`: when the state first
    named a live colour other than the old one (monotonic, as the clients' times)."""

    def __init__(self, home: Path, url: str, variables: dict[str, str], old: str) -> None:
        self.home, self.old = home, old
        self.traffic, self.crowd = Traffic(url, variables), Clients(url, variables, 7)
        self.loaded: float | None = None  # when the clients started
        self.switched: float | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not any(url != self.old and healthy(url) for url in vllm_urls(self.home)):
            if self.done.wait(0.1):
                return
        self.traffic.__enter__()
        self.crowd.__enter__()
        self.loaded = time.monotonic()
        while True:
            live = load(self.home, MODEL).live
            if live is not None and live.base_url != self.old:
                self.switched = time.monotonic()
                return
            if self.done.wait(0.05):
                return

    def __enter__(self) -> LoadAtTheFlip:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(timeout=30)
        if self.loaded is not None:
            time.sleep(3)
            self.traffic.__exit__()
            self.crowd.__exit__()


class Clients:
    """Concurrent clients (8), half calling the prompt endpoint and half streaming OpenAI chat completions;
    back to back; each answer kept with when it was sent: its status, its Retry-After, and how a stream ended."""

    def __init__(self, url: str, variables: dict[str, str], clients: int = 8) -> None:
        self.url, self.variables = url, variables
        self.answers: list[tuple[float, str, object, str | None]] = []  # (sent, kind, status or error, Retry-After)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i % 2 == 0,), daemon=True) for i in range(clients)]

    def check_none_failed(self, statuses: set[object]) -> None:
        """No request failed (no error, no cut or hung stream) and every status is one of `statuses`."""
        failed = [a for a in self.answers if a[1] == "failed"]
        assert not failed, failed[:5]
        assert {a[2] for a in self.answers} <= statuses, Counter(str(a[2]) for a in self.answers)
        assert self.answers and all(a[1] != "stream error event" for a in self.answers if a[2] == 200)
        print(f"{len(self.answers)} answers, none failed: {Counter(a[1] for a in self.answers)}")

    def run(self, streamed: bool) -> None:
        chat = {
            "model": MODEL,
            "messages": [{"role": "user", "content": "Name one risk of a lease."}],
            "max_tokens": 24,
        }
        with httpx.Client(timeout=httpx.Timeout(10, read=60)) as client:
            while not self.stop.is_set():
                sent = time.monotonic()
                try:
                    if streamed:
                        with client.stream(
                            "POST", f"{self.url}/v1/chat/completions", json={**chat, "stream": True}, headers=KEY
                        ) as reply:
                            lines = [line for line in reply.iter_lines() if line.startswith("data: ")]
                            kind = "stream"
                            if reply.status_code == 200:
                                ended = "done" if lines and lines[-1] == "data: [DONE]" else "error event"
                                if ended == "error event":  # the only other way a stream may end
                                    assert lines and "error" in json.loads(lines[-1][6:]), lines[-3:]
                                kind = f"stream {ended}"
                            self.answers.append((sent, kind, reply.status_code, reply.headers.get("Retry-After")))
                    else:
                        reply = client.post(
                            f"{self.url}/v1/prompts/contract_review:run",
                            json={"variables": self.variables},
                            headers=KEY,
                        )
                        self.answers.append((sent, "prompt", reply.status_code, reply.headers.get("Retry-After")))
                except (httpx.HTTPError, AssertionError) as exc:  # a hang (read timeout) or a cut stream counts
                    self.answers.append((sent, "failed", f"{type(exc).__name__}: {exc}", None))
                if self.answers[-1][2] == 503:
                    time.sleep(0.2)  # what a client that honours Retry-After does, shortened

    def __enter__(self) -> Clients:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)


def kill_the_live_server_under_load(home: Path, gateway: str, variables: dict[str, str]) -> None:
    """kill -9 of the live vLLM under 8 concurrent clients: the supervisor `ai-platform serve` runs starts it
    again without anyone acting; meanwhile new requests get only 503s with Retry-After, and a stream in flight
    ends with an error event, never a hang."""
    from ai_platform.rollout.heal import Supervisor

    before = load(home, MODEL).live
    assert before is not None
    supervisor = Supervisor(home, log=print)
    supervisor.thread()
    try:
        with Clients(gateway, variables) as clients:
            time.sleep(3)
            killed = time.monotonic()
            os.kill(before.pid, signal.SIGKILL)
            deadline = killed + 300
            while time.monotonic() < deadline:  # until the healed server has answered for 3 s
                after = [a for a in clients.answers if a[0] > killed and a[2] == 200]
                if after and time.monotonic() - after[0][0] > 3:
                    break
                time.sleep(0.5)
    finally:
        supervisor.stopping.set()
    healed = load(home, MODEL).live
    assert healed is not None and healed.restarts == 1 and healed.pid != before.pid, healed
    answers = clients.answers
    assert not [a for a in answers if a[1] == "failed"], [a for a in answers if a[1] == "failed"][:5]
    assert {a[2] for a in answers} <= {200, 503}, Counter(str(a[2]) for a in answers)
    assert all(a[3] for a in answers if a[2] == 503), "every 503 says when to retry"
    back = min(a[0] for a in answers if a[0] > killed and a[2] == 200)
    refused = sum(1 for a in answers if a[2] == 503)
    print(
        f"kill -9 of the live vLLM under 8 clients: served again {back - killed:.1f} s after the kill; "
        f"{refused} answers 503 with Retry-After in between, {len(answers)} answers, "
        f"{Counter(a[1] for a in answers)}"
    )
    assert [a for a in answers if a[2] == 200 and a[0] > back], "served after the restart"


def test_a_guard_or_gate_only_commit_restarts_no_vllm(
    instance, own_demo_repo: Path, tmp_path: Path, gateway: str
) -> None:
    """What the git sensor plans for a guard-only commit, run for real: the rollout alone, the same image and release,
    so it re-publishes the gateway's state (the new guard is there) and the live vLLM process stays. A gate-only
    commit adds the canary, which judges the same release on the live server: still no restart."""
    import dagster as dg

    from ai_platform.platform_repo import resolve
    from assets.resources import PlatformRepoResource
    from definitions import defs
    from sensors.platform_repo import platform_repo_sensor

    home = tmp_path / "home"
    first = materialize(instance, *SHIP_CHAIN)
    # The demo's own spec end to end, the only ship of its quantized weights through the canary here (the other
    # vLLM tests ship the weights as trained): quantized, every canary gate passed, live.
    assert first.success
    (quantized,) = first.asset_materializations_for_node("quantized_weights")
    assert quantized.metadata["method"].value != "none", quantized.metadata  # AWQ, or its W8A8 fallback
    live = load(home, MODEL).live
    assert live is not None
    pid = live.pid

    def ship(message: str, change) -> dict:
        cursor = resolve(own_demo_repo).sha
        spec_path = own_demo_repo / f"models/{MODEL}.yaml"
        spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
        change(spec)
        spec_path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
        git(own_demo_repo, "commit", "--quiet", "-am", message)
        resources = {"platform_repo": PlatformRepoResource(path=str(own_demo_repo), home=str(home))}
        planned = platform_repo_sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources))
        (request,) = planned.run_requests
        result = defs.resolve_job_def("ship_model").execute_in_process(
            instance=instance,
            partition_key=request.partition_key,
            asset_selection=list(request.asset_selection),
            tags=request.tags,
            raise_on_error=False,
        )
        assert result.success
        ran = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
        (deployed,) = result.asset_materializations_for_node("deployment")
        return {"ran": ran, "kind": deployed.metadata["kind"].value}

    guards = ship("guards: mask PII", lambda spec: spec.setdefault("guards", {}).update(pii="mask"))
    assert guards == {"ran": {"model_spec", "deployment"}, "kind": "unchanged"}
    state = load(home, MODEL)
    assert state.guards["pii"] == "mask" and state.live is not None and state.live.pid == pid

    # A gate-only commit: the canary judges the same release again, on the live server; nothing restarts.
    def loosen_coherence(spec: dict) -> None:
        for gate in spec["canary"]["gates"]:
            if gate["metric"] == "coherence":
                gate["min"] = 0.1

    gate = ship("canary: coherence floor 0.1", loosen_coherence)
    assert gate == {"ran": {"model_spec", "canary_eval", "deployment"}, "kind": "unchanged"}
    state = load(home, MODEL)
    assert state.live is not None and state.live.pid == pid
