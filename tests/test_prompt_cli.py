"""`ai-platform prompts compile|render`: exit codes, stderr lines, --json, --out.

The CLI's `main` runs in this process (its start, importing xgrammar and torch for the
schema check, costs 2 s a time); the first test runs it as a real subprocess, so the
entry point, its exit code and a traceback-free stderr are checked end to end too."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ai_platform.cli import main

GOLDEN = Path(__file__).parent / "golden" / "prompts"
REFERENCE = GOLDEN / "contract_review.prompt"
ROOT = Path(__file__).resolve().parent.parent
_CWD = threading.Lock()


def run(*args: str, cwd: Path = ROOT, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`ai-platform prompts ARGS` in `cwd`: its exit code, stdout and stderr."""
    argv = ["prompts", *args]
    if process:
        command = [sys.executable, "-m", "ai_platform.cli", *argv]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)
    out, err = io.StringIO(), io.StringIO()
    with _CWD, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        before = os.getcwd()
        os.chdir(cwd)
        try:
            code = main(argv)
        finally:
            os.chdir(before)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


@pytest.fixture
def prompts(tmp_path: Path) -> dict[str, Path]:
    files = {
        "good": REFERENCE.read_bytes(),
        "bad": b'user: "x"\noutput_schema: {"a": "strng"}\n',
        "other": b'name: "other_name"\nsystem: "hi"\nuser: "{{q}}"\n',
        "unused": b'input_schema: {"a": "string", "b": "string"}\nuser: "{{a}}"\n',
    }
    paths = {}
    for stem, data in files.items():
        paths[stem] = tmp_path / f"{stem}.prompt"
        paths[stem].write_bytes(data)
    return paths


def _version(path: Path) -> str:
    from ai_platform.prompts.compiler import compile_file

    return compile_file(path).version


def test_one_bad_file_fails_the_run_and_the_good_ones_are_still_reported(prompts: dict[str, Path]) -> None:
    good, bad, other = (str(prompts[k]) for k in ("good", "bad", "other"))
    done = run("compile", good, bad, other, process=True)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [f'{bad}:2:22: unknown type "strng"; did you mean "string"?']
    assert done.stdout.splitlines() == [
        f"{good}: good sha256:{_version(prompts['good'])}",
        f"{other}: other_name sha256:{_version(prompts['other'])}",
        "2 compiled, 1 failed",
    ]


def test_error_line_uses_the_path_as_given(prompts: dict[str, Path]) -> None:
    done = run("compile", "bad.prompt", cwd=prompts["bad"].parent)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ['bad.prompt:2:22: unknown type "strng"; did you mean "string"?']


def test_all_good_exits_zero(prompts: dict[str, Path]) -> None:
    done = run("compile", str(prompts["good"]), str(prompts["other"]))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines()[-1] == "2 compiled, 0 failed"


def test_warnings_go_to_stderr_and_do_not_fail(prompts: dict[str, Path]) -> None:
    unused = str(prompts["unused"])
    done = run("compile", unused)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [f"{unused}:1:31: warning: variable 'b' is declared but no message uses it"]


def test_json_output_shape(prompts: dict[str, Path]) -> None:
    good, bad, unused = (str(prompts[k]) for k in ("good", "bad", "unused"))
    done = run("compile", good, bad, unused, "--json")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result == {
        "ok": False,
        "prompts": [
            {"path": good, "ok": True, "name": "good", "version": _version(prompts["good"]), "warnings": []},
            {"path": bad, "ok": False, "error": f'{bad}:2:22: unknown type "strng"; did you mean "string"?'},
            {
                "path": unused,
                "ok": True,
                "name": "unused",
                "version": _version(prompts["unused"]),
                "warnings": [f"{unused}:1:31: warning: variable 'b' is declared but no message uses it"],
            },
        ],
    }


def test_out_dir_writes_the_canonical_document(prompts: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out" / "nested"
    done = run("compile", str(prompts["good"]), str(prompts["other"]), "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)["prompts"]
    assert sorted(p.name for p in out.iterdir()) == ["good.json", "other_name.json"]
    for entry in entries:
        written = Path(entry["out"]).read_bytes()
        assert Path(entry["out"]).parent == out
        body = written.removesuffix(b"\n")
        document = json.loads(body)
        canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
        assert body == canonical
        assert hashlib.sha256(body).hexdigest() == entry["version"]
        assert document["source"]["path"] == entry["path"]


def test_out_file_bytes_hash_to_the_version(prompts: dict[str, Path], tmp_path: Path) -> None:
    done = run("compile", str(prompts["good"]), "--out", str(tmp_path), "--json")
    entry = json.loads(done.stdout)["prompts"][0]
    assert hashlib.sha256(Path(entry["out"]).read_bytes()).hexdigest() == entry["version"]


def test_unreadable_file_is_a_positioned_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.prompt")
    done = run("compile", missing)
    assert done.returncode == 1
    assert done.stderr.startswith(f"{missing}:1:1: cannot read")
    assert "Traceback" not in done.stderr


def test_render_prints_the_messages(prompts: dict[str, Path]) -> None:
    done = run("render", str(prompts["other"]), "--var", "q=what about {{q}}?")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == ["--- system", "hi", "--- user", "what about {{q}}?"]
    assert "--- request body" in lines


def test_render_json_body(prompts: dict[str, Path]) -> None:
    done = run("render", str(REFERENCE), "--var", "input_pdf_text=甲方应于三十日内付款", "--model", "m1", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["version"] == _version(REFERENCE)
    body = result["body"]
    assert body["model"] == "m1"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "甲方应于三十日内付款"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True


def test_render_reads_typed_variables_as_json(tmp_path: Path) -> None:
    path = tmp_path / "typed.prompt"
    path.write_bytes(b'input_schema: {"n": "integer", "tags": ["string"]}\nuser: "{{n}} {{tags}}"\n')
    done = run("render", str(path), "--var", "n=3", "--var", 'tags=["a", "b"]', "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["body"]["messages"] == [{"role": "user", "content": '3 ["a","b"]'}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "error: contract_review: missing variable 'input_pdf_text'"),
        (["--var", "input_pdf_text=x", "--var", "nope=1"], "error: contract_review: unknown variable 'nope'"),
        (["--var", "input_pdf_text"], "error: --var 'input_pdf_text': expected NAME=VALUE"),
    ],
    ids=["missing", "unknown", "no-equals"],
)
def test_render_errors_exit_one_without_traceback(args: list[str], message: str) -> None:
    done = run("render", str(REFERENCE), *args)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith(message)
    assert "Traceback" not in done.stderr


def test_render_of_a_broken_prompt_reports_its_position(prompts: dict[str, Path]) -> None:
    bad = str(prompts["bad"])
    done = run("render", bad)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f'error: {bad}:2:22: unknown type "strng"; did you mean "string"?']
