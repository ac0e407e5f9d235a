"""`ai-platform serve` and `ai-platform rollout`: the gateway and blue/green rollouts."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ai_platform.cli.common import HOME_HELP, Areas, check_model_here, command, emit, epilog, home_of, location
from ai_platform.config import DRAIN_S, PINNED_IMAGE, GatewayConfig, Platform
from ai_platform.errors import ConfigError, MissingArtifactError, ServingError

if TYPE_CHECKING:
    from ai_platform.specs import SpecSnapshot


def serve(args: argparse.Namespace) -> None:
    from ai_platform.serving.gateway import serve as run_gateway

    home = home_of(args)
    follows = f"rollouts kept in {args.states_from}" if args.states_from else f"state in {home}/rollout"
    print(f"gateway on http://{args.host}:{args.port} ({follows}); Ctrl-C stops it", file=sys.stderr)
    keys = Path(args.keys) if args.keys else None
    if not args.states_from and not args.no_heal:  # this machine's rollouts: their vLLM colours are ours to heal
        from ai_platform.rollout.heal import Supervisor

        Supervisor(home, log=lambda m: print(f"supervisor: {m}", file=sys.stderr, flush=True)).thread()
    run_gateway(home, args.host, args.port, args.states_from, keys, args.window_storage, args.drain_s)


def drain_seconds(text: str) -> int:
    """--drain-s, bounded as platform.yaml's gateway.drain_s is."""
    from pydantic import ValidationError

    try:
        return GatewayConfig(drain_s=int(text)).drain_s
    except ValidationError as exc:  # before ValueError: it is one
        raise argparse.ArgumentTypeError(exc.errors()[0]["msg"]) from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None


def pinned(args: argparse.Namespace) -> SpecSnapshot:
    """The model's spec as its last run here pinned it (what was rolled out), after checking the model is known;
    never pinned here: as the branch has it now (nothing is pinned for it)."""
    from ai_platform.platform_repo import load_at
    from ai_platform.specs import SpecSnapshot, pinned_spec, spec_digest

    here = location(args)
    check_model_here(here, args.model)
    home, git_dir = here.need_home(), here.git_dir()
    try:
        return pinned_spec(home, args.model)
    except MissingArtifactError as exc:
        if git_dir is None:
            raise MissingArtifactError(
                f"{exc}, so no platform.yaml here says which backend serves it: set AI_PLATFORM_REPO"
            ) from None
    commit, platform = load_at(git_dir, home, here.branch)
    spec = platform.model(args.model)
    return SpecSnapshot(commit, platform, spec, spec_digest(spec))


def rollout_rollback(args: argparse.Namespace) -> None:
    from ai_platform.site import site_of

    snap = pinned(args)
    done = site_of(snap.platform).backend.rollback(snap, lambda m: print(m, file=sys.stderr))
    emit(
        args,
        {"model": args.model, "color": done.color, "image": done.image, "bundle": done.bundle},
        f"{args.model}: {done.image} live on {done.color}",
    )


def rollout_stop(args: argparse.Namespace) -> None:
    """The backend the pinned platform.yaml names stops the model: the local colour's vLLM, or the cluster's
    Deployments scaled to 0 (their Service kept)."""
    from ai_platform.site import site_of

    snap = pinned(args)
    backend = site_of(snap.platform).backend
    stopped = backend.stop(snap, lambda m: print(m, file=sys.stderr))
    human = f"{args.model}: stopped {stopped}" if stopped else f"{args.model}: nothing live to stop"
    emit(args, {"model": args.model, "target": backend.target, "stopped": stopped}, human)


def rollout_reap(args: argparse.Namespace) -> None:
    """On Kubernetes, pause the colour the last switch left at 0 replicas once its rollback window has passed
    (`rollout.kubernetes.reap_idle`); the embedded backend stops the old colour at the switch, so nothing waits."""
    snap = pinned(args)
    target = snap.platform.config.execution.target
    reaped = None
    if target == "kubernetes":
        from ai_platform.rollout.kubernetes import reap_idle

        reaped = reap_idle(snap.platform, snap.spec, lambda m: print(m, file=sys.stderr))
    human = f"{args.model}: {reaped} paused at 0 replicas" if reaped else f"{args.model}: nothing to reap"
    emit(args, {"model": args.model, "target": target, "reaped": reaped}, human)


