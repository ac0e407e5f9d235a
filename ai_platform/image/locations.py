"""Where images live: the embedded registry (an OCI layout on disk) or a remote one.

`registry.url` in platform.yaml: `oci-layout://PATH` keeps one OCI layout per
repository under PATH (relative to the platform home); `https://HOST[/PREFIX]`
(or `http://` for a registry on loopback) builds into a local layout under the
artifacts and pushes from it. Either way the manifest digest is the same.

platform.yaml is read here while a stage builds (`local_registry`, `remote`,
`image_location`); from then on the `ModelImage` record says where the image is,
and `locate` is the one function that turns it into what a server starts from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, overload

from ai_platform.config import Platform
from ai_platform.errors import ServingError
from ai_platform.oci.layout import Descriptor, OciLayout
from ai_platform.oci.registry import Reference, Transfer, push
from ai_platform.records import ImageLocation, ModelImage


def local_registry(platform: Platform, repository: str) -> OciLayout:
    url = platform.config.registry.url
    if url.startswith("oci-layout://"):
        return OciLayout(platform.state(url.removeprefix("oci-layout://")) / repository)
    return OciLayout(platform.artifacts_path / "oci" / repository)


def bundle_repository(model: str) -> str:
    """The repository of a model's prompt bundles, next to its images."""
    return f"{model}-prompts"


def digest_tag(digest: str) -> str:
    """The tag an artifact is pushed under: its digest, so pushes never clash."""
    return f"sha-{digest.removeprefix('sha256:')[:16]}"


def remote(platform: Platform, repository: str, tag: str) -> Reference | None:
    url = platform.config.registry.url
    if url.startswith("oci-layout://"):
        return None
    host_and_prefix = url.split("://", 1)[1].rstrip("/")
    return Reference.parse(f"{host_and_prefix}/{repository}:{tag}")


def publish(platform: Platform, layout: OciLayout, repository: str, descriptor: Descriptor) -> Transfer | None:
    """Push to the remote registry, if platform.yaml names one; tagged by digest."""
    tag = digest_tag(descriptor.digest)
    dest = remote(platform, repository, tag)
    if dest is None:
        return None
    registry = platform.config.registry
    insecure = registry.insecure or registry.url.startswith("http://")
    return push(layout, tag, dest, insecure=insecure, token_realms=registry.token_realms)


def image_location(platform: Platform, repository: str, layout: OciLayout, digest: str) -> ImageLocation:
    """Where a stage leaves what it built (an image, a prompt bundle): the layout it was built in and, with a
    remote registry, its ref pinned by digest."""
    where = remote(platform, repository, digest_tag(digest))
    return ImageLocation(str(layout.root), f"{where.host}/{where.repository}@{digest}" if where else "")


@overload
def locate(image: ModelImage, *, pull: Literal[False] = False) -> OciLayout: ...


@overload
def locate(image: ModelImage, *, pull: Literal[True]) -> str: ...


def locate(image: ModelImage, *, pull: bool = False) -> OciLayout | str:
    """Where a server of `image` is started from, as its record says (never platform.yaml as it is now).

    The OCI layout to unpack on this machine (the embedded backend), or with `pull` the pullable
    `HOST/REPO@sha256:…` a cluster's kubelet mounts (the Kubernetes backend, the rendered manifests).
    """
    where = image.location
    if pull:
        if not where.pullable:
            raise ServingError(
                f"image {image.digest[:19]} was built into an OCI layout on disk ({where.layout}) and never pushed;"
                " a cluster pulls images from a registry (set registry.url: https://HOST/PREFIX and materialize"
                " model_image again)"
            )
        return where.pullable
    if not (Path(where.layout) / "oci-layout").is_file():
        raise ServingError(
            f"image {image.digest[:19]}: its OCI layout {where.layout} is not on this machine"
            + (f"; a cluster pulls it as {where.pullable}" if where.pullable else "")
        )
    return OciLayout(Path(where.layout))
