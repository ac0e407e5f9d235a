"""`ai-platform config`: platform.yaml and the model specs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ai_platform.cli.common import Areas, command, emit, location


def config_validate(args: argparse.Namespace) -> None:
    from ai_platform.config import load_platform
    from ai_platform.platform_repo import load_at
    from ai_platform.site import site_of
    from ai_platform.validate import validate

    repo = Path(args.repo)
    if args.ref:
        commit, platform = load_at(repo, location(args).need_home(), args.ref)
        where = f"{repo}@{commit.sha[:12]}"
    else:
        platform, where = load_platform(repo), str(repo)
    backend = site_of(platform).backend  # the backend platform.yaml names has what it needs (on Kubernetes: images)
    # prompts compile, gates name measured metrics and can pass on their eval sets, eval sets load
    notes = validate(platform, where=where)
    models = sorted(platform.models)
    summary = f"{len(models)} model spec{'s' if len(models) != 1 else ''}: {', '.join(models) or 'none'}"
    result = {"ok": True, "platform": platform.config.name, "target": backend.target, "models": models, "gates": notes}
    human = f"{where}: ok ({summary}; {backend.target} target)"
    emit(args, result, human + "".join(f"\n  {note}" for note in notes))


def add(areas: Areas) -> None:
    config = areas.add_parser("config", help="platform.yaml and model specs").add_subparsers(
        dest="command", required=True
    )
    p = command(
        config,
        "validate",
        config_validate,
        "validate platform.yaml and every models/*.yaml: each prompt they use compiles, each gate names a metric "
        "the canary measures and can pass on its eval set, each eval set loads; every problem is listed, then "
        "what each gate's eval set can show (the paired cases a margin needs)",
        ("ai-platform config validate demo/platform", "ai-platform config validate demo/platform --ref main"),
    )
    p.add_argument("repo", metavar="REPO", help="the platform repo (a folder)")
    p.add_argument("--ref", help="validate this branch, tag or commit instead of the working tree")
