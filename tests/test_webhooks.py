"""The push receiver with webhook deliveries as GitHub, GitLab and Gitea/Forgejo send them (headers and body
shapes from each forge's documentation, signatures computed as each documents), and the git sensor it wakes:
a refused forgery, a replay, a push to another branch, an oversized body, a burst planned commit by commit,
and a lost webhook recovered by the poll."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg
import httpx
import pytest
from conftest import MODEL
from starlette.testclient import TestClient
from test_platform_repo_sensor import (
    PROMPT_CHAIN,
    closed_port,
    commit,
    edited,
    runs,
    tick,
)

from ai_platform.changes import FETCHED, POLL_S, fetch_due, local_repo
from ai_platform.platform_repo import git, resolve
from ai_platform.webhooks.marker import folder, pushed_at
from ai_platform.webhooks.receiver import create_app
from sensors.platform_repo import TICK_S, platform_repo_sensor

SECRET = b"It's a Secret to Everybody"  # GitHub's documented test vector's secret
ZERO = "0" * 40


def test_githubs_documented_signature_vector() -> None:
    # docs.github.com "Validating webhook deliveries": secret and payload above give this signature
    from ai_platform.webhooks.forges import sign

    assert sign(SECRET, b"Hello, World!") == "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def push_body(forge: str, ref: str, after: str, before: str = ZERO) -> bytes:
    """A push payload of each forge's shape (the fields the receiver reads among those the forge sends)."""
    commits = [{"id": after, "message": "prompt v2\n", "timestamp": "2026-12-06T18:00:00+00:00"}]
    if forge == "gitlab":
        payload = {
            "object_kind": "push",
            "event_name": "push",
            "before": before,
            "after": after,
            "ref": ref,
            "ref_protected": True,
            "checkout_sha": after,
            "user_username": "reviewer",
            "project": {"path_with_namespace": "ml/platform", "default_branch": "main"},
            "commits": commits,
            "total_commits_count": 1,
        }
    else:
        payload = {
            "ref": ref,
            "before": before,
            "after": after,
            "compare_url": "https://forge.example/ml/platform/compare/a...b",
            "commits": commits,
            "head_commit": commits[0],
            "repository": {"full_name": "ml/platform", "default_branch": "main"},
            "pusher": {"login": "reviewer"},
        }
    return json.dumps(payload).encode()


