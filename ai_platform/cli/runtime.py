"""`ai-platform runtime`: what this machine's vLLM can serve."""

from __future__ import annotations

import argparse
from pathlib import Path

from ai_platform.cli.common import Areas, command, emit


def runtime_show(args: argparse.Namespace) -> None:
    from ai_platform.serving.runtime import ALL_SCHEMES, probe, title
    from ai_platform.serving.vllm import SERVE_PYTHON

    runtime = probe(Path(args.python) if args.python else SERVE_PYTHON)
    schemes = {s: runtime.missing(s) for s in ALL_SCHEMES}
    lines = [runtime.describe()]
    lines += [
        f"  {'serves ' if why is None else 'cannot '} {title(s)}{'' if why is None else ': ' + why}"
        for s, why in schemes.items()
    ]
    emit(
        args,
        {
            **runtime.as_record(),
            "serves": [s for s, why in schemes.items() if why is None],
            "missing": {s: why for s, why in schemes.items() if why},
        },
        "\n".join(lines),
    )


def add(areas: Areas) -> None:
    runtime = areas.add_parser("runtime", help="what this machine's vLLM can serve").add_subparsers(
        dest="command", required=True
    )
    p = command(
        runtime,
        "show",
        runtime_show,
        "probe the serve environment: kernel library, quantization ops, the schemes it serves",
        ("ai-platform runtime show", "ai-platform runtime show --python /opt/vllm/bin/python --json"),
    )
    p.add_argument("--python", help="the serve environment's interpreter (default: .venvs/serve/bin/python)")
