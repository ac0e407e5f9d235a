"""What the benchmarks share (and the tests import from here too): local servers started the way the
product starts them. Not a benchmark itself: `tests/test_benchmarks.py` runs only `benchmarks/*.py`."""

import types

SMOKE_HELP = "seconds, not minutes: that it runs and prints its figures (tests/test_benchmarks.py); not the figures"
# The exit status of a benchmark that cannot run here (a system tool or server missing; it says which on stderr):
# automake's "skipped", which tests/test_benchmarks.py reports as a skip, not a failure.
SKIP = 77


def module_at(commit: str, path: str) -> types.ModuleType:
    """The module at `path` as it was in `commit` (read with `git show`, executed on its own): a benchmark's
    baseline is often our own code before a change. Its imports resolve against today's package."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent.parent
    source = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType(f"{Path(path).stem}_{commit}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{Path(path).name}@{commit}", "exec"), module.__dict__)
    return module
