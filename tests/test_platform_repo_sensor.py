"""The git sensor on real git repositories: what each commit re-runs, rewritten history,
unreadable repos, and a 10,000-commit backlog."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import dagster as dg
import pytest
import yaml
from conftest import MODEL
from dagster._core.execution.api import create_execution_plan

from ai_platform.changes import COMMIT_TAG, LEARNING, MODEL_SPEC_FEEDS, PLATFORM_FEEDS, plan
from ai_platform.config import ModelSpec, PlatformConfig
from ai_platform.platform_repo import git, resolve
from ai_platform.webhooks.marker import mark
from assets import SHIP_CHAIN
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource
from definitions import defs
from sensors.platform_repo import MAX_COMMITS_PER_TICK, ONWARD, platform_repo_sensor

SECOND = "second-reviewer"
PROMPT_CHAIN = ("compiled_prompts", "prompt_bundle", "canary_eval", "deployment")
WEIGHT_STAGES = ("raw_weights", "verified_weights", "quantized_weights", "model_image")
QUANTIZE_ONWARD = ("quantized_weights", "model_image", "canary_eval", "deployment")


def tick(instance: dg.DagsterInstance, source: str | Path, cursor: str | None, home: Path):
    resources = {"platform_repo": PlatformRepoResource(path=str(source), home=str(home))}
    return platform_repo_sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources))


def commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    for relative, text in files.items():
        path = repo / relative
        if text is None:
            git(repo, "rm", "--quiet", relative)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        git(repo, "add", relative)
    git(repo, "commit", "--quiet", "--allow-empty", "-m", message)
    return resolve(repo).sha


def edited(repo: Path, relative: str, old: str, new: str) -> str:
    text = (repo / relative).read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {relative}"
    return text.replace(old, new)


def runs(result) -> dict[str, tuple[str, ...]]:
    """Model -> its run's asset selection, in pipeline order, then LEARNING where the learning job runs too."""
    assert isinstance(result, dg.SensorResult), result
    out: dict[str, tuple[str, ...]] = {}
    for request in result.run_requests or []:
        if request.job_name == LEARNING:
            assert request.asset_selection is None  # the whole job: trust_model, then trust_champion
            out[request.partition_key] = (*out.get(request.partition_key, ()), LEARNING)
            continue
        assert request.job_name == "ship_model"
        names = {key.to_user_string() for key in request.asset_selection}
        out[request.partition_key] = tuple(s for s in SHIP_CHAIN if s in names)  # a later commit's run: the last
    return out


def keys(*names: str) -> list[dg.AssetKey]:
    return [dg.AssetKey(name) for name in names]


def planned_steps(request: dg.RunRequest) -> list[str]:
    """The step keys Dagster would execute for this request, on the real Definitions, without running them."""
    job = defs.resolve_job_def("ship_model").get_subset(asset_selection=set(request.asset_selection))
    plan = create_execution_plan(job, tags={**request.tags, "dagster/partition": request.partition_key})
    return [step.key for step in plan.get_all_steps_in_topo_order()]


@pytest.fixture
def head(own_demo_repo: Path) -> str:
    return resolve(own_demo_repo).sha


def test_stage_names_are_the_assets() -> None:
    assert set(ONWARD) == set(SHIP_CHAIN)
    assert ONWARD["compiled_prompts"] == PROMPT_CHAIN
    assert ONWARD["model_spec"] == SHIP_CHAIN


def test_first_tick_ships_every_model_and_keeps_the_partitions(sensor_instance, own_demo_repo: Path, tmp_path) -> None:
    sensor_instance.add_dynamic_partitions(models_partitions.name, ["retired"])
    result = tick(sensor_instance, own_demo_repo, None, tmp_path / "home")
    assert runs(result) == {MODEL: SHIP_CHAIN}
    assert result.cursor == resolve(own_demo_repo).sha
    add, delete = result.dynamic_partitions_requests
    assert isinstance(add, dg.AddDynamicPartitionsRequest) and list(add.partition_keys) == [MODEL]
    assert isinstance(delete, dg.DeleteDynamicPartitionsRequest) and list(delete.partition_keys) == ["retired"]

    again = tick(sensor_instance, own_demo_repo, result.cursor, tmp_path / "home")
    assert isinstance(again, dg.SkipReason) and "still at" in str(again.skip_message)


