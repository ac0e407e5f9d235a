"""What every command shares: the result printer, the --json convention, where the platform is (the site resolver)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from ai_platform.site import Location, Site
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


def location(args: argparse.Namespace) -> Location:
    """Where the platform is for this command: its --repo, --home and --branch where it has them, else the
    environment, with the site resolver's defaults (`ai_platform.site`)."""
    from ai_platform.site import locate

    return locate(getattr(args, "repo", None), getattr(args, "home", None), getattr(args, "branch", None))


def site_of(args: argparse.Namespace, option: str = "--home DIR") -> Site:
    """The site this command works on: the branch's platform.yaml at the home, its store, warehouse, backend."""
    from ai_platform.site import site

    return site(location(args), option)


def configured_path(args: argparse.Namespace, given: str | None, option: str, pick: Callable[[Site], str]) -> Path:
    """`given` (the command's --option), else the location platform.yaml names (`pick`), under the home."""
    if given:
        return Path(given)
    here = site_of(args, option)
    return here.state(pick(here))


HOME_HELP = "the platform home (default: $AI_PLATFORM_HOME, else the repo folder's .state)"
WAREHOUSE_HELP = "a DuckDB file or a ducklake:postgres:... catalog (default: platform.yaml's storage.warehouse)"


def warehouse_at(args: argparse.Namespace) -> Warehouse:
    """--warehouse (a DuckDB file or a DuckLake catalog), else platform.yaml's storage.warehouse."""
    from ai_platform.warehouse import at

    if args.warehouse:
        return at(args.warehouse)
    return site_of(args, "--warehouse DB").warehouse


def home_of(args: argparse.Namespace) -> Path:
    return location(args).need_home()


def check_model_here(here: Location, model: str) -> None:
    """`model` is one this machine knows: a rollout state or pin in the home, or a spec on the repo's branch."""
    from ai_platform.known_models import check_model, known_models

    home, repo, branch = here.need_home(), here.git_dir(), here.branch
    where = f"the rollout states and pinned specs in {home}"
    if repo:
        known = known_models(home, repo, branch)
        where += f" and the model specs in {here.repo} at {branch}"
    else:
        known = known_models(home)
        where += "; set AI_PLATFORM_REPO to include the platform repo's model specs"
    check_model(model, known, where)
