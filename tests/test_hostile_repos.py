"""Hostile platform repos: each is a ConfigError with a short, clear message, and nothing blocks or blows up.

platform.yaml and models/*.yaml are read from a working tree (load_platform), from a commit (config_at) and
from git objects (changes.SpecReader, which the repo sensor runs on every commit). The corpus: YAML aliases
nested nine deep (a "billion laughs": 10^8 values from 300 bytes), a 50 MB file, invalid UTF-8, a spec that
is a list, a key given twice, nesting deeper than Python's recursion limit, a Python tag, platform.yaml as a
folder, a spec that is a FIFO, and platform.yaml as a symlink to a file outside the repo.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from ai_platform.changes import SpecReader
from ai_platform.config import load_platform
from ai_platform.errors import ConfigError
from ai_platform.platform_repo import config_at, git

LAUGHS = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)
)
SPEC = "models/contract-reviewer.yaml"


@pytest.fixture
def repo(demo_repo: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(demo_repo, copy, ignore=shutil.ignore_patterns(".git", "hub"))
    return copy


def with_field(text: str, field: str, value: str) -> str:
    """`text` with its top-level `field` set to `value` (YAML source), and the laughs' anchors before it."""
    replaced, count = re.subn(rf"(?m)^{field}: .*$", f"{field}: {value}", text)
    assert count == 1
    return LAUGHS + replaced


def refused(repo: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_platform(repo)
    message = str(info.value)
    assert len(message) < 2000, f"a message of {len(message)} characters: {message[:300]}"
    return message


HOSTILE = {
    # name: (file, its new bytes from the old text, a fragment of the message)
    "billion laughs": ("platform.yaml", lambda t: with_field(t, "name", "*l8").encode(), "aliases"),
    "billion laughs in a spec": (SPEC, lambda t: with_field(t, "name", "*l8").encode(), "aliases"),
    "a merge key": ("platform.yaml", lambda t: (t + "\nx: &x {a: 1}\ny: {<<: *x}\n").encode(), "aliases"),
    "50 MB": ("platform.yaml", lambda t: t.encode() + b"#" * 50_000_000 + b"\n", "more than"),
    "invalid UTF-8": ("platform.yaml", lambda t: t.encode() + b"\n# \xff\xfe\n", "not UTF-8"),
    "a spec that is a list": (SPEC, lambda t: b"- a\n- b\n", "expected a mapping at the top level, got list"),
    "a key twice": (SPEC, lambda t: (t + "\ncanary: {}\n").encode(), "'canary' is given twice"),
    "a key twice, nested": (
        "platform.yaml",
        lambda t: b"name: a\nregistry: {url: x, url: y}\n",
        "'url' is given twice",
    ),
    "deep nesting": ("platform.yaml", lambda t: b"name: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested"),
    "a python tag": ("platform.yaml", lambda t: b"name: !!python/object/apply:os.system [id]\n", "invalid YAML"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_config_file_is_a_config_error(repo: Path, case: str) -> None:
    relative, new, fragment = HOSTILE[case]
    path = repo / relative
    path.write_bytes(new(path.read_text(encoding="utf-8")))
    message = refused(repo)
    assert str(path) in message and fragment in message, message


def test_platform_yaml_that_is_a_folder(repo: Path) -> None:
    (repo / "platform.yaml").unlink()
    (repo / "platform.yaml").mkdir()
    assert "not a regular file" in refused(repo)


def test_a_spec_that_is_a_fifo_is_refused_unopened(repo: Path) -> None:
    spec = repo / SPEC
    spec.unlink()
    os.mkfifo(spec)
    result: list[BaseException | None] = []

    def load() -> None:
        try:
            load_platform(repo)
            result.append(None)
        except BaseException as exc:
            result.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(60)
    if reader.is_alive():  # blocked opening the FIFO: a writer lets it go, then the test fails
        os.close(os.open(spec, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail("reading the spec blocked on a FIFO")
    (error,) = result
    assert isinstance(error, ConfigError) and "not a regular file" in str(error), error


def test_platform_yaml_as_a_symlink_out_of_the_repo(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.yaml"
    shutil.copy(repo / "platform.yaml", outside)
    (repo / "platform.yaml").unlink()
    (repo / "platform.yaml").symlink_to(outside)
    assert "outside the platform repo" in refused(repo)


IN_A_COMMIT = {
    "billion laughs": (lambda t: with_field(t, "name", "*l8"), "aliases"),
    "a key twice": (lambda t: t + "\nname: again\n", "'name' is given twice"),
    "deep nesting": (lambda t: "name: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested"),
}


@pytest.mark.parametrize("case", list(IN_A_COMMIT))
def test_a_hostile_file_in_a_commit(own_demo_repo: Path, case: str) -> None:
    """Read from git: config_at (platform.yaml) and the repo sensor's SpecReader (models/*.yaml)."""
    new, fragment = IN_A_COMMIT[case]
    for name in ("platform.yaml", SPEC):
        path = own_demo_repo / name
        path.write_text(new(path.read_text(encoding="utf-8")), encoding="utf-8")
    git(own_demo_repo, "commit", "--quiet", "-am", f"hostile: {case}")
    with pytest.raises(ConfigError, match=fragment):
        config_at(own_demo_repo, "HEAD")
    sha = git(own_demo_repo, "rev-parse", "HEAD").decode().strip()
    (spec,) = SpecReader(own_demo_repo).at(sha).values()
    assert isinstance(spec, ConfigError) and fragment in str(spec) and len(str(spec)) < 2000, spec


def test_an_admission_budget_the_rate_limiter_cannot_hold_is_refused(repo: Path) -> None:
    """The window keeps one entry per unit admitted: a budget of 10^12 let one request allocate 53 GB."""
    spec = repo / SPEC
    text = spec.read_text(encoding="utf-8")
    spec.write_text(re.sub(r"(?m)^(\s+)budget: \d+", r"\1budget: 1000000000000", text, count=1), encoding="utf-8")
    assert "serving.admission.budget: Input should be less than or equal to 1000000" in refused(repo)
