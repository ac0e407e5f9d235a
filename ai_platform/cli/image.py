"""`ai-platform image`: reproducible OCI model images, pushed and pulled over the distribution API."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from ai_platform.cli.common import Areas, command, emit
from ai_platform.errors import UsageError


def _layout_and_tag(text: str) -> tuple[Path, str | None]:
    """`LAYOUT[:TAG]`, as skopeo's oci: transport writes it."""
    path, sep, tag = text.rpartition(":")
    if sep and path and "/" not in tag:
        return Path(path), tag
    return Path(text), None


def image_build(args: argparse.Namespace) -> None:
    from ai_platform.image.base import fetch
    from ai_platform.image.build import build
    from ai_platform.image.stage import iso
    from ai_platform.oci.layout import OciLayout

    model_dir = Path(args.model_dir)
    if not model_dir.is_dir():
        raise UsageError(f"{model_dir}: not a folder")
    name = args.name or model_dir.name.lower()
    layout = OciLayout(args.out)
    mtime = args.mtime if args.mtime is not None else int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    started = time.monotonic()
    base = fetch(layout, args.base) if args.base else None
    built = build(
        layout,
        model_dir,
        name,
        created=iso(mtime),
        mtime=mtime,
        tags=[args.tag],
        annotations={"org.opencontainers.image.title": name},
        base=base,
    )
    result = {
        "digest": built.digest,
        "layout": str(layout.root),
        "tag": args.tag,
        "layers": built.layers,
        "bytes_written": built.bytes_written,
        "seconds": round(time.monotonic() - started, 3),
    }
    reused = sum(layer["reused"] for layer in built.layers)
    emit(
        args,
        result,
        f"{built.digest}\n{len(built.layers)} layers ({reused} reused), "
        f"{built.bytes_written:,} bytes written to {layout.root}",
    )


def image_push(args: argparse.Namespace) -> None:
    from ai_platform.oci.layout import OciLayout
    from ai_platform.oci.registry import Reference, push

    path, tag = _layout_and_tag(args.layout)
    done = push(
        OciLayout(path),
        tag,
        Reference.parse(args.ref),
        insecure=args.insecure,
        chunk_size=args.chunk_size,
        token_realms=args.token_realm,
    )
    emit(
        args,
        {
            "digest": done.digest,
            "ref": args.ref,
            "blobs_sent": done.blobs_sent,
            "blobs_skipped": done.blobs_skipped,
            "bytes_sent": done.bytes_sent,
        },
        f"{args.ref}@{done.digest}: {done.blobs_sent} blobs sent ({done.bytes_sent:,} bytes), "
        f"{done.blobs_skipped} already there",
    )


def image_pull(args: argparse.Namespace) -> None:
    from ai_platform.oci.layout import OciLayout
    from ai_platform.oci.registry import Reference, pull

    path, tag = _layout_and_tag(args.layout)
    done = pull(Reference.parse(args.ref), OciLayout(path), tag, insecure=args.insecure, token_realms=args.token_realm)
    emit(
        args,
        {
            "digest": done.digest,
            "layout": str(path),
            "blobs_fetched": done.blobs_sent,
            "blobs_skipped": done.blobs_skipped,
            "bytes": done.bytes_sent,
        },
        f"{done.digest}: {done.blobs_sent} blobs fetched ({done.bytes_sent:,} bytes) into {path}",
    )


def add(areas: Areas) -> None:
    image = areas.add_parser("image", help="OCI model images").add_subparsers(dest="command", required=True)
    p = command(
        image,
        "build",
        image_build,
        "write a model folder as a reproducible OCI image layout",
        ("ai-platform image build demo/platform/hub/contract-qwen2 --out build/layout --tag v1",),
    )
    p.add_argument("model_dir", metavar="MODEL_DIR", help="the model folder to package")
    p.add_argument("--out", required=True, metavar="LAYOUT", help="the OCI image layout folder (created if missing)")
    p.add_argument("--name", help="files go under /models/NAME/ (default: the folder's name)")
    p.add_argument("--tag", default="latest", help="the image's tag in the layout (default: latest)")
    p.add_argument("--mtime", type=int, help="file times, seconds since the epoch (default: $SOURCE_DATE_EPOCH or 0)")
    p.add_argument(
        "--base",
        metavar="REF@sha256:DIGEST",
        help="an image to stand on, e.g. busybox for a KServe modelcar (pulled into LAYOUT)",
    )
    transfers = (
        (
            "push",
            image_push,
            "push LAYOUT[:TAG] to REF over the distribution API",
            "build/layout:v1 127.0.0.1:5000/contract-reviewer:v1",
        ),
        (
            "pull",
            image_pull,
            "pull REF into LAYOUT[:TAG], every blob checked",
            "127.0.0.1:5000/contract-reviewer:v1 build/pulled:v1",
        ),
    )
    for name, handler, help_text, example in transfers:
        p = command(image, name, handler, help_text, (f"ai-platform image {name} {example}",))
        if name == "push":
            p.add_argument(
                "layout", metavar="LAYOUT[:TAG]", help="the OCI image layout and the tag to push (default: latest)"
            )
            p.add_argument("ref", metavar="REF", help="HOST[:PORT]/REPOSITORY[:TAG]")
            p.add_argument("--chunk-size", type=int, help="upload in chunks of this many bytes (default: one stream)")
        else:
            p.add_argument("ref", metavar="REF", help="HOST[:PORT]/REPOSITORY[:TAG|@DIGEST]")
            p.add_argument(
                "layout", metavar="LAYOUT[:TAG]", help="the OCI image layout to write into, and the tag to give"
            )
        p.add_argument("--insecure", action="store_true", help="plain HTTP (loopback registries are plain already)")
        p.add_argument(
            "--token-realm",
            action="append",
            default=[],
            metavar="HOST",
            help="a token service on another host that may receive the registry credentials (repeatable)",
        )