def test_a_first_tick_leaves_what_this_instance_already_shipped(
    sensor_instance, own_demo_repo: Path, tmp_path: Path
) -> None:
    sensor_instance.report_runless_asset_event(dg.AssetMaterialization("deployment", partition=MODEL))
    result = tick(sensor_instance, own_demo_repo, None, tmp_path / "home")
    assert runs(result) == {} and result.cursor == resolve(own_demo_repo).sha
    assert f"except {MODEL}: already shipped by this instance" in result.skip_reason.skip_message


def test_a_prompt_only_commit_plans_exactly_the_prompt_chain(
    sensor_instance, own_demo_repo: Path, head: str, tmp_path: Path
) -> None:
    prompt = "prompts/contract_review.prompt"
    text = edited(own_demo_repo, prompt, "system:", 'description: "reviewed by legal"\nsystem:')
    sha = commit(own_demo_repo, "contract_review: say who reviewed it\n\nA body the tags leave out.", {prompt: text})
    result = tick(sensor_instance, own_demo_repo, head, tmp_path / "home")

    (request,) = result.run_requests
    assert runs(result) == {MODEL: PROMPT_CHAIN}
    assert request.run_key == f"{sha}:{MODEL}" and request.partition_key == MODEL
    assert request.tags[COMMIT_TAG] == sha
    assert request.tags["ai_platform/author"] == "test <test@example.invalid>"
    assert request.tags["ai_platform/message"] == "contract_review: say who reviewed it"
    assert result.cursor == sha

    steps = planned_steps(request)
    assert steps == list(PROMPT_CHAIN)  # one step per asset; its checks run inside it
    assert not set(steps) & {"model_spec", *WEIGHT_STAGES}


def test_a_prompt_only_run_reads_its_own_commit(instance, own_demo_repo: Path, tmp_path: Path) -> None:
    """model_spec is not in a prompt-only run, yet its stages must compile the new commit, not the last pin."""
    job = defs.resolve_implicit_global_asset_job_def()
    selection = keys("model_spec", "compiled_prompts")
    first = job.execute_in_process(instance=instance, partition_key=MODEL, asset_selection=selection)
    (before,) = first.asset_materializations_for_node("compiled_prompts")
    start = resolve(own_demo_repo).sha
    prompt = "prompts/contract_review.prompt"
    sha = commit(
        own_demo_repo,
        "describe the prompt",
        {prompt: edited(own_demo_repo, prompt, "system:", 'description: "v2"\nsystem:')},
    )
    commit(own_demo_repo, "a later commit the run must not read", {"README.txt": "later\n"})

    (request,) = tick(instance, own_demo_repo, start, tmp_path / "sensor-home").run_requests
    assert request.tags[COMMIT_TAG] == sha
    result = job.execute_in_process(
        instance=instance,
        partition_key=MODEL,
        tags=request.tags,
        asset_selection=keys("compiled_prompts", "prompt_bundle"),
    )
    assert result.success
    (after,) = result.asset_materializations_for_node("compiled_prompts")
    assert after.metadata["commit"].value == sha
    assert after.metadata["versions"].value != before.metadata["versions"].value
    (bundle,) = result.asset_materializations_for_node("prompt_bundle")
    assert bundle.metadata["commit"].value == sha


@pytest.fixture
def two_models(own_demo_repo: Path) -> str:
    """A second model spec beside the demo's, committed; returns that commit."""
    spec = edited(own_demo_repo, f"models/{MODEL}.yaml", f"name: {MODEL}", f"name: {SECOND}")
    return commit(own_demo_repo, "a second model", {f"models/{SECOND}.yaml": spec})


