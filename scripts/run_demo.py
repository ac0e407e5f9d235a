"""`make demo`: build the demo platform repo once, then run the main job on the embedded default.

Everything lands under `demo/`: the platform repo (`demo/platform`), the state
(`demo/state`: artifacts, warehouse, inbox) and the Dagster instance
(`demo/dagster`), which `make ui` opens so the runs are there to browse.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo"
REPO, HOME, DAGSTER_HOME = DEMO / "platform", DEMO / "state", DEMO / "dagster"
GATEWAY_PORT = int(os.environ.get("AI_PLATFORM_GATEWAY_PORT", "8080"))


def start_gateway() -> str:
    """The gateway runs on after `make demo` (the model stays live behind it); `make demo-stop` ends both."""
    import subprocess
    import time

    import httpx

    url = f"http://127.0.0.1:{GATEWAY_PORT}"
    try:
        httpx.get(f"{url}/metrics", timeout=1)
        return url  # already running from an earlier `make demo`
    except httpx.HTTPError:
        pass
    log = (HOME / "gateway.log").open("ab")
    process = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "ai-platform"), "serve", "--home", str(HOME), "--port", str(GATEWAY_PORT)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    from ai_platform.serving.vllm import process_identity

    # with its identity: `make demo-stop` never signals a process that got the PID after a reboot
    (HOME / "gateway.pid").write_text(f"{process.pid} {process_identity(process.pid) or ''}\n")
    for _ in range(100):
        try:
            httpx.get(f"{url}/metrics", timeout=1)
            return url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"the gateway did not start; see {HOME / 'gateway.log'}")


def stop_gateway(pid_file: Path) -> None:
    """`make demo-stop`: the demo's gateway, only if the PID still names the process `make demo` started."""
    from ai_platform.serving.vllm import stop_pid

    if not pid_file.is_file():
        return
    pid, _, identity = pid_file.read_text().strip().partition(" ")
    if pid.isdigit() and stop_pid(int(pid), identity, grace_s=5, command="ai-platform"):
        print(f"gateway (pid {pid}) stopped")
    pid_file.unlink()


def demo_keys() -> dict[str, Path]:
    """The demo's API keys: one to call prompts, one for reviewers' labels. Only their sha256 is in the key
    file (platform.yaml's gateway.keys); the raw keys are written owner-only beside it, for you to use."""
    from ai_platform.serving.gateway import keys

    folder = HOME / "gateway"
    made = {}
    for name, scopes in (("invoke", ["invoke"]), ("reviewer-demo", ["label"])):
        path = folder / f"{name}.key"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(keys.create(folder / "keys.json", name, scopes) + "\n")
        path.chmod(0o600)
        made[name] = path
    return made


def bearer(path: Path) -> dict[str, str]:
    return {"Authorization": f"Bearer {path.read_text().strip()}"}


def print_miss_rate(model: str, gateway: str, key: Path) -> None:
    """The article's metric on held-out contracts: key risks missed by the model alone, and with the loop."""
    from ai_platform.demo.missrate import measure
    from ai_platform.oci.layout import OciLayout
    from ai_platform.prompts import bundle
    from ai_platform.serving.state import load

    live = load(HOME, model).live
    if live is None:
        return
    document = bundle.load(OciLayout(Path(live.bundle_layout)), live.bundle).get("contract_review")
    if document is None:  # a model of another task (the clause classifier): the metric is the reviewer's
        return
    print(f"\n== miss rate of key risks [{model}], held-out contracts (the article's 8.2% -> 0.9%)")
    for line in measure(gateway, live.base_url, document, model, bearer(key)).lines():
        print(f"  {line}")


def try_the_gateway(url: str, key: Path, models: list[str]) -> None:
    import json

    import httpx

    from ai_platform.demo import classifier

    print(f"\ngateway:   {url}  (make demo-stop ends it and the live models)")
    print(f"  keys:    {key} (invoke), {key.parent / 'reviewer-demo.key'} (label); `ai-platform keys` makes more")
    tries = [("contract_review", "evals/contract_review.jsonl")]
    if classifier.NAME in models:
        tries.append((classifier.PROMPT, classifier.EVALS))
    for prompt, evals in tries:
        case = json.loads((REPO / evals).read_text(encoding="utf-8").splitlines()[0])
        body = json.dumps({"variables": case["vars"]}, ensure_ascii=False)
        print(
            f'  curl -s {url}/v1/prompts/{prompt}:run -H "Authorization: Bearer $(cat {key.relative_to(ROOT)})"'
            f" -H 'Content-Type: application/json' -d '{body[:60]}…'"
        )
        try:
            reply = httpx.post(
                f"{url}/v1/prompts/{prompt}:run", json={"variables": case["vars"]}, headers=bearer(key), timeout=120
            )
        except httpx.HTTPError as exc:
            print(f"  no answer: {type(exc).__name__}")
            continue
        print(f"  -> HTTP {reply.status_code}: {json.dumps(reply.json(), ensure_ascii=False)[:400]}")


def ship_model_job():  # reconstructable: each step process loads the definitions again
    from definitions import defs

    return defs.resolve_job_def("ship_model")