def headers(forge: str, body: bytes, secret: bytes = SECRET, delivery: str | None = None) -> dict[str, str]:
    delivery = delivery or str(uuid.uuid4())
    signature = hmac.new(secret, body, hashlib.sha256).hexdigest()
    if forge == "github":
        return {
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": delivery,
            "X-GitHub-Hook-ID": "292430182",
            "X-Hub-Signature-256": f"sha256={signature}",
            "User-Agent": "GitHub-Hookshot/044aadd",
            "Content-Type": "application/json",
        }
    if forge == "gitlab":
        return {
            "X-Gitlab-Event": "Push Hook",
            "X-Gitlab-Token": secret.decode(),
            "X-Gitlab-Event-UUID": str(uuid.uuid4()),
            "Idempotency-Key": delivery,
            "X-Gitlab-Instance": "https://gitlab.example",
            "User-Agent": "GitLab/17.6.0",
            "Content-Type": "application/json",
        }
    return {  # Forgejo sends its own headers and Gitea's (and GitHub's and Gogs' event names)
        "X-Forgejo-Event": "push",
        "X-Forgejo-Delivery": delivery,
        "X-Forgejo-Signature": signature,
        "X-Gitea-Event": "push",
        "X-Gitea-Delivery": delivery,
        "X-Gitea-Signature": signature,
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": delivery,
        "Content-Type": "application/json",
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def client(home: Path) -> TestClient:
    return TestClient(create_app(home, "main", SECRET, max_bytes=64 * 1024))


def counted(client: TestClient, forge: str, outcome: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        ours = line.startswith("ai_platform_webhook_deliveries_total{") and f'forge="{forge}"' in line
        if ours and f'outcome="{outcome}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


FORGES = ("github", "gitlab", "gitea")
SHA = "bffeb74224043ba2feb48d137756c8a9331c449a"


@pytest.mark.parametrize("forge", FORGES)
def test_a_signed_push_to_the_branch_is_marked(client: TestClient, home: Path, forge: str) -> None:
    body = push_body(forge, "refs/heads/main", SHA)
    answer = client.post(f"/hooks/{forge}", content=body, headers=headers(forge, body))
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"status": "accepted", "branch": "main", "after": SHA, "deleted": False}
    marked = json.loads((folder(home) / "pushed").read_text())
    assert marked["after"] == SHA and marked["forge"] == forge and pushed_at(home) is not None
    assert counted(client, forge, "accepted") == 1


@pytest.mark.parametrize("forge", FORGES)
def test_a_forgery_is_refused_and_marks_nothing(client: TestClient, home: Path, forge: str) -> None:
    body = push_body(forge, "refs/heads/main", SHA)
    forged = client.post(f"/hooks/{forge}", content=body, headers=headers(forge, body, secret=b"guessed"))
    assert forged.status_code == 401 and forged.json()["reason"] == "bad_signature"
    # a body changed after signing: the signature was the real one, over other bytes
    signed = headers(forge, body)
    tampered = body.replace(SHA.encode(), b"0" * 39 + b"1")
    answer = client.post(f"/hooks/{forge}", content=tampered, headers=signed)
    if forge == "gitlab":  # GitLab's token signs no body: a tampered body with the right token is taken
        assert answer.status_code == 202
        (folder(home) / "pushed").unlink()
    else:
        assert answer.status_code == 401 and answer.json()["reason"] == "bad_signature"
    unsigned = {k: v for k, v in headers(forge, body).items() if "Signature" not in k and "Token" not in k}
    bare = client.post(f"/hooks/{forge}", content=body, headers=unsigned)
    assert bare.status_code == 401 and bare.json()["reason"] == "unsigned"
    assert pushed_at(home) is None
    assert counted(client, forge, "bad_signature") == (1 if forge == "gitlab" else 2)
    assert counted(client, forge, "unsigned") == 1


def test_forgejos_own_signature_is_the_one_checked(client: TestClient, home: Path) -> None:
    body = push_body("gitea", "refs/heads/main", SHA)
    sent = headers("gitea", body) | {"X-Forgejo-Signature": "0" * 64}  # a good Gitea one does not rescue it
    assert client.post("/hooks/gitea", content=body, headers=sent).status_code == 401
    gitea_only = {k: v for k, v in headers("gitea", body).items() if not k.startswith("X-Forgejo")}
    assert client.post("/hooks/gitea", content=body, headers=gitea_only).status_code == 202


@pytest.mark.parametrize("forge", FORGES)
def test_a_replayed_delivery_is_refused_even_after_a_restart(client: TestClient, home: Path, forge: str) -> None:
    body = push_body(forge, "refs/heads/main", SHA)
    sent = headers(forge, body, delivery="f6266f16-1bf3-46a5-9ea4-602e06ead473")
    assert client.post(f"/hooks/{forge}", content=body, headers=sent).status_code == 202
    again = client.post(f"/hooks/{forge}", content=body, headers=sent)
    assert again.status_code == 409 and again.json()["reason"] == "replayed"
    restarted = TestClient(create_app(home, "main", SECRET))
    assert restarted.post(f"/hooks/{forge}", content=body, headers=sent).status_code == 409
    assert counted(client, forge, "replayed") == 1


@pytest.mark.parametrize("forge", FORGES)
def test_a_push_to_another_branch_or_a_ping_is_taken_and_ignored(client: TestClient, home: Path, forge: str) -> None:
    body = push_body(forge, "refs/heads/feature/x", SHA)
    answer = client.post(f"/hooks/{forge}", content=body, headers=headers(forge, body))
    assert answer.status_code == 200 and answer.json()["status"] == "ignored"
    tag = push_body(forge, "refs/tags/v1", SHA)
    assert client.post(f"/hooks/{forge}", content=tag, headers=headers(forge, tag)).status_code == 200
    assert pushed_at(home) is None and counted(client, forge, "other_branch") == 2
    if forge != "gitlab":
        ping = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
        sent = headers(forge, ping) | {"X-GitHub-Event": "ping", "X-Forgejo-Event": "ping", "X-Gitea-Event": "ping"}
        assert client.post(f"/hooks/{forge}", content=ping, headers=sent).json()["status"] == "ignored"
        assert counted(client, forge, "not_a_push") == 1


@pytest.mark.parametrize("forge", FORGES)
def test_an_oversized_body_is_refused_before_it_is_read(client: TestClient, home: Path, forge: str) -> None:
    body = push_body(forge, "refs/heads/main", SHA)[:-1] + b', "padding": "' + b"x" * 70_000 + b'"}'
    answer = client.post(f"/hooks/{forge}", content=body, headers=headers(forge, body))
    assert answer.status_code == 413 and answer.json()["reason"] == "too_large"

    def chunks():  # no Content-Length: the limit holds while streaming
        for i in range(0, len(body), 8192):
            yield body[i : i + 8192]

    streamed = client.post(f"/hooks/{forge}", content=chunks(), headers=headers(forge, body))
    assert streamed.status_code == 413
    assert pushed_at(home) is None and counted(client, forge, "too_large") == 2


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"not json", "not JSON"),
        (json.dumps({"ref": "refs/heads/main", "after": "HEAD; rm -rf /"}).encode(), "not a commit id"),
        (json.dumps({"after": SHA}).encode(), "without a ref"),
    ],
)
def test_a_signed_but_unreadable_push_is_a_400(client: TestClient, body: bytes, why: str) -> None:
    answer = client.post("/hooks/github", content=body, headers=headers("github", body))
    assert answer.status_code == 400 and why in answer.json()["error"]


