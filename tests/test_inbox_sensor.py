"""The inbox sensor against a real git repo, a real inbox folder and a real Dagster instance."""

from __future__ import annotations

import os
import time
from pathlib import Path

import dagster as dg
import pytest

from ai_platform.feedback.inbox import files_in, run_key, scan
from ai_platform.feedback.ingest import ingest
from ai_platform.platform_repo import git
from ai_platform.warehouse import Warehouse
from assets.resources import PlatformRepoResource
from sensors.inbox import inbox_sensor

HEADER = "generation_id,reviewer,label,labeled_at\n"


def platform_repo(path: Path, inbox: str = "inbox") -> Path:
    path.mkdir()
    (path / "platform.yaml").write_text(f"name: demo\nfeedback:\n  inbox: {inbox}\n")
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "add", "platform.yaml")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    git(path, "commit", "--quiet", "--no-gpg-sign", "-m", "platform", env=env)
    return path


def settled(path: Path, text: str, age_s: float = 60) -> Path:
    """A label file written a while ago (the sensor leaves files changed in the last seconds alone)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    past = time.time() - age_s
    os.utime(path, (past, past))
    return path


@pytest.fixture
def setup(tmp_path: Path) -> tuple[dict[str, PlatformRepoResource], Path]:
    repo = platform_repo(tmp_path / "platform")
    home = tmp_path / "home"
    return {"platform_repo": PlatformRepoResource(path=str(repo), home=str(home))}, home / "inbox"


def tick(resources: dict[str, PlatformRepoResource], instance: dg.DagsterInstance, cursor: str | None):
    return inbox_sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources))


def skip_message(result: object) -> str:
    if isinstance(result, dg.SensorResult):
        assert not result.run_requests
        result = result.skip_reason
    assert isinstance(result, dg.SkipReason)
    return str(result.skip_message)


def test_new_and_changed_files_request_a_run(setup) -> None:
    resources, inbox = setup
    assert inbox_sensor.job_name == "ingest_feedback"
    with dg.instance_for_test() as instance:
        assert "does not exist yet" in skip_message(tick(resources, instance, None))
        inbox.mkdir(parents=True)
        (inbox / "notes.txt").write_text("not labels")
        assert "has no label files" in skip_message(tick(resources, instance, None))

        a = settled(inbox / "2026-01-reviewer-a.csv", HEADER + "gen-001,ana,correct,2026-01-06T10:00:00Z\n")
        first = tick(resources, instance, None)
        (request,) = first.run_requests
        assert request.run_key == run_key(scan(inbox).files)
        assert request.tags["ai_platform/inbox_new_files"] == "1"
        assert [f.name for f in files_in(first.cursor)] == ["2026-01-reviewer-a.csv"]

        assert "no new or changed label files" in skip_message(tick(resources, instance, first.cursor))

        os.utime(a, (time.time() - 30, time.time() - 30))  # touched, same content: nothing new
        touched = tick(resources, instance, first.cursor)
        assert "no new or changed label files" in skip_message(touched)
        assert isinstance(touched, dg.SensorResult) and touched.cursor != first.cursor

        settled(a, HEADER + "gen-001,ana,correct,2026-01-06T10:00:00Z\ngen-002,ana,correct,2026-01-06T10:01:00Z\n")
        settled(inbox / "sub" / "b.jsonl", '{"generation_id": "gen-003"}\n')
        settled(inbox / ".hidden" / "c.csv", HEADER)  # hidden folders are not the inbox's
        changed = tick(resources, instance, touched.cursor)
        (request,) = changed.run_requests
        assert request.run_key not in (first.run_requests[0].run_key,)
        assert request.tags["ai_platform/inbox_new_files"] == "2"
        assert [f.name for f in files_in(changed.cursor)] == ["2026-01-reviewer-a.csv", "sub/b.jsonl"]

        # the same tick again asks for the same run (Dagster drops a repeated run key)
        again = tick(resources, instance, touched.cursor)
        assert again.run_requests[0].run_key == request.run_key


def test_a_renamed_copy_and_a_file_still_being_written(setup) -> None:
    resources, inbox = setup
    with dg.instance_for_test() as instance:
        a = settled(inbox / "a.csv", HEADER + "gen-001,ana,correct,2026-01-06T10:00:00Z\n")
        first = tick(resources, instance, None)
        assert len(first.run_requests) == 1

        settled(inbox / "a-copy.csv", a.read_text())  # same bytes under another name: ingest would add nothing
        assert "no new or changed" in skip_message(tick(resources, instance, first.cursor))

        (inbox / "fresh.csv").write_text(HEADER)  # modified just now: left for a later tick
        message = skip_message(tick(resources, instance, first.cursor))
        assert "1 still being written" in message
        os.utime(inbox / "fresh.csv", (time.time() - 60, time.time() - 60))
        assert len(tick(resources, instance, first.cursor).run_requests) == 1


def test_absolute_inbox_and_an_unreadable_repo(tmp_path: Path) -> None:
    absolute = tmp_path / "drop"
    repo = platform_repo(tmp_path / "platform", inbox=str(absolute))
    resources = {"platform_repo": PlatformRepoResource(path=str(repo), home=str(tmp_path / "home"))}
    with dg.instance_for_test() as instance:
        settled(absolute / "x.parquet", "not really parquet, but new")
        assert len(tick(resources, instance, None).run_requests) == 1

        broken = {"platform_repo": PlatformRepoResource(path=str(tmp_path / "nowhere"), home=str(tmp_path / "home"))}
        assert "cannot read the inbox setting" in skip_message(tick(broken, instance, "[]"))

        (repo / "platform.yaml").write_text("name: demo\nfeedback: {inbox: x, trust: 2}\n")
        git(
            repo,
            "commit",
            "--quiet",
            "--no-gpg-sign",
            "-am",
            "typo",
            env={
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@e",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@e",
            },
        )
        assert "feedback.trust: unknown field" in skip_message(tick(resources, instance, "[]"))


def test_a_garbled_cursor_starts_over(setup) -> None:
    resources, inbox = setup
    settled(inbox / "a.csv", HEADER)
    with dg.instance_for_test() as instance:
        assert len(tick(resources, instance, "not json").run_requests) == 1


def test_files_the_warehouse_already_ingested_are_not_new_to_a_fresh_instance(setup) -> None:
    """`make ui` after `make demo`: a new instance's sensor starts with an empty cursor, and must not ask to
    ingest again what the warehouse already has (it asked, and the UI showed "accepted 0, duplicates 498")."""
    resources, inbox = setup
    done = settled(inbox / "reviewed.csv", HEADER + "gen-001,ana,correct,2026-01-06T10:00:00Z\n")
    ingest([done], Warehouse(inbox.parent / "warehouse.duckdb"))
    with dg.instance_for_test() as instance:
        first = tick(resources, instance, None)
        assert "1 already ingested" in skip_message(first)
        settled(inbox / "later.csv", HEADER + "gen-002,ana,wrong,2026-01-07T10:00:00Z\n")
        (request,) = tick(resources, instance, first.cursor).run_requests
        assert request.tags["ai_platform/inbox_new_files"] == "1"


def test_symlinks_and_fifos_in_the_inbox_are_refused_never_opened(setup, tmp_path: Path) -> None:
    """Whoever can drop a file in the inbox must not make the pipeline read any other file on the host: a symlink
    (to a file or a folder) or a FIFO (whose open would block the tick) is skipped and reported, never opened."""
    resources, inbox = setup
    secret = settled(tmp_path / "secret.csv", HEADER + "gen-999,root,correct,TOP-SECRET\n")
    outside = tmp_path / "outside"
    settled(outside / "more.csv", HEADER + "gen-998,root,correct,ALSO-SECRET\n")
    good = settled(inbox / "good.csv", HEADER + "gen-001,ana,correct,2026-01-06T10:00:00Z\n")
    (inbox / "stolen.csv").symlink_to(secret)
    (inbox / "linked").symlink_to(outside, target_is_directory=True)
    os.mkfifo(inbox / "pipe.csv")

    seen = scan(inbox, settle_s=0)  # a FIFO opened here would block this call forever
    assert [f.name for f in seen.files] == ["good.csv"]
    assert seen.refused == [
        "linked: a symlink, not a regular file: skipped, never opened",
        "pipe.csv: a FIFO, not a regular file: skipped, never opened",
        "stolen.csv: a symlink, not a regular file: skipped, never opened",
    ]
    warehouse = Warehouse(tmp_path / "warehouse.duckdb")
    ingest([inbox / f.name for f in seen.files], warehouse)  # what ingest_feedback does with the scan
    _, rows = warehouse.query("SELECT count(*) FROM feedback_quarantine WHERE raw LIKE '%SECRET%'")
    assert rows == [(0,)]
    assert good.is_file()

    with dg.instance_for_test() as instance:
        first = tick(resources, instance, None)
        assert first.run_requests[0].tags["ai_platform/inbox_new_files"] == "1"
        message = skip_message(tick(resources, instance, first.cursor))
        assert "3 refused (not regular files): linked, pipe.csv, stolen.csv" in message