def test_a_new_model_spec_ships_that_model_and_adds_its_partition(
    sensor_instance, own_demo_repo: Path, head: str, tmp_path: Path
) -> None:
    sensor_instance.add_dynamic_partitions(models_partitions.name, [MODEL])
    spec = edited(own_demo_repo, f"models/{MODEL}.yaml", f"name: {MODEL}", f"name: {SECOND}")
    commit(own_demo_repo, "a second model", {f"models/{SECOND}.yaml": spec})
    result = tick(sensor_instance, own_demo_repo, head, tmp_path / "home")
    assert runs(result) == {SECOND: SHIP_CHAIN}
    (add,) = result.dynamic_partitions_requests
    assert list(add.partition_keys) == [SECOND]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"calibration/contracts.jsonl": "{}\n"}, {MODEL: QUANTIZE_ONWARD, SECOND: QUANTIZE_ONWARD}),
        (
            {"evals/contract_review.jsonl": "{}\n"},
            {MODEL: ("canary_eval", "deployment"), SECOND: ("canary_eval", "deployment")},
        ),
        (
            {"hub/contract-qwen2/config.json": "{}\n"},
            {MODEL: ("raw_weights", *ONWARD["raw_weights"][1:]), SECOND: ONWARD["raw_weights"]},
        ),
        (
            {"manifests/contract-qwen2.json": "{}\n"},
            {MODEL: ONWARD["verified_weights"], SECOND: ONWARD["verified_weights"]},
        ),
        ({"prompts/unused.prompt": "system: hi\n", "evals/unused.jsonl": "{}\n", "README.txt": "docs\n"}, {}),
    ],
    ids=["calibration", "evals", "local-weights", "trusted-manifest", "unrelated"],
)
def test_paths_map_to_stages(
    sensor_instance, own_demo_repo: Path, two_models: str, tmp_path: Path, files, expected
) -> None:
    sha = commit(own_demo_repo, "change", files)
    result = tick(sensor_instance, own_demo_repo, two_models, tmp_path / "home")
    assert runs(result) == expected
    assert result.cursor == sha
    if not expected:
        assert "nothing any model reads changed" in result.skip_reason.skip_message
        assert f"cursor advanced to {sha[:12]}" in result.skip_reason.skip_message


def test_a_prompt_commit_runs_only_the_models_that_use_it(
    sensor_instance, own_demo_repo: Path, two_models: str, tmp_path: Path
) -> None:
    spec = f"models/{SECOND}.yaml"
    other = edited(own_demo_repo, "prompts/contract_review.prompt", "system:", 'name: "other"\nsystem:')
    uses_other = edited(own_demo_repo, spec, "prompts: [contract_review]", "prompts: [other]")
    commit(own_demo_repo, "second model uses its own prompt", {"prompts/other.prompt": other, spec: uses_other})
    base = resolve(own_demo_repo).sha
    commit(own_demo_repo, "edit the shared prompt", {"prompts/contract_review.prompt": other.replace("other", "x")})
    assert runs(tick(sensor_instance, own_demo_repo, base, tmp_path / "home")) == {MODEL: PROMPT_CHAIN}


def test_a_deleted_spec_removes_its_partition_and_runs_nothing(
    sensor_instance, own_demo_repo: Path, two_models: str, tmp_path: Path
) -> None:
    sensor_instance.add_dynamic_partitions(models_partitions.name, [MODEL, SECOND])
    commit(own_demo_repo, "retire the second model", {f"models/{SECOND}.yaml": None})
    result = tick(sensor_instance, own_demo_repo, two_models, tmp_path / "home")
    assert runs(result) == {}
    (delete,) = result.dynamic_partitions_requests
    assert isinstance(delete, dg.DeleteDynamicPartitionsRequest) and list(delete.partition_keys) == [SECOND]


def test_an_invalid_spec_runs_its_whole_chain_to_fail_loudly_at_model_spec(
    sensor_instance, own_demo_repo: Path, head: str, tmp_path: Path
) -> None:
    spec = f"models/{MODEL}.yaml"
    broken = commit(own_demo_repo, "typo", {spec: edited(own_demo_repo, spec, "method: awq", "method: magic")})
    assert runs(tick(sensor_instance, own_demo_repo, head, tmp_path / "home")) == {MODEL: SHIP_CHAIN}
    # While it stays invalid, what else it names is unknown; the repairing commit re-runs everything anyway.
    commit(own_demo_repo, "calibration", {"calibration/contracts.jsonl": "{}\n"})
    assert runs(tick(sensor_instance, own_demo_repo, broken, tmp_path / "home")) == {}


