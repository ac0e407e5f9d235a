"""YAML from the platform repo (platform.yaml, models/*.yaml), read so that one commit cannot stall the pipeline.

PyYAML's safe loader builds no Python objects from tags, but it still takes any document it is given:
- aliases: nine levels of nine `*name` references are 300 bytes that hold 10^8 values for whatever walks
  them (an error message that showed the wrong value took 45 s and gigabytes); a config has no need of
  anchors and aliases, so an alias (and a `<<` merge, which is one) is refused where it stands;
- a key given twice silently keeps the last value: refused, naming both lines;
- nesting deeper than Python's recursion limit raised RecursionError: refused as nested too deeply;
- size: a file over MAX_BYTES is refused before it is read (the demo's largest is 3 KB);
- a FIFO, socket or device is refused without being opened for a blocking read.
Every refusal is a ConfigError naming the file (and line and column where YAML gives one).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from ai_platform.errors import ConfigError

MAX_BYTES = 1024 * 1024


class _Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML is untyped
    """SafeLoader without aliases and without repeated keys."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            why = "YAML aliases (*name, << merges) are not allowed in platform config; write the value out"
            raise yaml.composer.ComposerError(None, None, why, mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: the constructor below says so
                continue
            if first is not key_node:
                why = f"{key!r} is given twice (first on line {first.start_mark.line + 1})"
                raise yaml.constructor.ConstructorError(None, None, why, key_node.start_mark)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


def read_yaml(path: Path) -> Any:
    """The YAML document in the regular file at `path`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file (a folder, FIFO, socket or device); refused unread")
        raise ConfigError(f"{path}: {info.st_size} bytes, more than the {MAX_BYTES} a config file may have")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_BYTES + 1)
    return parse_yaml(data, str(path))


def parse_yaml(data: str | bytes, where: str) -> Any:
    """The YAML document in `data` (a file's bytes or text); `where` names it in errors."""
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{where}: more than the {MAX_BYTES} bytes a config file may have")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where}: not UTF-8 (byte {exc.start})") from None
    try:
        return yaml.load(data, Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise ConfigError(f"{where}{at}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    except RecursionError:
        raise ConfigError(f"{where}: invalid YAML: nested too deeply to read") from None
