"""The demo model cache: trained once per machine, keyed by a content hash.

The key covers everything that determines the weights: the training module, the
corpus generator, the recipe and the library versions. Kept apart from the
training code so that editing this file does not invalidate the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from ai_platform.demo import corpus, model
from ai_platform.demo.model import MODEL_FILES, Recipe


def cache_key(recipe: Recipe) -> str:
    h = hashlib.sha256()
    for module in (corpus.__file__, model.__file__):
        h.update(Path(module).read_bytes())
    h.update(json.dumps(asdict(recipe), sort_keys=True).encode())
    for dist in ("torch", "transformers", "tokenizers", "safetensors"):
        h.update(f"{dist}=={metadata.version(dist)}".encode())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    return Path(os.environ.get("AI_PLATFORM_CACHE", Path.home() / ".cache" / "ai-platform")) / "demo-model"


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in MODEL_FILES)


def build(recipe: Recipe, *, use_cache: bool = True, log: Callable[[str], None] | None = None) -> Path:
    """The trained model folder for `recipe`, from the cache or freshly trained into it.

    A lock file serializes builders of the same key (say `make demo` beside
    `make test`): the second waits and then finds the first one's result.
    """
    log = log or (lambda message: print(message, file=sys.stderr))
    target = cache_root() / cache_key(recipe)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if use_cache and _complete(target):
            log(f"demo model: cached at {target}")
            return target
        staging = target.with_name(f"{target.name}.tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        model.train(recipe, staging, log)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        return target
