"""Pickle-format weights: refused, unless the model spec opts in and picklescan reports them clean.

Unpickling runs whatever callables the stream names (a `__reduce__` can call
`os.system`), so a pickle is judged by the globals it imports, never by loading
it. picklescan runs in strict mode: every global outside its short allowlist
(`collections.OrderedDict`, `torch._utils._rebuild_tensor_v2`, the torch
storage types, numpy's array rebuild) counts as dangerous, not merely
"suspicious". A partial parse (picklescan's `scan_err`) is a refusal too:
the unread rest of the stream could import anything.
"""

from __future__ import annotations

from pathlib import Path

from ai_platform.errors import UnsafePickleError

SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


def is_pickle(path: Path | str) -> bool:
    return Path(path).suffix.lower() in SUFFIXES  # `.BIN` loads just the same


def check(path: Path, relative: str) -> list[str]:
    """Raise unless picklescan reports `path` clean; return the (allowlisted) globals it imports."""
    from picklescan.scanner import SafetyLevel, scan_file_path

    try:
        report = scan_file_path(str(path), strict=True)
    except Exception as exc:  # picklescan's own error types (bad zip, bad magic, ...) are not one tree
        raise UnsafePickleError(f"{relative}: picklescan could not scan it ({type(exc).__name__}: {exc})") from None
    flagged = sorted({f"{g.module}.{g.name}" for g in report.globals if g.safety is not SafetyLevel.Innocuous})
    if flagged:
        raise UnsafePickleError(f"{relative}: picklescan flagged dangerous globals: {', '.join(flagged)}")
    if report.scan_err:
        raise UnsafePickleError(f"{relative}: picklescan could not read the whole pickle stream (scan error)")
    seen = sorted({f"{g.module}.{g.name}" for g in report.globals})
    if not seen:
        # Every tensor in a torch checkpoint is rebuilt through an allowlisted global; none at
        # all means picklescan did not recognise a checkpoint (it logs and reports such files clean).
        raise UnsafePickleError(f"{relative}: picklescan found no pickled tensors: not a recognisable checkpoint")
    return seen
