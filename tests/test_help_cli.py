"""`ai-platform --help` is complete: every option and argument says what it is, every command shows an example,
and `--version` names the installed package's version."""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

from ai_platform.cli import parser

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv/bin/ai-platform"


def commands(
    p: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser under `p` (areas and their commands), with the words that reach it."""
    yield path, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


def test_every_option_and_argument_has_help() -> None:
    missing = []
    for path, p in commands(parser()):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                listed = {choice.dest for choice in action._choices_actions}
                missing += [
                    f"{' '.join((*path, name))} (no help line)" for name in action.choices if name not in listed
                ]
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{' '.join(path) or 'ai-platform'}: {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_every_command_shows_an_example() -> None:
    leaves = [(path, p) for path, p in commands(parser()) if "handler" in p._defaults]
    assert len(leaves) > 20
    for path, p in leaves:
        text = p.format_help()
        assert "examples:\n  ai-platform " + " ".join(path) in text, f"{' '.join(path)}:\n{text}"


def test_version() -> None:
    done = subprocess.run([str(CLI), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == f"ai-platform {version('ai-platform')}\n"