def ingest_feedback_job():
    from definitions import defs

    return defs.resolve_job_def("ingest_feedback")


def learn_from_feedback_job():
    from definitions import defs

    return defs.resolve_job_def("learn_from_feedback")


def ship_the_prompt_commit(instance) -> int:
    """The second releases: prompt-only commits (the reviewer's prompt, then the classifier's spotlighting), planned
    by the git sensor as the daemon would, then run in commit order."""
    import dagster as dg

    from ai_platform.changes import COMMIT_TAG
    from ai_platform.demo.repo import improve_prompt, spotlight_clauses
    from assets.resources import PlatformRepoResource
    from sensors.platform_repo import platform_repo_sensor

    resources = {"platform_repo": PlatformRepoResource(path=str(REPO), home=str(HOME))}

    def tick(cursor: str | None):
        return platform_repo_sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources))

    first = tick(None)  # takes the head this instance just shipped as current
    made = [sha for sha in (improve_prompt(REPO), spotlight_clauses(REPO)) if sha is not None]
    if not made or not isinstance(first, dg.SensorResult):
        return 0  # an earlier `make demo` committed them: the first ship above already carried them
    planned = tick(first.cursor)
    unexpected = 0
    for request in planned.run_requests or [] if isinstance(planned, dg.SensorResult) else []:
        stages = ", ".join(k.to_user_string() for k in request.asset_selection or [])
        title = (
            f"ship_model [{request.partition_key}] prompt-only commit {request.tags[COMMIT_TAG][:12]}, planned by the"
            f" git sensor: {stages}"
        )
        tags = {**request.tags, "dagster/partition": str(request.partition_key)}
        unexpected += run(ship_model_job, instance, tags, title, selection=request.asset_selection)
    return unexpected


def served_scheme(result, step: str) -> list[str]:
    """The quantization the serving preflight chose, and why (the quantized_weights metadata)."""
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION" and event.step_key == step:
            metadata = event.event_specific_data.materialization.metadata
            if "scheme_reason" in metadata:
                return [f"quantization: {metadata['scheme_reason'].value}", f"runtime: {metadata['runtime'].value}"]
    return []


# When `make demo` started: ship_all's worker processes count from it too.
STARTED = float(os.environ.setdefault("AI_PLATFORM_DEMO_STARTED", str(time.time())))


def elapsed() -> str:
    return f"{time.time() - STARTED:4.0f} s"


