"""Where images live: the embedded registry (an OCI layout on disk) or a remote one.

`registry.url` in platform.yaml: `oci-layout://PATH` keeps one OCI layout per
repository under PATH (relative to the platform home); `https://HOST[/PREFIX]`
(or `http://` for a registry on loopback) builds into a local layout under the
artifacts and pushes from it. Either way the manifest digest is the same.
"""

from __future__ import annotations

from ai_platform.config import Platform
from ai_platform.oci.layout import Descriptor, OciLayout
from ai_platform.oci.registry import Reference, Transfer, push


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
