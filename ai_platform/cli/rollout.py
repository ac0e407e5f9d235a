"""`ai-platform serve` and `ai-platform rollout`: the gateway and blue/green rollouts."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ai_platform.cli.common import HOME_HELP, Areas, check_model_here, command, emit, epilog, home_of, location
from ai_platform.config import DRAIN_S, PINNED_IMAGE, GatewayConfig, Platform
from ai_platform.errors import ConfigError, MissingArtifactError, ServingError

if TYPE_CHECKING:
    from ai_platform.platform_repo import Commit
    from ai_platform.records import LiveRelease
    from ai_platform.site import Location
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


def at_repo(args: argparse.Namespace) -> SpecSnapshot:
    """The model's spec and platform.yaml as the platform repo's branch has them (--repo, else $AI_PLATFORM_REPO:
    `site.locate`), after checking the model is known. platform.yaml names the backend, and the backend keeps what
    is live (`Backend.state`): never a spec pinned in the local home, which on a cluster exists only on a finished
    step pod and on a laptop may be an old run's."""
    from ai_platform.specs import SpecSnapshot, spec_digest

    here = location(args).fetched()  # a URL (the cluster's pods): its branch, fetched into the home first
    check_model_here(here, args.model)
    commit, platform = repo_platform(args, args.model, here)
    spec = platform.model(args.model)
    return SpecSnapshot(commit, platform, spec, spec_digest(spec))


def repo_platform(args: argparse.Namespace, what: str, here: Location | None = None) -> tuple[Commit, Platform]:
    """platform.yaml and the model specs as the platform repo's branch has them (`at_repo`, for no one model); a
    repo given as a URL is fetched into the home's mirror first (`Location.fetched`), unless `here` already was."""
    from ai_platform.platform_repo import load_at

    here = here or location(args).fetched()
    git_dir = here.git_dir()
    if git_dir is None:
        raise ConfigError(
            f"{what}: no platform repo: pass --repo DIR or set AI_PLATFORM_REPO (its platform.yaml names the"
            " backend that serves the model, and where that backend keeps what is live)"
        )
    return load_at(git_dir, here.need_home(), here.branch)


def say(message: str) -> None:
    print(message, file=sys.stderr)


def rollout_rollback(args: argparse.Namespace) -> None:
    """The switch back, here (`--here`, in a pod, or on the embedded backend), else on Kubernetes in a Job of the
    cluster's own (`rollout.operator`): the switch warms the new colour's pods up at their pod IPs, which only the
    cluster's run pods reach."""
    from ai_platform.site import site_of

    snap = at_repo(args)
    backend = site_of(snap.platform).backend
    job = backend.submit_rollback(snap, args.here, say)
    if job is not None:
        live = backend.live(snap.platform, args.model)
        if live is None:
            raise ServingError(
                f"{args.model}: the rollback Job {job} succeeded, but the model's state has no live release"
            )
        color, image, bundle = live.color, live.image, live.bundle
    else:
        done = backend.rollback(snap, say)
        live = backend.live(snap.platform, args.model)
        color, image, bundle = done.color, done.image, done.bundle
    found: dict[str, Any] = {"model": args.model, "color": color, "image": image, "bundle": bundle}
    found |= (
        {"serving": live.serving, "runtime": live.runtime, "gpu": live.gpu, "release": live.release} if live else {}
    )
    found |= {"job": job} if job else {}
    emit(args, found, f"{args.model}: {image} live on {color}")


def rollout_stop(args: argparse.Namespace) -> None:
    """The backend platform.yaml names stops the model and records it: the local colour's vLLM, or the cluster's
    Deployments scaled to 0 (their Service kept)."""
    from ai_platform.site import site_of

    snap = at_repo(args)
    backend = site_of(snap.platform).backend
    stopped = backend.stop(snap, say)
    human = f"{args.model}: stopped {stopped}" if stopped else f"{args.model}: nothing live to stop"
    emit(args, {"model": args.model, "target": backend.target, "stopped": stopped}, human)


def rollout_reap(args: argparse.Namespace) -> None:
    """On Kubernetes, pause the colour the last switch left at 0 replicas once its rollback window has passed
    (`rollout.kubernetes.reap_idle`); the embedded backend stops the old colour at the switch, so nothing waits.
    `--all`: every model of the repo's models/ that has a state (the kit's CronJob runs this)."""
    from ai_platform.site import site_of

    if args.all == bool(args.model):
        raise ConfigError("rollout reap: name one MODEL, or --all (every model of the repo)")
    if args.all:
        _, platform = repo_platform(args, "rollout reap --all")
        models = sorted(platform.models)
    else:
        platform = at_repo(args).platform
        models = [args.model]
    backend = site_of(platform).backend
    target = backend.target
    reaped = backend.reap(platform, models, say, rolled_out_only=args.all)
    human = (
        "\n".join(
            f"{model}: {color} paused at 0 replicas" if color else f"{model}: nothing to reap"
            for model, color in reaped.items()
        )
        or ", ".join(models) + ": nothing to reap"
    )
    if args.all:
        emit(args, {"target": target, "reaped": reaped}, human)
    else:
        emit(args, {"model": args.model, "target": target, "reaped": reaped.get(args.model)}, human)