def test_no_delivery_id_is_refused_since_a_replay_could_not_be_told(client: TestClient) -> None:
    body = push_body("github", "refs/heads/main", SHA)
    sent = {k: v for k, v in headers("github", body).items() if k != "X-GitHub-Delivery"}
    answer = client.post("/hooks/github", content=body, headers=sent)
    assert answer.status_code == 400 and "delivery id" in answer.json()["error"]


# -- the sensor it wakes


@pytest.fixture
def origin(own_demo_repo: Path, tmp_path: Path) -> Path:
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(own_demo_repo), str(bare))
    git(own_demo_repo, "remote", "add", "forge", str(bare))
    return bare


def prompt_commit(repo: Path, n: int) -> str:
    prompt = "prompts/contract_review.prompt"
    return commit(repo, f"prompt v{n}", {prompt: edited(repo, prompt, "system:", f'description: "v{n}"\nsystem:')})


def test_the_sensor_ticks_often_enough_for_a_webhook_to_matter() -> None:
    assert TICK_S <= 5 < POLL_S
    assert platform_repo_sensor.minimum_interval_seconds == TICK_S


def test_a_webhook_makes_the_next_tick_fetch_and_a_lost_one_costs_one_poll(
    sensor_instance, own_demo_repo: Path, origin: Path, home: Path
) -> None:
    source = f"file://{origin}"
    base = resolve(own_demo_repo).sha
    assert tick(sensor_instance, source, base, home).skip_message.startswith("main still at")
    assert not fetch_due(source, home)  # just fetched; no push marked

    # A push whose webhook was lost: the ticks within the poll interval do not fetch, so they plan nothing...
    lost = prompt_commit(own_demo_repo, 2)
    git(own_demo_repo, "push", "--quiet", "forge", "main")
    assert isinstance(tick(sensor_instance, source, base, home), dg.SkipReason)
    # ...and the first tick after it fetches and plans the commit: one poll late, never lost.
    stamp = local_repo(source, home) / FETCHED
    then = time.time() - POLL_S - 1
    os.utime(stamp, (then, then))
    late = tick(sensor_instance, source, base, home)
    assert runs(late) == {MODEL: PROMPT_CHAIN} and late.cursor == lost

    # A push with its webhook: the very next tick fetches.
    client = TestClient(create_app(home, "main", SECRET))
    pushed = prompt_commit(own_demo_repo, 3)
    git(own_demo_repo, "push", "--quiet", "forge", "main")
    body = push_body("github", "refs/heads/main", pushed, before=lost)
    assert client.post("/hooks/github", content=body, headers=headers("github", body)).status_code == 202
    assert fetch_due(source, home)
    result = tick(sensor_instance, source, lost, home)
    assert runs(result) == {MODEL: PROMPT_CHAIN} and result.cursor == pushed
    assert not fetch_due(source, home)  # the mark is consumed by the fetch that began after it