def rollout_live(args: argparse.Namespace) -> None:
    """What the backend platform.yaml names says `model` serves (`Backend.live`): the home's rollout state on the
    embedded default, the artifact store (a cluster's registry, readable from an empty home) on Kubernetes."""
    from ai_platform.site import site_of

    snap = pinned(args)
    live = site_of(snap.platform).backend.live(snap.platform, args.model)
    if live is None:
        emit(args, {"model": args.model, "live": None}, f"{args.model}: nothing live")
        return
    found = {
        "model": args.model,
        "color": live.color,
        "image": live.image,
        "image_location": asdict(live.model_image.location) if live.model_image else None,
        "bundle": live.bundle,
        "release": live.release,
        "runtime": live.runtime,
        "replicas": live.replicas,
        "endpoint": live.base_url,
    }
    emit(args, found, f"{args.model}: image {live.image[:19]}, prompts {live.bundle[:19]} live on {live.color}")


def rollout_render(args: argparse.Namespace) -> None:
    from ai_platform.config import load_platform
    from ai_platform.known_models import check_model
    from ai_platform.rollout import cluster_gateway, rbac
    from ai_platform.rollout.kubernetes import deployment, render, scaled_object

    platform = load_platform(Path(args.repo), home=location(args).need_home())
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
    from ai_platform.image.locations import locate
    from ai_platform.records import ModelImage, PromptBundle, Records
    from ai_platform.site import site_of

    if image and not PINNED_IMAGE.match(image):
        raise ConfigError(f"--image {image}: pin the model image by digest (HOST/REPO@sha256:<64 hex>)")
    records = Records(site_of(platform).store)
    if not image:
        try:
            built = records.read(ModelImage, model)
        except MissingArtifactError as exc:
            raise ConfigError(f"{exc}; or name the image with --image HOST/REPO@sha256:…") from None
        try:
            image = locate(built, pull=True)
        except ServingError as exc:  # the embedded default's registry is a folder: say where to push it
            raise ConfigError(f"{exc}; or push the image and name it: --image HOST/REPO@{built.digest}") from None
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
    p.add_argument("--home", help=HOME_HELP)
    p.add_argument(
        "--states-from",
        metavar="REGISTRY_URL",
        help="follow a cluster's rollouts kept in this registry (platform.yaml's registry.url) instead of the home",
    )
    p.add_argument("--keys", metavar="FILE", help="the API key file (platform.yaml's gateway.keys, resolved)")
    p.add_argument(
        "--no-heal",
        action="store_true",
        help="do not start a live model server again when its process dies (default: it is, with backoff)",
    )
    p.add_argument(
        "--window-storage",
        metavar="URI",
        help="where the admission windows live (platform.yaml's gateway.window_storage; redis://HOST:PORT: shared)",
    )
    p.add_argument(
        "--drain-s",
        type=drain_seconds,
        default=DRAIN_S,
        metavar="SECONDS",
        help=f"once stopped, how long requests in flight may finish before they are cut (platform.yaml's"
        f" gateway.drain_s; default: {DRAIN_S})",
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
    p.add_argument("--home", help=HOME_HELP)
    p = command(
        rollout,
        "stop",
        rollout_stop,
        "stop a model where platform.yaml's backend serves it: the live color on this machine, or each color's"
        " Deployment scaled to 0 in the cluster (its Service kept)",
        ("ai-platform rollout stop contract-reviewer --home demo/state",),
    )
    p.add_argument("model", metavar="MODEL", help=model_help)
    p.add_argument("--home", help=HOME_HELP)
    p = command(
        rollout,
        "reap",
        rollout_reap,
        "pause the colour the last switch left at 0 replicas once its rollback window (the spec's"
        " rollout.rollback_window_s) has passed; run it on a schedule (Kubernetes only; the next rollout does it too)",
        ("ai-platform rollout reap contract-reviewer",),
    )
    p.add_argument("model", metavar="MODEL", help=model_help)
    p.add_argument("--home", help=HOME_HELP)
    p = command(
        rollout,
        "live",
        rollout_live,
        "what a model serves: image, prompts, colour, runtime, replicas",
        ("ai-platform rollout live contract-reviewer --repo demo/platform --home demo/state",),
    )
    p.add_argument("model", metavar="MODEL", help=model_help)
    p.add_argument(
        "--repo", help="the platform repo, whose platform.yaml names the backend (default: $AI_PLATFORM_REPO)"
    )
    p.add_argument("--home", help=HOME_HELP)
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