def release_view(live: LiveRelease | None) -> dict[str, Any] | None:
    """A live (or previous) release as `rollout live` and `rollout status` print it."""
    if live is None:
        return None
    return {
        "color": live.color,
        "image": live.image,
        "image_location": asdict(live.model_image.location) if live.model_image else None,
        "bundle": live.bundle,
        "release": live.release,
        "serving": live.serving,
        "runtime": live.runtime,
        "gpu": live.gpu,
        "replicas": live.replicas,
        "endpoint": live.base_url,
    }


def rollout_live(args: argparse.Namespace) -> None:
    """What the backend platform.yaml names says `model` serves (`Backend.live`): the home's rollout state on the
    embedded default, the artifact store (a cluster's registry, readable from an empty home) on Kubernetes."""
    from ai_platform.site import site_of

    snap = at_repo(args)
    live = site_of(snap.platform).backend.live(snap.platform, args.model)
    found = release_view(live)
    if live is None or found is None:
        emit(args, {"model": args.model, "live": None}, f"{args.model}: nothing live")
        return
    emit(
        args,
        {"model": args.model, **found},
        f"{args.model}: image {live.image[:19]}, prompts {live.bundle[:19]} live on {live.color}",
    )


def rollout_status(args: argparse.Namespace) -> None:
    """Where the model stands, from where its backend keeps it: the live release, the previous one (what a
    rollback returns to) and until when its colour is kept warm, whether it is stopped, and what each colour runs
    (on Kubernetes each Deployment's replicas, read through the API)."""
    import time

    from ai_platform.site import site_of

    snap = at_repo(args)
    backend = site_of(snap.platform).backend
    state = backend.state(snap.platform, args.model)
    live, previous = (state.live, state.previous) if state else (None, None)
    idle_until = state.idle_until if state else 0.0
    stopped_at = state.stopped_at if state else 0.0
    colors = backend.colors(snap.platform, args.model)
    found = {
        "model": args.model,
        "target": backend.target,
        "live": release_view(live),
        "previous": release_view(previous),
        "idle_until": idle_until,
        "rollback_window_open": idle_until > time.time(),
        "stopped": stopped_at > 0,
        "stopped_at": stopped_at or None,
        "colors": colors,
    }
    lines = [f"{args.model} on {backend.target}"]
    if stopped_at:
        lines.append(f"  stopped at {time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(stopped_at))}")
    for name, release in (("live", live), ("previous", previous)):
        lines.append(
            f"  {name}: {release.color}: image {release.image[:19]}, prompts {release.bundle[:19]},"
            f" release {release.release[:19] or 'unrecorded'}"
            if release
            else f"  {name}: none"
        )
    if previous is not None:
        window = (
            f"kept warm until {time.strftime('%H:%M:%S', time.localtime(idle_until))}"
            if idle_until > time.time()
            else "not kept warm (a rollback starts its pods)"
        )
        lines.append(f"  rollback target {previous.color}: {window}")
    for color, seen in colors.items():
        lines.append(f"  {color}: {seen['available']} of {seen['replicas']} replicas available")
    emit(args, found, "\n".join(lines))


def rollout_render(args: argparse.Namespace) -> None:
    from ai_platform.config import load_platform
    from ai_platform.known_models import check_model
    from ai_platform.rollout.kit import cluster_kit
    from ai_platform.rollout.kubernetes import check_routes, deployment, disruption_budget, render, scaled_object

    platform = load_platform(Path(args.repo), home=location(args).need_home())
    check_model(args.model, platform.models, f"the model specs in {args.repo}")
    spec = platform.model(args.model)
    image_ref, bundle = shipped(platform, spec.name, args.image, args.bundle)
    live = args.live or args.color
    manifests = render(platform, spec, image_ref, bundle, args.color, live)
    if live == args.color:  # a first deploy: the other colour exists, idle (paused at 0 replicas)
        other = "green" if args.color == "blue" else "blue"
        manifests += [
            deployment(platform, spec, other, image_ref, bundle),
            scaled_object(platform, spec, other, retired=True),
            disruption_budget(platform, spec, other),  # each colour has its own, as a switch onto it applies
        ]
    # else the live colour is the cluster's, as it runs: nothing here may pause it or change its image
    check_routes(manifests)
    # applied once by an admin, not by a rollout: the gateway for every model, and the run pods' account
    manifests += cluster_kit(platform, args.gateway_image)
    written = write_manifests(Path(args.out), manifests)
    emit(args, {"files": written}, "\n".join(written))


