"""`ai-platform keys`: the gateway's API keys (stored hashed where platform.yaml's gateway.keys says)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ai_platform.cli.common import Areas, command, configured_path, emit


def _path(args: argparse.Namespace) -> Path:
    return configured_path(args, args.keys, "--keys FILE", lambda site: site.config.gateway.keys)


def keys_create(args: argparse.Namespace) -> None:
    from ai_platform.serving.gateway.keys import create

    path = _path(args)
    raw = create(path, args.name, args.scope)
    print(f"key {args.name} ({', '.join(args.scope)}) stored hashed in {path}; shown once:", file=sys.stderr)
    emit(args, {"name": args.name, "scopes": args.scope, "key": raw, "keys_file": str(path)}, raw)


def keys_list(args: argparse.Namespace) -> None:
    from ai_platform.serving.gateway.keys import read

    keys = read(_path(args))
    lines = [f"{k.name}\t{','.join(k.scopes)}" for k in keys] or ["no keys"]
    emit(args, [{"name": k.name, "scopes": list(k.scopes)} for k in keys], "\n".join(lines))


def keys_revoke(args: argparse.Namespace) -> int:
    from ai_platform.serving.gateway.keys import revoke

    done = revoke(_path(args), args.name)
    emit(args, {"name": args.name, "revoked": done}, f"{args.name}: {'revoked' if done else 'no such key'}")
    return 0 if done else 1


def add(areas: Areas) -> None:
    keys = areas.add_parser("keys", help="the gateway's API keys").add_subparsers(dest="command", required=True)
    p = command(
        keys,
        "create",
        keys_create,
        "create a key (printed once; only its sha256 is stored)",
        ("ai-platform keys create app-backend --scope invoke", "ai-platform keys create ana --scope label --json"),
    )
    p.add_argument("name", help="who holds it; for the label scope, the reviewer's name")
    p.add_argument(
        "--scope",
        action="append",
        required=True,
        choices=["invoke", "label", "admin"],
        help="invoke: prompts and the OpenAI API; label: POST /v1/feedback; admin: /admin/*",
    )
    p.add_argument("--keys", help="the key file (default: platform.yaml's gateway.keys under $AI_PLATFORM_HOME)")
    p = command(keys, "list", keys_list, "list the keys' names and scopes", ("ai-platform keys list",))
    p.add_argument("--keys", help="the key file (default: platform.yaml's gateway.keys under $AI_PLATFORM_HOME)")
    p = command(
        keys,
        "revoke",
        keys_revoke,
        "revoke a key by name (takes effect at the gateway's next request)",
        ("ai-platform keys revoke app-backend",),
    )
    p.add_argument("name", help="the key's name, as `keys list` shows it")
    p.add_argument("--keys", help="the key file (default: platform.yaml's gateway.keys under $AI_PLATFORM_HOME)")
