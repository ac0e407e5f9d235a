"""`ai-platform demo`: the offline demo platform repo."""

from __future__ import annotations

import argparse
from pathlib import Path

from ai_platform.cli.common import Areas, command, emit


def demo_init(args: argparse.Namespace) -> None:
    from ai_platform.demo.repo import init

    sha = init(Path(args.dir), seed=args.seed)
    emit(
        args,
        {"dir": str(Path(args.dir).resolve()), "commit": sha, "seed": args.seed},
        f"demo platform repo at {args.dir} (commit {sha[:12]}, seed {args.seed})",
    )


def add(areas: Areas) -> None:
    demo = areas.add_parser("demo", help="the offline demo").add_subparsers(dest="command", required=True)
    p = command(
        demo,
        "init",
        demo_init,
        "build the offline demo platform repo (tiny trained model included)",
        ("ai-platform demo init demo/platform", "ai-platform demo init /tmp/platform --seed 7"),
    )
    p.add_argument("dir", metavar="DIR", help="where the repo goes (a new or empty folder)")
    p.add_argument(
        "--seed", type=int, default=0, help="the synthetic data's seed; the same seed, the same commit (default: 0)"
    )
