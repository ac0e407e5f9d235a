"""`ai-platform serve` and `ai-platform rollout`: the gateway and blue/green rollouts."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from ai_platform.cli.common import Areas, check_model_here, command, emit, epilog, home_of
from ai_platform.config import PINNED_IMAGE, Platform
from ai_platform.errors import ConfigError, MissingArtifactError, ServingError


def serve(args: argparse.Namespace) -> None:
    from ai_platform.serving.gateway import serve as run_gateway

    home = home_of(args)
    follows = f"rollouts kept in {args.states_from}" if args.states_from else f"state in {home}/rollout"
    print(f"gateway on http://{args.host}:{args.port} ({follows}); Ctrl-C stops it", file=sys.stderr)
    keys = Path(args.keys) if args.keys else None
    run_gateway(home, args.host, args.port, args.states_from, keys, args.window_storage)


def rollout_rollback(args: argparse.Namespace) -> None:
    from ai_platform.backend import for_config
    from ai_platform.specs import pinned_spec

    home = home_of(args)
    check_model_here(home, args.model)
    snap = pinned_spec(home, args.model)
    done = for_config(snap.platform.config).rollback(snap, lambda m: print(m, file=sys.stderr))
    emit(
        args,
        {"model": args.model, "color": done.color, "image": done.image, "bundle": done.bundle},
        f"{args.model}: {done.image} live on {done.color}",
    )


def rollout_stop(args: argparse.Namespace) -> None:
    from ai_platform.rollout.local import stop

    home = home_of(args)
    check_model_here(home, args.model)
    stopped = stop(home, args.model, log=lambda m: print(m, file=sys.stderr))
    human = f"{args.model}: stopped {stopped}" if stopped else f"{args.model}: nothing live to stop"
    emit(args, {"model": args.model, "stopped": stopped}, human)


def rollout_render(args: argparse.Namespace) -> None:
    from ai_platform.config import load_platform
    from ai_platform.known_models import check_model
    from ai_platform.rollout import cluster_gateway, rbac
    from ai_platform.rollout.kubernetes import deployment, render, scaled_object

    platform = load_platform(
        Path(args.repo), home=Path(os.environ.get("AI_PLATFORM_HOME") or Path(args.repo) / ".state")
    )
    check_model(args.model, platform.models, f"the model specs in {args.repo}")
    spec = platform.model(args.model)
    image_ref, bundle = shipped(platform, spec.name, args.image, args.bundle)
    manifests = render(platform, spec, image_ref, bundle, args.color, args.live or args.color)
    other = "green" if args.color == "blue" else "blue"  # the idle colour, paused at 0 replicas
    manifests += [
        deployment(platform, spec, other, image_ref, bundle),
        scaled_object(platform, spec, other, retired=True),
    ]
    # applied once by an admin, not by a rollout: the gateway for every model, and the run pods' account
    manifests += cluster_gateway.manifests(platform, args.gateway_image) + rbac.manifests(platform)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for manifest in manifests:
        path = out / f"{manifest['kind'].lower()}-{manifest['metadata']['name']}.yaml"
        path.write_text(yaml.dump(manifest, Dumper=NoAliases, sort_keys=False, allow_unicode=True))
        written.append(str(path))
    emit(args, {"files": written}, "\n".join(written))


def shipped(platform: Platform, model: str, image: str | None, bundle: str | None) -> tuple[str, str]:
    """The model image and prompt bundle to render: as given (the image pinned by digest), else what the
    pipeline last shipped for the model (its model_image and prompt_bundle records), never a placeholder."""
    from ai_platform.records import ModelImage, PromptBundle, Records
    from ai_platform.rollout.kubernetes import pinned_image_ref

    if image and not PINNED_IMAGE.match(image):
        raise ConfigError(f"--image {image}: pin the model image by digest (HOST/REPO@sha256:<64 hex>)")
    records = Records(platform.artifacts())
    if not image:
        try:
            digest = records.read(ModelImage, model).digest
        except MissingArtifactError as exc:
            raise ConfigError(f"{exc}; or name the image with --image HOST/REPO@sha256:…") from None
        try:
            image = pinned_image_ref(platform, model, digest)
        except ServingError as exc:  # the embedded default's registry is a folder: say where to push it
            raise ConfigError(f"{exc}; or push the image and name it: --image HOST/REPO@{digest}") from None
    if bundle is None:
        try:
            bundle = records.read(PromptBundle, model).digest
        except MissingArtifactError:
            bundle = ""
    return image, bundle


class NoAliases(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no types
    """YAML a reviewer reads top to bottom: a value used twice is written twice, never as `&id001`/`*id001`."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def add(areas: Areas) -> None:
    p = areas.add_parser(
        "serve",
        help="the gateway",
        description="the gateway: prompts as functions, OpenAI API",
        **epilog("ai-platform serve --home demo/state", "ai-platform serve --host 0.0.0.0 --port 9000"),
    )
    p.set_defaults(handler=serve)
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="the port to listen on (default: 8080)")
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")
    p.add_argument(
        "--states-from",
        metavar="REGISTRY_URL",
        help="follow a cluster's rollouts kept in this registry (platform.yaml's registry.url) instead of the home",
    )
    p.add_argument("--keys", metavar="FILE", help="the API key file (platform.yaml's gateway.keys, resolved)")
    p.add_argument(
        "--window-storage",
        metavar="URI",
        help="where the admission windows live (platform.yaml's gateway.window_storage; redis://HOST:PORT: shared)",
    )

    rollout = areas.add_parser("rollout", help="blue/green rollouts").add_subparsers(dest="command", required=True)
    model_help = "the model's name (models/NAME.yaml in the platform repo)"
    p = command(
        rollout,
        "rollback",
        rollout_rollback,
        "return a model to its previous image and prompts",
        ("ai-platform rollout rollback contract-reviewer --home demo/state",),
    )
    p.add_argument("model", metavar="MODEL", help=model_help)
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")
    p = command(
        rollout,
        "stop",
        rollout_stop,
        "stop a model's live color on this machine",
        ("ai-platform rollout stop contract-reviewer --home demo/state",),
    )
    p.add_argument("model", metavar="MODEL", help=model_help)
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")
    p = command(
        rollout,
        "render",
        rollout_render,
        "write a model's Kubernetes manifests (one YAML file each)",
        (
            "ai-platform rollout render contract-reviewer --repo demo/platform --out build/k8s",
            "ai-platform rollout render contract-reviewer --repo demo/platform --out build/k8s"
            " --image registry.example.com/contract-reviewer@sha256:<64 hex> --color green --live blue",
        ),
    )
    p.add_argument("model", metavar="MODEL", help=model_help)
    p.add_argument("--repo", required=True, help="the platform repo (its working tree)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write the manifests in (created)")
    p.add_argument(
        "--image",
        help="the model image, pinned by digest (HOST/REPO@sha256:…); default: the one model_image last shipped",
    )
    p.add_argument("--bundle", help="the prompt bundle digest (default: the one prompt_bundle last shipped)")
    p.add_argument(
        "--gateway-image",
        help="the gateway's (code-location) image, pinned by digest (default: kubernetes.gateway.image)",
    )
    p.add_argument("--color", default="blue", choices=("blue", "green"), help="the color to deploy (default: blue)")
    p.add_argument("--live", choices=("blue", "green"), help="the color the Service selects (default: --color)")
