"""One git-sensor tick on a 10,000-commit backlog against reading the whole backlog, in one run.

A repo whose platform config and model spec are followed by N commits (default
10,000) that each edit the model's prompt, written with one `git fast-import`.
Times, from a cursor N commits back:
  ours        one tick of the real sensor: rev-list of the backlog, one `git log`
              for the first MAX_COMMITS_PER_TICK commits, specs read once per blob,
              RunRequests built (the cap bounds the work, whatever N is)
  whole log   the unbounded baseline: `git log --name-only` over the whole backlog
  per commit  `git diff-tree` once per commit for the same capped batch
Target: a tick well under Dagster's 60 s sensor timeout.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dagster as dg  # noqa: E402

from ai_platform.platform_repo import git, resolve  # noqa: E402
from assets.resources import PlatformRepoResource  # noqa: E402
from benchmarks.support import SMOKE_HELP  # noqa: E402
from sensors.platform_repo import MAX_COMMITS_PER_TICK, platform_repo_sensor  # noqa: E402

SPEC = (
    "name: tiny\nsource: {kind: local, path: hub/tiny}\nprompts: [p]\n"
    "canary: {evals: [evals/e.jsonl], gates: [{metric: schema_valid_rate, min: 0.9}]}\n"
)
TIMEOUT_S = 60.0


def build(repo: Path, count: int) -> str:
    git(repo.parent, "init", "--quiet", "--initial-branch=main", str(repo))
    files = {
        "platform.yaml": "name: tiny\n",
        "models/tiny.yaml": SPEC,
        "prompts/p.prompt": "system: hi\n",
        "evals/e.jsonl": "{}\n",
    }
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    git(repo, "add", "--all")
    git(repo, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "--quiet", "-m", "start")
    start = resolve(repo).sha
    chunks = []
    for i in range(count):
        message, content = f"prompt edit {i}".encode(), f"system: hello {i}\n".encode()
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(b"author b <b@example.invalid> %d +0000\n" % (1767603600 + i))
        chunks.append(b"committer b <b@example.invalid> %d +0000\n" % (1767603600 + i))
        chunks.append(b"data %d\n%s\n" % (len(message), message))
        if i == 0:
            chunks.append(b"from %s\n" % start.encode())
        chunks.append(b"M 100644 inline prompts/p.prompt\ndata %d\n%s\n" % (len(content), content))
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(chunks), check=True)
    git(repo, "reset", "--quiet", "--hard", "main")
    return start


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.commits = 2 * MAX_COMMITS_PER_TICK  # still more than one tick's cap
    with tempfile.TemporaryDirectory() as tmp, dg.instance_for_test() as instance:
        repo = Path(tmp) / "platform"
        build_s, start = timed(lambda: build(repo, args.commits))
        resources = {"platform_repo": PlatformRepoResource(path=str(repo), home=str(Path(tmp) / "home"))}

        def tick():
            return platform_repo_sensor(dg.build_sensor_context(instance=instance, cursor=start, resources=resources))

        tick()  # warm the OS page cache and imports, as a long-running daemon has them
        ours_s, result = timed(tick)
        whole_s, _ = timed(lambda: git(repo, "log", "--reverse", "--name-only", "--format=%H", f"{start}..main"))
        batch = git(repo, "rev-list", "--reverse", f"{start}..main").decode().split()[:MAX_COMMITS_PER_TICK]
        per_s, _ = timed(lambda: [git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", s) for s in batch])
    runs = len(result.run_requests)
    print(f"{args.commits} commits written by git fast-import in {build_s:.2f} s; cap {MAX_COMMITS_PER_TICK}/tick")
    print(f"  ours: one tick             {ours_s:7.3f} s   {runs} RunRequests, cursor advanced {runs} commits")
    print(f"  baseline: whole log (unbounded)  {whole_s:7.3f} s   every commit's paths, none planned yet")
    print(f"  baseline: diff-tree per commit   {per_s:7.3f} s   the same {len(batch)} commits, one git call each")
    print(f"  ratio ours / whole log {ours_s / whole_s:.2f}x, ours / diff-tree per commit {ours_s / per_s:.2f}x")
    verdict = "met" if ours_s < TIMEOUT_S / 10 else "MISSED"
    print(f"  tick vs the {TIMEOUT_S:.0f} s sensor timeout: {ours_s / TIMEOUT_S:.1%} (target < 10%: {verdict})")


if __name__ == "__main__":
    main()
