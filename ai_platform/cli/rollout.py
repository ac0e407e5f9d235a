"""`ai-platform serve` and `ai-platform rollout`: the gateway and blue/green rollouts."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ai_platform.cli.common import Areas, command, emit, home_of


def serve(args: argparse.Namespace) -> None:
    from ai_platform.serving.gateway import serve as run_gateway

    home = home_of(args)
    print(f"gateway on http://{args.host}:{args.port} (state in {home}/rollout); Ctrl-C stops it", file=sys.stderr)
    run_gateway(home, args.host, args.port)


def rollout_rollback(args: argparse.Namespace) -> None:
    from ai_platform.backend import for_config
    from ai_platform.specs import pinned_spec

    snap = pinned_spec(home_of(args), args.model)
    done = for_config(snap.platform.config).rollback(snap, lambda m: print(m, file=sys.stderr))
    emit(
        args,
        {"model": args.model, "color": done.color, "image": done.image, "bundle": done.bundle},
        f"{args.model}: {done.image} live on {done.color}",
    )


def rollout_stop(args: argparse.Namespace) -> None:
    from ai_platform.rollout.local import stop

    stop(home_of(args), args.model, log=lambda m: print(m, file=sys.stderr))
    emit(args, {"model": args.model, "stopped": True}, f"{args.model}: stopped")


def rollout_render(args: argparse.Namespace) -> None:
    import yaml

    from ai_platform.config import load_platform
    from ai_platform.rollout.kubernetes import render

    platform = load_platform(
        Path(args.repo), home=Path(os.environ.get("AI_PLATFORM_HOME") or Path(args.repo) / ".state")
    )
    spec = platform.model(args.model)
    digest = args.image_digest or "sha256:" + "0" * 64
    image_ref = args.image or f"registry.example.com/{spec.name}@{digest}"
    manifests = render(platform, spec, image_ref, args.bundle or "", args.color, args.live or args.color)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for manifest in manifests:
        path = out / f"{manifest['kind'].lower()}-{manifest['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(manifest, sort_keys=False))
        written.append(str(path))
    emit(args, {"files": written}, "\n".join(written))


def add(areas: Areas) -> None:
    p = areas.add_parser("serve", help="the gateway", description="the gateway: prompts as functions, OpenAI API")
    p.set_defaults(handler=serve)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")

    rollout = areas.add_parser("rollout", help="blue/green rollouts").add_subparsers(dest="command", required=True)
    p = command(rollout, "rollback", rollout_rollback, "return a model to its previous image and prompts")
    p.add_argument("model")
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")
    p = command(rollout, "stop", rollout_stop, "stop a model's live color on this machine")
    p.add_argument("model")
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")
    p = command(rollout, "render", rollout_render, "write a model's Kubernetes manifests (one YAML file each)")
    p.add_argument("model")
    p.add_argument("--repo", required=True, help="the platform repo (its working tree)")
    p.add_argument("--out", required=True)
    p.add_argument("--image", help="the model image reference (default: a placeholder pinned by digest)")
    p.add_argument("--image-digest", help="sha256:... for the placeholder reference")
    p.add_argument("--bundle", help="the prompt bundle digest, recorded as an annotation")
    p.add_argument("--color", default="blue", choices=("blue", "green"))
    p.add_argument("--live", choices=("blue", "green"), help="the color the Service selects (default: --color)")
