"""Quantization results shared by the homes of one machine, by the same inputs key as the home's own record.

A home records each workload result under its inputs key (`stage.inputs_key`: the code version, the verified
weights, the recipe, the seed, the calibration bytes and where it runs), so the same home never quantizes the
same inputs twice. A new home on the same machine (`rm -rf demo; make demo`, a second checkout, a CI run) has
no records and would run the workload again: minutes for a 30-layer model on 2 CPU cores. With
`$AI_PLATFORM_QUANTIZED_CACHE` naming a folder, a result made on the embedded target is copied there after it
passed its re-hash (`put`), and a home without a record of that key copies it back (`get`) before the stage
re-hashes it again and judges the gates on its report, exactly as for its own record.

Opt in, because every entry is a whole quantized model: `make demo` sets it to `<AI_PLATFORM_CACHE>/quantized`.
A registry artifact store needs none: its records already live where every machine reads them.

Layout: `<cache>/<key>/report.json` and `<cache>/<key>/<digest>/` (the folder as the workload wrote it). An entry
appears whole or not at all (written beside, then renamed), so two homes quantizing at once cannot leave half of
one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ENV = "AI_PLATFORM_QUANTIZED_CACHE"


def location(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The shared folder `$AI_PLATFORM_QUANTIZED_CACHE` names, or None: not shared."""
    value = environ.get(ENV)
    return Path(value) if value else None


def put(cache: Path, key: str, report: dict[str, Any], folder: Path) -> bool:
    """Keep `report` and a copy of its output `folder` under `key`; False where an entry for the key is there."""
    entry = cache / key
    if (entry / "report.json").is_file():
        return False
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=cache))
    try:
        shutil.copytree(folder, staging / report["digest"])
        (staging / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
        try:
            staging.rename(entry)
        except OSError:  # another home put the same key first
            return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def drop(cache: Path, key: str) -> None:
    """Remove the entry under `key` (one whose folder no longer matches its report), so a fresh result can take
    its place."""
    entry = cache / key
    if entry.is_dir():
        doomed = entry.with_name(f".{key[:12]}-dropped-{os.getpid()}")
        try:
            entry.rename(doomed)  # gone from `get` at once, then deleted
        except OSError:
            return
        shutil.rmtree(doomed, ignore_errors=True)


def get(cache: Path, key: str, output_root: Path) -> dict[str, Any] | None:
    """The report kept under `key`, its folder copied to `<output_root>/<digest>` and the report saying so; None
    where there is no entry. The copy is not trusted here: the caller re-hashes it (`stage.accept`)."""
    try:
        report: dict[str, Any] = json.loads((cache / key / "report.json").read_text(encoding="utf-8"))
        digest = str(report["digest"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    source = cache / key / digest
    if not re.fullmatch(r"[0-9a-f]{64}", digest) or not source.is_dir():  # a name, never a path ("..")
        return None
    target = output_root / digest
    output_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=output_root))
    try:
        shutil.copytree(source, staging / digest)
        shutil.rmtree(target, ignore_errors=True)
        (staging / digest).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report | {"folder": str(target)}
