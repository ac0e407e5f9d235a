"""`ai-platform`: one entry point, subcommands per area.

Each area is a module of this package with its handlers and an `add(areas)` that
registers its subcommands.

Every command exits 0 on success and 1 on an expected failure, printing
`error: <message>` on stderr and no traceback; `--json` prints a
machine-readable result on stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from ai_platform.cli import (
    config,
    demo,
    feedback,
    guard,
    image,
    keys,
    prompts,
    rollout,
    runtime,
    warehouse,
    webhook,
    weights,
)
from ai_platform.cli.common import epilog
from ai_platform.errors import PlatformError

AREAS = (demo, config, warehouse, weights, prompts, image, guard, feedback, rollout, keys, runtime, webhook)


def _version() -> str:
    try:
        return version("ai-platform")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="ai-platform",
        description=(__doc__ or "").splitlines()[0],
        **epilog("ai-platform config validate demo/platform", "ai-platform rollout stop --help"),
    )
    top.add_argument("--version", action="version", version=f"ai-platform {_version()}")
    areas = top.add_subparsers(dest="area", required=True, metavar="AREA")
    for area in AREAS:
        area.add(areas)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code = args.handler(args)
    except PlatformError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `| head` closed stdout: not an error of ours, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code or 0
