"""Deep validation of a platform repo: what load_platform's schema check cannot see, found before any stage runs.

load_platform checks each file's shape. A repo can pass it and still fail hours later: a gate naming a
metric the canary does not measure fails the canary after quantization and the image build; a `.prompt`
with a syntax error fails compiled_prompts; a malformed eval line fails the canary. This compiles every
prompt the specs use, checks every gate's metric and loads every eval set, with the stages' own code, and
reports every problem found, each with its file (and line where known). `ai-platform config validate` and
the model_spec stage's `spec_valid` check both run it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from ai_platform.config import Platform
from ai_platform.errors import ConfigError, EvalSetError, GateError, PromptError
from ai_platform.evaluation.gates import check_metrics
from ai_platform.evaluation.stage import load_cases
from ai_platform.platform_repo import Commit
from ai_platform.prompts.compiler import CompiledPrompt, compile_file
from ai_platform.prompts.stage import serveability
from ai_platform.specs import SpecSnapshot, spec_digest

# load_cases and serveability read the spec and the repo's files only; they never look at the commit
_UNPINNED = Commit(sha="", author="", timestamp=0, message="")


def problems(platform: Platform, models: Iterable[str] | None = None) -> list[str]:
    """Every problem of the named models (default: all), each `file[:line]: what is wrong`."""
    names = sorted(platform.models) if models is None else list(models)
    found: list[str] = []
    compiled: dict[str, CompiledPrompt | None] = {}
    for name in names:
        for prompt in platform.models[name].prompts:
            if prompt not in compiled:
                compiled[prompt] = _compile(platform, prompt, found)
    for name in names:
        spec = platform.models[name]
        spec_file = platform.file(f"models/{name}.yaml")
        for i, gate in enumerate(spec.canary.gates):
            try:
                check_metrics([gate])
            except GateError as exc:
                line = _line(spec_file, ("canary", "gates", i, "metric"))
                found.append(f"models/{name}.yaml{f':{line}' if line else ''}: {exc}")
        snap = SpecSnapshot(_UNPINNED, platform, spec, spec_digest(spec))
        try:
            load_cases(snap)
        except EvalSetError as exc:
            found.append(str(exc))
            continue
        except UnicodeDecodeError as exc:
            found.append(
                f"models/{name}.yaml: canary.evals: an eval set is not UTF-8 ({exc.reason} at byte {exc.start})"
            )
            continue
        for prompt in spec.prompts:  # the example render reads the eval sets: only once they load
            document = compiled[prompt]
            if document is not None:
                found += [f"prompts/{prompt}.prompt: {problem}" for problem in serveability(snap, document.document)]
    return found


def validate(platform: Platform, models: Iterable[str] | None = None, where: str = "") -> None:
    """A ConfigError listing every problem `problems` finds, if any, under `where` (default: the repo's folder)."""
    found = problems(platform, models)
    if found:
        count = f"{len(found)} problem{'s' if len(found) != 1 else ''}"
        raise ConfigError(f"{where or platform.root}: {count}:\n  " + "\n  ".join(found))


def _compile(platform: Platform, prompt: str, found: list[str]) -> CompiledPrompt | None:
    relative = f"prompts/{prompt}.prompt"
    try:
        return compile_file(platform.file(relative), display_path=relative)
    except PromptError as exc:  # path:line:col: message
        found.append(str(exc))
        return None


def _line(path: Path, where: tuple[str | int, ...]) -> int | None:
    """The 1-based line of the value at `where` in a YAML file, if the file has it."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    for key in where:
        if isinstance(node, yaml.MappingNode):
            node = next((value for k, value in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            return None
        if node is None:
            return None
    return int(node.start_mark.line) + 1