@pytest.fixture
def remote(own_demo_repo: Path, tmp_path: Path) -> Path:
    """A bare 'origin' the sensor fetches from, and own_demo_repo pushing to it."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(own_demo_repo), str(bare))
    git(own_demo_repo, "remote", "add", "origin-test", str(bare))
    return bare


def test_a_force_push_replans_from_the_merge_base(
    sensor_instance, own_demo_repo: Path, remote: Path, tmp_path: Path
) -> None:
    source, home = f"file://{remote}", tmp_path / "home"
    base = resolve(own_demo_repo).sha
    prompt = "prompts/contract_review.prompt"
    v2 = edited(own_demo_repo, prompt, "system:", 'description: "v2"\nsystem:')
    old = commit(own_demo_repo, "prompt v2", {prompt: v2})
    git(own_demo_repo, "push", "--quiet", "origin-test", "main")
    assert runs(tick(sensor_instance, source, base, home)) == {MODEL: PROMPT_CHAIN}

    # Rewritten: the prompt commit is gone, a calibration commit takes its place.
    git(own_demo_repo, "reset", "--quiet", "--hard", base)
    new = commit(own_demo_repo, "calibration instead", {"calibration/contracts.jsonl": "{}\n"})
    git(own_demo_repo, "push", "--quiet", "--force", "origin-test", "main")
    mark(home)  # as the push receiver does: the next tick fetches, not the one after the poll interval
    result = tick(sensor_instance, source, old, home)
    (request,) = result.run_requests
    # Calibration onward for the new commit, and the prompt chain: the live v2 prompt is no longer on the branch.
    assert runs(result) == {MODEL: ("quantized_weights", "model_image", *PROMPT_CHAIN)}
    note = request.tags["ai_platform/plan_note"]
    assert "history rewritten" in note and f"merge base {base[:12]}" in note and old[:12] in note
    assert request.run_key == f"{new}:{MODEL}:replaces:{old}" and result.cursor == new

    # Reset back to the merge base itself: nothing new, but what the dropped commit changed re-runs.
    git(own_demo_repo, "push", "--quiet", "--force", "origin-test", f"{base}:main")
    mark(home)
    back = tick(sensor_instance, source, new, home)
    assert runs(back) == {MODEL: QUANTIZE_ONWARD} and back.cursor == base
    (request,) = back.run_requests
    assert request.run_key == f"{base}:{MODEL}:replaces:{new}"


def test_a_rewrite_that_feeds_nothing_says_so_in_the_skip_reason(
    sensor_instance, own_demo_repo: Path, head: str, tmp_path: Path
) -> None:
    old = commit(own_demo_repo, "docs", {"README.txt": "one\n"})
    git(own_demo_repo, "reset", "--quiet", "--hard", head)
    new = commit(own_demo_repo, "docs, reworded", {"README.txt": "two\n"})
    result = tick(sensor_instance, own_demo_repo, old, tmp_path / "home")
    message = result.skip_reason.skip_message
    assert f"{old[:12]} is not an ancestor of {new[:12]}" in message and f"merge base {head[:12]}" in message
    assert result.cursor == new


def test_a_cursor_missing_from_the_repo_replans_the_head(sensor_instance, own_demo_repo: Path, tmp_path) -> None:
    result = tick(sensor_instance, own_demo_repo, "0" * 40, tmp_path / "home")
    assert runs(result) == {MODEL: SHIP_CHAIN}
    (request,) = result.run_requests
    assert "the cursor 000000000000 is not in the repository" in request.tags["ai_platform/plan_note"]
    assert request.run_key == f"{resolve(own_demo_repo).sha}:{MODEL}:replaces:{'0' * 40}"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again on leaving: nothing listens there


@pytest.mark.parametrize(
    "source",
    [
        "file:///nonexistent/platform.git",
        "http://reviewer:s3cret@127.0.0.1:{port}/platform.git",
        "git://127.0.0.1:{port}/platform.git",
    ],
    ids=["missing-path", "closed-port-http", "closed-port-git"],
)
def test_an_unreachable_remote_skips_and_keeps_the_cursor(sensor_instance, tmp_path: Path, source: str) -> None:
    source = source.format(port=closed_port())
    result = tick(sensor_instance, source, "a" * 40, tmp_path / "home")
    assert isinstance(result, dg.SkipReason)
    message = result.skip_message
    assert message.startswith(f"cannot read {source.replace('reviewer:s3cret', '***')}@main: fetching main failed: ")
    assert f"cursor kept: {'a' * 12}" in message
    assert "s3cret" not in message


def small_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch=main")
    for key, value in (("user.name", "t"), ("user.email", "t@example.invalid")):
        git(path, "config", key, value)
    commit(
        path,
        "start",
        {
            "platform.yaml": "name: tiny\n",
            "models/tiny.yaml": TINY_SPEC,
            "prompts/p.prompt": "system: hi\n",
            "evals/e.jsonl": "{}\n",
        },
    )
    return path


def test_a_corrupt_repo_skips_and_keeps_the_cursor(sensor_instance, tmp_path: Path) -> None:
    repo = small_repo(tmp_path / "repo")
    cursor = resolve(repo).sha
    commit(repo, "more", {"prompts/p.prompt": "system: hello\n"})
    for entry in (repo / ".git/objects").iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    result = tick(sensor_instance, repo, cursor, tmp_path / "home")
    assert isinstance(result, dg.SkipReason)
    assert "cannot read" in result.skip_message and f"cursor kept: {cursor[:12]}" in result.skip_message


def test_not_a_repository_skips(sensor_instance, tmp_path: Path) -> None:
    result = tick(sensor_instance, tmp_path, None, tmp_path / "home")
    assert isinstance(result, dg.SkipReason) and "not a git repository" in result.skip_message


TINY_SPEC = """\
name: tiny
source: {kind: local, path: hub/tiny}
prompts: [p]
canary: {evals: [evals/e.jsonl], gates: [{metric: schema_valid_rate, min: 0.9}]}
"""


def fast_import(repo: Path, count: int) -> None:
    """`count` commits after the current head, each editing the prompt, in one `git fast-import`."""
    parent = resolve(repo).sha
    chunks = []
    for i in range(count):
        message, content = f"prompt edit {i}".encode(), f"system: hello {i}\n".encode()
        when = 1767603600 + i
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(b"author t <t@example.invalid> %d +0000\n" % when)
        chunks.append(b"committer t <t@example.invalid> %d +0000\n" % when)
        chunks.append(b"data %d\n%s\n" % (len(message), message))
        if i == 0:
            chunks.append(b"from %s\n" % parent.encode())
        chunks.append(b"M 100644 inline prompts/p.prompt\ndata %d\n%s\n" % (len(content), content))
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(chunks), check=True)


def test_a_long_backlog_is_planned_a_bounded_batch_per_tick(sensor_instance, tmp_path: Path) -> None:
    repo = small_repo(tmp_path / "repo")
    start = resolve(repo).sha
    fast_import(repo, 10_000)
    shas = git(repo, "rev-list", "--reverse", f"{start}..main").decode().split()
    assert len(shas) == 10_000

    first = tick(sensor_instance, repo, start, tmp_path / "home")
    assert [r.tags[COMMIT_TAG] for r in first.run_requests] == shas[:MAX_COMMITS_PER_TICK]
    assert {r.partition_key for r in first.run_requests} == {"tiny"}
    assert first.cursor == shas[MAX_COMMITS_PER_TICK - 1]
    second = tick(sensor_instance, repo, first.cursor, tmp_path / "home")
    assert [r.tags[COMMIT_TAG] for r in second.run_requests] == shas[MAX_COMMITS_PER_TICK : 2 * MAX_COMMITS_PER_TICK]
    assert runs(second) == {"tiny": PROMPT_CHAIN}


def test_every_stage_has_a_code_version() -> None:
    graph = defs.resolve_asset_graph()
    for name in SHIP_CHAIN:
        assert graph.get(dg.AssetKey(name)).code_version, name


# Plans by field: each section of a spec, and of platform.yaml, re-runs exactly the stages it feeds.
SPEC = ("model_spec",)
RELEASE = ("canary_eval", "deployment")  # a canary on a server with the new settings, then a colour flip
GATEWAY = ("deployment",)  # the rollout alone: an unchanged release re-publishes the gateway's state


def yaml_edit(repo: Path, relative: str, change) -> str:
    data = yaml.safe_load((repo / relative).read_text(encoding="utf-8"))
    change(data)
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def put(*path):
    """A change that sets the value at the end of `path` (keys, list indexes) to its last element."""
    *keys, value = path

    def change(data: dict) -> None:
        for key in keys[:-1]:
            data = data.setdefault(key, {}) if isinstance(key, str) else data[key]
        data[keys[-1]] = value

    return change


SPEC_SECTIONS = [
    ("source", put("source", "path", "hub/contract-qwen2-v2"), (*SPEC, *ONWARD["raw_weights"])),
    ("verification", put("verification", "identical_fraction_limit", 0.98), (*SPEC, *ONWARD["verified_weights"])),
    ("quantization", put("quantization", "group_size", 64), (*SPEC, *QUANTIZE_ONWARD)),
    ("image", put("image", "base", "docker.io/library/busybox@sha256:" + "a" * 64), (*SPEC, "model_image", *RELEASE)),
    ("canary-gate", put("canary", "gates", 0, "min", 0.5), (*SPEC, *RELEASE)),
    ("serving", put("serving", "max_num_seqs", 7), (*SPEC, *RELEASE)),
    ("serving.admission", put("serving", "admission", "budget", 300), (*SPEC, *GATEWAY)),
    ("guards", put("guards", "pii", "mask"), (*SPEC, *GATEWAY)),
    ("rollout", put("rollout", "drain_s", 5), (*SPEC, *GATEWAY)),
    ("trust", put("trust", "min_labels", 30), (*SPEC, LEARNING)),
    ("description", put("description", "reworded"), SPEC),
    ("owner", put("owner", "team:legal-review"), SPEC),
]


@pytest.mark.parametrize(("section", "change", "expected"), SPEC_SECTIONS, ids=[s[0] for s in SPEC_SECTIONS])
def test_each_spec_section_plans_exactly_its_stages(
    sensor_instance, own_demo_repo: Path, two_models: str, tmp_path: Path, section: str, change, expected
) -> None:
    spec = f"models/{MODEL}.yaml"
    sha = commit(own_demo_repo, f"change {section} only", {spec: yaml_edit(own_demo_repo, spec, change)})
    result = tick(sensor_instance, own_demo_repo, two_models, tmp_path / "home")
    assert runs(result) == {MODEL: expected}  # the other model's spec did not change: nothing of it runs
    assert result.cursor == sha
    planned = set(expected)
    if section in ("canary-gate", "guards", "serving.admission", "serving"):  # no AWQ, no new image
        assert not planned & {"raw_weights", "verified_weights", "quantized_weights", "model_image"}
    if section in ("guards", "serving.admission", "description", "trust"):  # no canary, no vLLM restart
        assert "canary_eval" not in planned
    for request in result.run_requests:
        if request.job_name == "ship_model":
            assert sorted(planned_steps(request)) == sorted(s for s in expected if s != LEARNING)


PLATFORM_SECTIONS = [
    ("storage", put("storage", "artifacts", "artifacts-2"), SHIP_CHAIN),
    ("execution", put("execution", "target", "kubernetes"), SHIP_CHAIN),
    ("registry", put("registry", "url", "oci-layout://registry-2"), (*SPEC, "model_image", "prompt_bundle", *RELEASE)),
    ("kubernetes.gpu", put("kubernetes", "gpu", "count", 2), (*SPEC, *RELEASE)),
    ("quantize_image", put("kubernetes", "gpu", "quantize_image", "q@sha256:" + "b" * 64), (*SPEC, *QUANTIZE_ONWARD)),
    ("feedback", put("feedback", "trust_threshold", 0.8), (*SPEC, *GATEWAY, LEARNING)),
    ("gateway", put("gateway", "drain_s", 5), (*SPEC, *GATEWAY)),
    ("name", put("name", "demo-2"), SPEC),
]


@pytest.mark.parametrize(("section", "change", "expected"), PLATFORM_SECTIONS, ids=[s[0] for s in PLATFORM_SECTIONS])
def test_each_platform_section_plans_exactly_its_stages_for_every_model(
    sensor_instance, own_demo_repo: Path, two_models: str, tmp_path: Path, section: str, change, expected
) -> None:
    commit(own_demo_repo, f"platform: {section}", {"platform.yaml": yaml_edit(own_demo_repo, "platform.yaml", change)})
    result = tick(sensor_instance, own_demo_repo, two_models, tmp_path / "home")
    assert runs(result) == {MODEL: expected, SECOND: expected}


def test_an_unreadable_platform_yaml_plans_the_whole_chain(
    sensor_instance, own_demo_repo: Path, two_models: str, tmp_path: Path
) -> None:
    commit(own_demo_repo, "break platform.yaml", {"platform.yaml": "name: [not a name\n"})
    result = tick(sensor_instance, own_demo_repo, two_models, tmp_path / "home")
    assert runs(result) == {MODEL: SHIP_CHAIN, SECOND: SHIP_CHAIN}


def test_a_field_no_entry_maps_plans_the_whole_chain_with_a_warning_naming_it(
    sensor_instance, own_demo_repo: Path, two_models: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A field added to the spec without an entry in the table: the whole chain runs, and the plan says which."""
    monkeypatch.delitem(MODEL_SPEC_FEEDS, "trust")  # as if `trust` were a new section nobody mapped yet
    spec = f"models/{MODEL}.yaml"
    sha = commit(own_demo_repo, "trust", {spec: yaml_edit(own_demo_repo, spec, put("trust", "min_labels", 30))})
    done = plan(own_demo_repo, "main", two_models, 10)
    (change,) = done.commits
    assert change.commit.sha == sha
    assert change.warnings == (
        f"models/{MODEL}.yaml: no entry of the change table maps the field 'trust.min_labels'; the whole chain re-runs",
    )
    assert runs(tick(sensor_instance, own_demo_repo, two_models, tmp_path / "home")) == {MODEL: SHIP_CHAIN}


