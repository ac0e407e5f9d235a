"""Deep validation of a platform repo: what load_platform's schema check cannot see, found before any stage runs.

load_platform checks each file's shape. A repo can pass it and still fail hours later: a gate naming a
metric the canary does not measure fails the canary after quantization and the image build; a `.prompt`
with a syntax error fails compiled_prompts; a malformed eval line fails the canary. This compiles every
prompt the specs use, checks every gate's metric and loads every eval set, with the stages' own code, and
reports every problem found, each with its file (and line where known). `ai-platform config validate` and
the model_spec stage's `spec_valid` check both run it.

Each gate is also sized against its eval set (`gates.sizing`): a rate or count gate that no run on a set of
that size can pass (a bound a flawless run's interval cannot reach, such as `min: 0.95` on 32 cases; the
zero-tolerance `min: 1.0` and `max: 0` pass when no case fails, and the notes say what the set shows) is a
problem; for a relative gate the notes say how many paired cases its margin needs at the gate's confidence
and 80% power, what margin the set supports, and what a tighter one would need, and say so when the set is
smaller.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from ai_platform.config import Platform
from ai_platform.errors import ConfigError, EvalSetError, GateError, PromptError
from ai_platform.evaluation.gates import check_metrics, label, sizing
from ai_platform.evaluation.scoring import MEASURES
from ai_platform.evaluation.stage import load_cases
from ai_platform.platform_repo import Commit
from ai_platform.prompts.compiler import CompiledPrompt, compile_file
from ai_platform.prompts.stage import serveability
from ai_platform.specs import SpecSnapshot, spec_digest

# load_cases and serveability read the spec and the repo's files only; they never look at the commit
_UNPINNED = Commit(sha="", author="", timestamp=0, message="")


def problems(platform: Platform, models: Iterable[str] | None = None) -> list[str]:
    """Every problem of the named models (default: all), each `file[:line]: what is wrong`."""
    return review(platform, models)[0]


def review(platform: Platform, models: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
    """The named models' problems, and notes on what each gate's eval set can show (`file[:line]: ...` each)."""
    names = sorted(platform.models) if models is None else list(models)
    found: list[str] = []
    notes: list[str] = []
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
            cases = load_cases(snap)
        except EvalSetError as exc:
            found.append(str(exc))
            continue
        except UnicodeDecodeError as exc:
            found.append(
                f"models/{name}.yaml: canary.evals: an eval set is not UTF-8 ({exc.reason} at byte {exc.start})"
            )
            continue
        attacks = sum(1 for c in cases if "attack" in c)
        counts = {"all": len(cases), "attack": attacks, "ordinary": len(cases) - attacks}
        for i, gate in enumerate(spec.canary.gates):
            if gate.metric not in MEASURES:
                continue  # reported above
            line = _line(spec_file, ("canary", "gates", i))
            where = f"models/{name}.yaml{f':{line}' if line else ''}: canary.gates: {label(gate)}"
            size = sizing(gate, counts[MEASURES[gate.metric].cases])
            if size.problem:
                found.append(f"{where}: {size.problem}")
            else:
                notes.append(f"{where}: {size.note}")
        for prompt in spec.prompts:  # the example render reads the eval sets: only once they load
            document = compiled[prompt]
            if document is not None:
                found += [f"prompts/{prompt}.prompt: {problem}" for problem in serveability(snap, document.document)]
    return found, notes


def validate(platform: Platform, models: Iterable[str] | None = None, where: str = "") -> list[str]:
    """A ConfigError listing every problem `review` finds, if any, under `where` (default: the repo's folder);
    else the notes on the gates' eval-set sizes."""
    found, notes = review(platform, models)
    if found:
        count = f"{len(found)} problem{'s' if len(found) != 1 else ''}"
        raise ConfigError(f"{where or platform.root}: {count}:\n  " + "\n  ".join(found))
    return notes


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
