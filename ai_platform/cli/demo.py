"""`ai-platform demo`: the offline demo platform repo."""

from __future__ import annotations

import argparse
from pathlib import Path

from ai_platform.cli.common import Areas, command, emit


def demo_init(args: argparse.Namespace) -> None:
    from ai_platform.demo.repo import init

    sha = init(Path(args.dir), seed=args.seed, published=args.with_published)
    models = "contract-reviewer, clause-classifier" if args.with_published else "contract-reviewer"
    emit(
        args,
        {"dir": str(Path(args.dir).resolve()), "commit": sha, "seed": args.seed, "published": args.with_published},
        f"demo platform repo at {args.dir} (commit {sha[:12]}, seed {args.seed}; models: {models})",
    )


def add(areas: Areas) -> None:
    demo = areas.add_parser("demo", help="the offline demo").add_subparsers(dest="command", required=True)
    p = command(
        demo,
        "init",
        demo_init,
        "build the offline demo platform repo (tiny trained model included)",
        (
            "ai-platform demo init demo/platform",
            "ai-platform demo init /tmp/platform --seed 7",
            "ai-platform demo init /tmp/platform --with-published",
        ),
    )
    p.add_argument("dir", metavar="DIR", help="where the repo goes (a new or empty folder)")
    p.add_argument(
        "--seed", type=int, default=0, help="the synthetic data's seed; the same seed, the same commit (default: 0)"
    )
    p.add_argument(
        "--with-published",
        action="store_true",
        help="add the second model: the published SmolLM2-135M-Instruct classifying English clauses (260 MB more)",
    )