def run(job, instance, tags: dict[str, str], title: str, selection=None, announce: bool = True) -> int:
    """Execute one job; print each step's outcome (a failure with its reason), all at once when it ends (runs may
    go side by side); return how many steps failed."""
    import dagster as dg

    if announce:
        print(f"[{elapsed()}] started: {title}", flush=True)
    # The console keeps to this summary; every event and stack trace is in the instance, for the UI.
    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    result = dg.execute_job(
        dg.reconstructable(job),
        instance=instance,
        tags=tags,
        run_config=quiet,
        raise_on_error=False,
        asset_selection=selection,
    )
    done = {e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"}
    failed = {e.step_key: e.step_failure_data.error for e in result.get_step_failure_events()}
    blocked = {
        e.event_specific_data.check_name
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.event_specific_data.passed
    }
    unexpected = 0
    lines = [f"\n== [{elapsed()}] {title}", f"run {result.run_id}"]
    chosen = {k.to_user_string() for k in selection} if selection else None
    for node in job().nodes_in_topological_order:
        step = node.name
        if chosen is not None and step not in chosen:
            continue
        if step in done:
            lines.append(f"  ok          {step}")
            lines.extend(f"              {line}" for line in served_scheme(result, step))
        elif step in failed:
            unexpected += 1
            error = failed[step].to_string().splitlines() if failed[step] else [""]
            # the library's own error line, not Dagster's wrapper around it
            reason = next((line for line in reversed(error) if line.startswith("ai_platform.")), error[0]).strip()
            lines.append(f"  FAILED      {step}  {reason}")
        else:
            why = f"blocked by failed checks: {', '.join(sorted(blocked))}" if blocked else "upstream produced nothing"
            lines.append(f"  skipped     {step}  ({why})")
    print("\n".join(lines), flush=True)
    return unexpected


def ship_all(models: list[str]) -> int:
    """Every model's first ship_model run, side by side, each in a process of its own (Dagster's in-process
    execution is not thread-safe: two runs in one process deadlock in its logging): each waits on its own vLLM
    starts much of the time, and each model is its own partition all the way down (its spec, weights, canary
    server, live colour). Each run's summary is printed as it ends."""
    import subprocess

    runs = []
    for m in models:
        print(f"[{elapsed()}] started: ship_model [{m}] (side by side)", flush=True)
        runs.append(subprocess.Popen([sys.executable, __file__, "--ship", m], stdout=subprocess.PIPE, text=True))
    failed = 0
    for process in runs:
        out, _ = process.communicate()
        print(out, end="", flush=True)
        failed += process.returncode if process.returncode > 0 else int(process.returncode != 0)  # killed: one
    return failed


def ship_one(model: str) -> int:
    """`--ship MODEL`: one model's ship_model run in this process (ship_all's worker); exits with its failures."""
    import dagster as dg

    sys.path.insert(0, str(ROOT))
    tags = {"dagster/partition": model}
    return run(ship_model_job, dg.DagsterInstance.get(), tags, f"ship_model [{model}]", announce=False)


def main() -> int:
    os.environ.update({"AI_PLATFORM_REPO": str(REPO), "AI_PLATFORM_HOME": str(HOME), "DAGSTER_HOME": str(DAGSTER_HOME)})
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_UPDATE_CHECK", "1")
    sys.path.insert(0, str(ROOT))
    from ai_platform.demo import classifier
    from ai_platform.demo.cache import cache_base
    from ai_platform.demo.repo import init
    from ai_platform.errors import NewerWarehouseFile
    from ai_platform.platform_repo import model_names
    from ai_platform.quantize import shared
    from ai_platform.warehouse import Warehouse
    from ai_platform.warehouse.convert import cache_dir, convert

    # The published model's quantization takes minutes: kept by its inputs key for the next `make demo`'s new home.
    os.environ.setdefault(shared.ENV, str(cache_base() / "quantized"))

    if not (REPO / ".git").is_dir():
        shutil.rmtree(REPO, ignore_errors=True)
        init(REPO, seed=0, published=True)  # both models: the demo's own and the published one
    elif not (REPO / f"models/{classifier.NAME}.yaml").is_file():
        print(f"{REPO} is from a demo of one model: `rm -rf demo` first to ship the published model beside it")
    DAGSTER_HOME.mkdir(parents=True, exist_ok=True)
    settings = DAGSTER_HOME / "dagster.yaml"
    # One run per model at a time: the git sensor's per-commit runs then go live in commit order. No
    # first-visit popup in the UI (nux).
    settings.write_text(
        "telemetry:\n  enabled: false\nnux:\n  enabled: false\nrun_queue:\n  tag_concurrency_limits:\n"
        "    - {key: ai_platform/model, value: {applyLimitPerUniqueValue: true}, limit: 1}\n"
    )
    inbox = HOME / "inbox"  # where reviewers drop their label files

    import dagster as dg

    instance = dg.DagsterInstance.get()
    models = model_names(REPO, "main")
    missing = [m for m in models if not instance.has_dynamic_partition("models", m)]
    if missing:
        instance.add_dynamic_partitions("models", missing)

    warehouse = Warehouse(HOME / "warehouse.duckdb")
    try:
        warehouse.migrate()
    except NewerWarehouseFile as exc:  # a demo from before the move to duckdb 1.5.5
        print(f"{exc}\nconverting it now")
        convert(warehouse.path, cache_dir())
        warehouse.migrate()
    made = demo_keys()
    gateway = start_gateway()
    unexpected = 0
    unexpected += ship_all(models)
    # Reviewers at work: real traffic through the gateway, labeled against the corpus's truth. The classifier's
    # start at once, beside the prompt-only commits; the classifier's own (spotlighting) goes live among them if
    # its canary passes, and each generation records the prompt version that answered it. Each model's replies
    # come from its own vLLM worker, one core each.
    from concurrent.futures import ThreadPoolExecutor

    from ai_platform.demo.reviewers import review, review_clauses

    with ThreadPoolExecutor(max_workers=1) as pool:
        clauses = [
            pool.submit(review_clauses, gateway, inbox, bearer(made["invoke"]), count=140, workers=8)
            for _ in range(classifier.NAME in models)
        ]
        unexpected += ship_the_prompt_commit(instance)  # the canary now has a champion to compare with
        files = review(gateway, inbox, bearer(made["invoke"]), count=480, workers=8)  # a holdout of ~150
        files += [f for labelled in clauses for f in labelled.result()]
    labels = sum(1 for f in files for _ in f.open()) - sum(f.suffix == ".csv" for f in files)  # less the headers
    print(f"\n[{elapsed()}] reviewers: {labels} labels of gateway replies in {inbox}")
    unexpected += run(ingest_feedback_job, instance, {}, "ingest_feedback")
    for model in models:
        title = f"learn_from_feedback [{model}]"
        unexpected += run(learn_from_feedback_job, instance, {"dagster/partition": model}, title)
    for model in models:
        print_miss_rate(model, gateway, made["invoke"])

    print(f"\nUI:        make ui   (then open http://127.0.0.1:3000, instance in {DAGSTER_HOME})")
    query = "SELECT path, count(*) AS tensors, sum(data_end - data_begin) AS bytes FROM tensor_hashes GROUP BY path"
    print(f'warehouse: .venv/bin/ai-platform sql "{query}" --warehouse {HOME}/warehouse.duckdb')
    try_the_gateway(gateway, made["invoke"], models)
    return 1 if unexpected else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ship"]:
        sys.exit(ship_one(sys.argv[2]))
    if sys.argv[1:] == ["--stop-gateway"]:
        sys.path.insert(0, str(ROOT))
        stop_gateway(HOME / "gateway.pid")
        sys.exit(0)
    sys.exit(main())
