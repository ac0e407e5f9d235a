"""What every command shares: the result printer, the --json convention, where the home and warehouse are."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ai_platform.errors import PlatformError

if TYPE_CHECKING:
    from ai_platform.config import PlatformConfig
    from ai_platform.warehouse import Warehouse

Handler = Callable[[argparse.Namespace], Any]
Areas: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # an area's subcommands


def epilog(*examples: str) -> dict[str, Any]:
    """A command's help closes with command lines a reader can copy (the keywords of `add_parser`)."""
    text = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    return {"epilog": text, "formatter_class": argparse.RawDescriptionHelpFormatter}


def command(area: Areas, name: str, handler: Handler, help: str, examples: tuple[str, ...]) -> argparse.ArgumentParser:
    """A subcommand of `area` that runs `handler`, takes --json, and shows `examples` at the end of its help."""
    p = area.add_parser(name, help=help, description=help, **epilog(*examples))
    p.set_defaults(handler=handler)
    p.add_argument("--json", action="store_true", help="print a machine-readable result on stdout")
    return p


def emit(args: argparse.Namespace, result: Any, human: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(result, ensure_ascii=False, default=json_default, indent=2))
    else:
        print(human)


def json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _configured() -> tuple[PlatformConfig, Path]:
    """platform.yaml (on $AI_PLATFORM_REPO's branch when set, the default otherwise) and $AI_PLATFORM_HOME."""
    from ai_platform.changes import local_repo
    from ai_platform.config import PlatformConfig
    from ai_platform.platform_repo import config_at

    home = os.environ.get("AI_PLATFORM_HOME")
    if not home:
        raise PlatformError("set AI_PLATFORM_HOME or pass the location")
    repo, branch = os.environ.get("AI_PLATFORM_REPO"), os.environ.get("AI_PLATFORM_BRANCH", "main")
    config = config_at(local_repo(repo, Path(home)), branch) if repo else PlatformConfig(name="default")
    return config, Path(home)


def configured_path(given: str | None, option: str, pick: Callable[[PlatformConfig], str]) -> Path:
    """`given` (the command's --option), else the location platform.yaml names (`pick`), under $AI_PLATFORM_HOME."""
    from ai_platform.config import under

    if given:
        return Path(given)
    try:
        config, home = _configured()
    except PlatformError:
        raise PlatformError(f"pass {option} or set AI_PLATFORM_HOME") from None
    return under(home, pick(config))


WAREHOUSE_HELP = "a DuckDB file or a ducklake:postgres:... catalog (default: platform.yaml's storage.warehouse)"


def warehouse_at(args: argparse.Namespace) -> Warehouse:
    """--warehouse (a DuckDB file or a DuckLake catalog), else platform.yaml's storage.warehouse."""
    from ai_platform.warehouse import at

    if args.warehouse:
        return at(args.warehouse)
    try:
        config, home = _configured()
    except PlatformError:
        raise PlatformError("pass --warehouse DB or set AI_PLATFORM_HOME") from None
    return at(config.storage.warehouse_location(home), config.storage.warehouse_data)


def home_of(args: argparse.Namespace) -> Path:
    home = getattr(args, "home", None) or os.environ.get("AI_PLATFORM_HOME")
    if not home:
        raise PlatformError("no platform home: pass --home DIR or set AI_PLATFORM_HOME")
    return Path(home)


def check_model_here(home: Path, model: str) -> None:
    """`model` is one this machine knows: a rollout state or pin in `home`, or a spec on $AI_PLATFORM_REPO's branch."""
    from ai_platform.changes import local_repo
    from ai_platform.known_models import check_model, known_models

    repo, branch = os.environ.get("AI_PLATFORM_REPO"), os.environ.get("AI_PLATFORM_BRANCH", "main")
    where = f"the rollout states and pinned specs in {home}"
    if repo:
        known = known_models(home, local_repo(repo, home), branch)
        where += f" and the model specs in {repo} at {branch}"
    else:
        known = known_models(home)
        where += "; set AI_PLATFORM_REPO to include the platform repo's model specs"
    check_model(model, known, where)