def rollout_kit(args: argparse.Namespace) -> None:
    """The cluster-wide kit (`rollout.kit.cluster_kit`) from platform.yaml alone: no model, no model image."""
    from ai_platform.config import load_platform
    from ai_platform.rollout.kit import cluster_kit

    platform = load_platform(Path(args.repo), home=location(args).need_home())
    written = write_manifests(Path(args.out), cluster_kit(platform, args.gateway_image))
    emit(args, {"files": written}, "\n".join(written))


def write_manifests(out: Path, manifests: list[dict[str, Any]]) -> list[str]:
    """One YAML file per object in `out` (created), named KIND-NAME.yaml; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for manifest in manifests:
        path = out / f"{manifest['kind'].lower()}-{manifest['metadata']['name']}.yaml"
        path.write_text(yaml.dump(manifest, Dumper=NoAliases, sort_keys=False, allow_unicode=True))
        written.append(str(path))
    return written


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
    repo_help = (
        "the platform repo, whose platform.yaml names the backend and where it keeps what is live"
        " (default: $AI_PLATFORM_REPO); a spec pinned in the home is never read"
    )
    for name, handler, text, example in (
        (
            "status",
            rollout_status,
            "where a model stands: the live release, the previous one (what a rollback returns to) and until when"
            " it is kept warm, whether it is stopped, and each colour's replicas (read from the cluster on Kubernetes)",
            "ai-platform rollout status contract-reviewer --repo demo/platform --home demo/state",
        ),
        (
            "rollback",
            rollout_rollback,
            "return a model to its previous release: image, prompts, server settings, and on Kubernetes its vLLM"
            " image and GPU shape; on Kubernetes from outside the cluster it runs as a Job there (its log is printed)",
            "ai-platform rollout rollback contract-reviewer --repo demo/platform --home demo/state",
        ),
        (
            "stop",
            rollout_stop,
            "stop a model where platform.yaml's backend serves it, and record the stop: the live color on this"
            " machine, or each color's Deployment scaled to 0 in the cluster (its Service kept); the next rollout"
            " or a rollback starts it again",
            "ai-platform rollout stop contract-reviewer --repo demo/platform --home demo/state",
        ),
        (
            "reap",
            rollout_reap,
            "pause the colour the last switch left at 0 replicas once its rollback window (the spec's"
            " rollout.rollback_window_s) has passed (Kubernetes only; the next rollout does it too, and the kit's"
            " CronJob runs `reap --all` every 5 minutes)",
            "ai-platform rollout reap contract-reviewer --repo demo/platform",
        ),
        (
            "live",
            rollout_live,
            "what a model serves: image, prompts, colour, server settings, runtime, GPU shape, replicas",
            "ai-platform rollout live contract-reviewer --repo demo/platform --home demo/state",
        ),
    ):
        p = command(rollout, name, handler, text, (example,))
        p.add_argument("model", metavar="MODEL", help=model_help, nargs="?" if name == "reap" else None)
        p.add_argument("--repo", help=repo_help)
        p.add_argument("--home", help=HOME_HELP)
        if name == "rollback":
            p.add_argument(
                "--here",
                action="store_true",
                help="on Kubernetes, switch from this process even outside the cluster (a machine on the pod"
                " network, e.g. a VPN); by default a rollback from outside runs as a Job in the cluster, whose run"
                " pods reach vLLM's pods to warm them up",
            )
        if name == "reap":
            p.add_argument(
                "--all",
                action="store_true",
                help="every model of the repo's models/ that has been rolled out (what the kit's CronJob runs)",
            )
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
    p.add_argument(
        "--live",
        choices=("blue", "green"),
        help="the color the Service selects (default: --color); another than --color: that colour is live in the"
        " cluster and nothing is rendered for it (the other colour is rendered idle, paused at 0, only without it)",
    )
    p = command(
        rollout,
        "kit",
        rollout_kit,
        "write the cluster-wide kit's Kubernetes manifests, applied once before any model: the run pods' account"
        " and Role, the operator's Role, the reap CronJob, the gateway (Deployment, Service, HPA,"
        " PodDisruptionBudget, PodMonitor, PrometheusRule) and the Redis of its admission windows (no model or"
        " model image needed; each model's own objects are applied by its rollout)",
        ("ai-platform rollout kit --repo platform --out kit/",),
    )
    p.add_argument("--repo", required=True, help="the platform repo (its working tree)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write the manifests in (created)")
    p.add_argument(
        "--gateway-image",
        help="the gateway's (code-location) image, pinned by digest (default: kubernetes.gateway.image)",
    )
    p.add_argument("--home", help=HOME_HELP)
