"""Bearer keys and their scopes: who may call the gateway, and for what.

A key is `aip-` and 43 URL-safe characters (256 random bits). Only its sha256 is
stored, in a JSON file under the platform home that platform.yaml names
(`gateway.keys`), never in the platform repo:

    {"keys": [{"name": "legal-ana", "sha256": "<hex>", "scopes": ["label"]}]}

Scopes: `invoke` (prompts and the OpenAI API), `label` (`POST /v1/feedback`; the
key's name is the reviewer), `admin` (`/admin/*`). The gateway re-reads the file
when it changes, so a key created or revoked with `ai-platform keys` takes effect
at the next request. The gateway also writes a local admin key for rollouts on
this machine (`<home>/rollout/gateway.admin-key`, readable by the owner only).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from ai_platform.artifacts import atomic_write
from ai_platform.errors import ConfigError, KeyRefused

Scope = Literal["invoke", "label", "admin"]
SCOPES: tuple[str, ...] = get_args(Scope)
PREFIX = "aip-"


@dataclass(frozen=True)
class Key:
    name: str
    sha256: str
    scopes: tuple[str, ...]


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def new_key() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def read(path: Path) -> list[Key]:
    """The keys of a key file; a missing file holds none."""
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        keys = [Key(k["name"], k["sha256"], tuple(k["scopes"])) for k in data["keys"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a key file ({type(exc).__name__}: {exc})") from None
    for key in keys:
        if unknown := set(key.scopes) - set(SCOPES):
            raise ConfigError(f"{path}: key {key.name!r} has unknown scopes {sorted(unknown)} (known: {SCOPES})")
    return keys


def write(path: Path, keys: list[Key]) -> None:
    entries = [{"name": k.name, "sha256": k.sha256, "scopes": list(k.scopes)} for k in keys]
    atomic_write(path, json.dumps({"keys": entries}, indent=2).encode("utf-8"))
    os.chmod(path, 0o600)


def create(path: Path, name: str, scopes: list[str]) -> str:
    """A new key named `name` (replacing one of that name); returns the raw key, shown once, stored nowhere."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise ConfigError(f"key name {name!r}: letters, digits, '-', '_' and '.' only")
    if not scopes or set(scopes) - set(SCOPES):
        raise ConfigError(f"scopes {scopes}: give one or more of {', '.join(SCOPES)}")
    raw = new_key()
    keys = [k for k in read(path) if k.name != name] + [Key(name, digest(raw), tuple(dict.fromkeys(scopes)))]
    write(path, keys)
    return raw


def revoke(path: Path, name: str) -> bool:
    keys = read(path)
    kept = [k for k in keys if k.name != name]
    if len(kept) != len(keys):
        write(path, kept)
    return len(kept) != len(keys)


class KeyRing:
    """The keys a gateway accepts: its key file (re-read when it changes) and its local admin key."""

    def __init__(self, path: Path, local_admin: str | None = None) -> None:
        self.path = path
        self.local = Key("local-admin", digest(local_admin), ("admin",)) if local_admin else None
        self._stamp: tuple[int, int, int, int] | None = None
        self._keys: list[Key] = []

    def keys(self) -> list[Key]:
        """The file's keys, read again whenever the file is another: `stat` follows symlinks, and the inode is in
        the stamp, so a Kubernetes Secret volume's rotation (the kubelet writes a new directory and swaps the
        `..data` link to it) is seen even when the new file has the old one's size and modification time."""
        try:
            stat = self.path.stat()
            stamp: tuple[int, int, int, int] | None = (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._keys, self._stamp = read(self.path), stamp
        return self._keys + ([self.local] if self.local else [])

    def authorize(self, authorization: str | None, scope: str) -> Key:
        """The key an `Authorization: Bearer …` header carries, if it has `scope`; else KeyRefused."""
        scheme, _, raw = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            raise KeyRefused(401, "missing API key: send 'Authorization: Bearer <key>'")
        wanted = digest(raw.strip())
        for key in self.keys():
            if hmac.compare_digest(key.sha256, wanted):
                if scope not in key.scopes:
                    scopes = ", ".join(key.scopes)
                    raise KeyRefused(403, f"this key ({key.name}) may not {scope}: its scopes are {scopes}")
                return key
        raise KeyRefused(401, "invalid API key")
