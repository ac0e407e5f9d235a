"""`ai-platform webhook`: the push receiver, and the marker a local git hook leaves (docs/operations.md)."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path

from ai_platform.cli.common import HOME_HELP, Areas, command, emit, location
from ai_platform.errors import InputFileError, UsageError

SECRET_ENV = "AI_PLATFORM_WEBHOOK_SECRET"
HOOK = """#!/bin/sh
# ai-platform: tell the git sensor a push landed, so its next tick (5 s) fetches at once
{command} webhook notify --home {home} >/dev/null 2>&1 || true
"""


def secret(args: argparse.Namespace) -> bytes:
    """--secret-file (a Kubernetes Secret's file), else $AI_PLATFORM_WEBHOOK_SECRET; never a flag's value."""
    if args.secret_file:
        try:
            value = Path(args.secret_file).read_bytes().strip()
        except OSError as exc:
            raise InputFileError(f"--secret-file {args.secret_file}: {exc.strerror}") from None
    else:
        value = os.environ.get(SECRET_ENV, "").strip().encode()
    if not value:
        raise UsageError(f"no webhook secret: pass --secret-file FILE or set {SECRET_ENV}")
    return value


def webhook_serve(args: argparse.Namespace) -> None:
    from ai_platform.webhooks.receiver import serve

    here = location(args)
    home = here.need_home()
    print(
        f"push receiver on http://{args.host}:{args.port}/hooks/{{github,gitlab,gitea}} for {here.branch}"
        f" (marks pushes in {home}); Ctrl-C stops it",
        file=sys.stderr,
    )
    serve(home, here.branch, secret(args), args.host, args.port, args.max_bytes)


def webhook_notify(args: argparse.Namespace) -> None:
    from ai_platform.webhooks.marker import mark

    home = location(args).need_home()
    mark(home, source="git hook")
    emit(args, {"marked": str(home)}, f"push marked in {home}: the git sensor's next tick fetches")


def webhook_hook(args: argparse.Namespace) -> None:
    """Install a post-receive hook (a bare repository that others push to) or post-commit hook (a work tree)."""
    repo = Path(args.git_dir)
    bare = (repo / "HEAD").is_file() and (repo / "objects").is_dir()
    hooks = repo / "hooks" if bare else repo / ".git" / "hooks"
    if not hooks.parent.is_dir():
        raise UsageError(f"{repo} is not a git repository")
    home = location(args).need_home().resolve()
    name = "post-receive" if bare else "post-commit"
    path = hooks / name
    if path.exists() and "ai-platform" not in path.read_text(errors="replace"):
        raise UsageError(f"{path} exists and is not ours: add `ai-platform webhook notify --home {home}` to it")
    hooks.mkdir(exist_ok=True)
    command_path = Path(sys.argv[0]).resolve() if Path(sys.argv[0]).name == "ai-platform" else "ai-platform"
    path.write_text(HOOK.format(command=command_path, home=home))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    emit(args, {"hook": str(path)}, f"{name} hook installed: {path}")


def add(areas: Areas) -> None:
    webhook = areas.add_parser("webhook", help="the push receiver: forges' webhooks start planning at once")
    sub = webhook.add_subparsers(dest="command", required=True)
    p = command(
        sub,
        "serve",
        webhook_serve,
        "receive GitHub, GitLab and Gitea/Forgejo push webhooks; a verified push to the branch marks the home",
        (
            "ai-platform webhook serve --home /var/lib/ai-platform",
            "ai-platform webhook serve --secret-file /etc/ai-platform/webhook/secret --host 0.0.0.0 --port 9300",
        ),
    )
    p.add_argument("--home", help=HOME_HELP)
    p.add_argument("--repo", help="the platform repo (its branch is the one pushes are taken for)")
    p.add_argument("--branch", help="the branch (default: the site's, else main)")
    p.add_argument("--secret-file", metavar="FILE", help=f"the webhook secret (default: ${SECRET_ENV})")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=9300, help="the port to listen on (default: 9300)")
    p.add_argument("--max-bytes", type=int, default=5 * 1024 * 1024, help="the largest body taken (default: 5 MiB)")
    p = command(
        sub,
        "notify",
        webhook_notify,
        "mark a push in the home, as a verified webhook does (what the git hooks run)",
        ("ai-platform webhook notify --home demo/state",),
    )
    p.add_argument("--home", help=HOME_HELP)
    p = command(
        sub,
        "hook",
        webhook_hook,
        "install the git hook that marks each push (post-receive in a bare repository, post-commit in a work tree)",
        ("ai-platform webhook hook /srv/git/platform.git --home /var/lib/ai-platform",),
    )
    p.add_argument("git_dir", metavar="GIT_DIR", help="the repository: a bare one, or a work tree")
    p.add_argument("--home", help=HOME_HELP)