def test_every_section_of_a_spec_and_of_platform_yaml_is_in_the_table() -> None:
    """The table is complete today: a new section must be placed (until then it re-runs the whole chain)."""
    for model, table in ((ModelSpec, MODEL_SPEC_FEEDS), (PlatformConfig, PLATFORM_FEEDS)):
        assert set(model.model_fields) <= {key.split(".")[0] for key in table}, model.__name__


def test_a_rewrite_compares_the_spec_with_what_the_cursor_had(
    sensor_instance, own_demo_repo: Path, two_models: str, tmp_path: Path
) -> None:
    """After a force-push, the first new commit is compared with its parent and with the abandoned cursor."""
    spec = f"models/{MODEL}.yaml"
    abandoned = commit(own_demo_repo, "guards", {spec: yaml_edit(own_demo_repo, spec, put("guards", "pii", "mask"))})
    git(own_demo_repo, "reset", "--quiet", "--hard", two_models)
    commit(own_demo_repo, "serving", {spec: yaml_edit(own_demo_repo, spec, put("serving", "max_num_seqs", 7))})
    result = tick(sensor_instance, own_demo_repo, abandoned, tmp_path / "home")
    assert runs(result) == {MODEL: (*SPEC, *RELEASE)}  # the serving change, and the guards undone (deployment)


def test_the_docs_show_every_entry_of_the_table() -> None:
    text = (Path(__file__).parent.parent / "docs/stages.md").read_text(encoding="utf-8")
    section = text.split("### Plans by field", 1)[1].split("\n## ", 1)[0]
    for key in (*MODEL_SPEC_FEEDS, *PLATFORM_FEEDS):
        assert f"`{key}`" in section, f"docs/stages.md (Plans by field) does not show {key!r}"