def test_a_burst_of_pushes_plans_each_commit_once(
    sensor_instance, own_demo_repo: Path, origin: Path, home: Path
) -> None:
    source = f"file://{origin}"
    base = resolve(own_demo_repo).sha
    tick(sensor_instance, source, base, home)
    client = TestClient(create_app(home, "main", SECRET))
    shas, before = [], base
    for n in range(2, 6):
        sha = prompt_commit(own_demo_repo, n)
        git(own_demo_repo, "push", "--quiet", "forge", "main")
        body = push_body("gitlab", "refs/heads/main", sha, before=before)
        assert client.post("/hooks/gitlab", content=body, headers=headers("gitlab", body)).status_code == 202
        shas.append(sha)
        before = sha
    result = tick(sensor_instance, source, base, home)
    assert [r.run_key for r in result.run_requests] == [f"{sha}:{MODEL}" for sha in shas]
    assert result.cursor == shas[-1]
    again = tick(sensor_instance, source, result.cursor, home)  # the marks are spent: nothing planned twice
    assert isinstance(again, dg.SkipReason)


def test_a_local_hook_marks_pushes_to_a_bare_repository(own_demo_repo: Path, origin: Path, home: Path) -> None:
    cli = [sys.executable, "-m", "ai_platform.cli"]
    done = subprocess.run([*cli, "webhook", "hook", str(origin), "--home", str(home)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    hook = origin / "hooks" / "post-receive"
    assert hook.is_file() and os.access(hook, os.X_OK)
    hook.write_text(hook.read_text().replace("ai-platform webhook", f"{' '.join(cli)} webhook"))
    prompt_commit(own_demo_repo, 2)
    git(own_demo_repo, "push", "--quiet", "forge", "main")
    assert pushed_at(home) is not None
    assert fetch_due(f"file://{origin}", home)


def test_the_receiver_on_a_port(home: Path, tmp_path: Path) -> None:
    port = closed_port()  # free now: the receiver takes it
    secret_file = tmp_path / "secret"
    secret_file.write_bytes(SECRET + b"\n")  # a Secret's file ends in a newline more often than not
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ai_platform.cli",
            "webhook",
            "serve",
            "--home",
            str(home),
            "--secret-file",
            str(secret_file),
            "--port",
            str(port),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        body = push_body("gitea", "refs/heads/main", SHA)
        assert httpx.post(f"{url}/hooks/gitea", content=body, headers=headers("gitea", body)).status_code == 202
        assert 'outcome="accepted"' in httpx.get(f"{url}/metrics").text
    finally:
        server.terminate()
        server.wait(10)


def test_no_secret_is_a_usage_error(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AI_PLATFORM_WEBHOOK_SECRET"}
    done = subprocess.run(
        [sys.executable, "-m", "ai_platform.cli", "webhook", "serve", "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 1 and "no webhook secret" in done.stderr


def test_the_clusters_receiver_shares_the_sensors_home_and_its_service_reaches_it() -> None:
    """deploy/helm/dagster-values.yaml runs the receiver beside the code location (whose sensor reads the marker),
    and deploy/push-receiver.yaml selects that pod by the labels the Dagster chart gives it (its template
    deployment-user.yaml: `component: user-deployments`, `deployment: <name>`)."""
    import yaml
    from k8s_schema import validate_strictly

    root = Path(__file__).resolve().parent.parent
    values = yaml.safe_load((root / "deploy/helm/dagster-values.yaml").read_text())
    (location,) = values["dagster-user-deployments"]["deployments"]
    (receiver,) = location["sidecarContainers"]
    home = next(m for m in location["volumeMounts"] if m["name"] == "home")
    assert {"name": "home", "emptyDir": {}} in location["volumes"]
    assert {"name": "home", "mountPath": home["mountPath"]} in receiver["volumeMounts"]
    assert receiver["args"][:3] == ["ai-platform", "webhook", "serve"]
    assert receiver["image"] == f"{location['image']['repository']}:{location['image']['tag']}"
    (secret,) = receiver["env"]
    assert secret["name"] == "AI_PLATFORM_WEBHOOK_SECRET" and "secretKeyRef" in secret["valueFrom"]
    assert not any("secret" in v for v in location["volumes"])  # run pods copy the volumes: never the secret
    service = yaml.safe_load((root / "deploy/push-receiver.yaml").read_text())
    validate_strictly(service)
    assert service["spec"]["selector"] == {"component": "user-deployments", "deployment": location["name"]}
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] in {p["name"] for p in receiver["ports"]}
    assert receiver["readinessProbe"]["httpGet"]["path"] == "/healthz"
