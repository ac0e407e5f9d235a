"""The inbox folder: which label files are there, and which are new since last time.

The inbox sensor (sensors/inbox.py) keeps a cursor of the files it has seen as
(name, size, mtime_ns, sha256). A file is hashed only when its size or mtime
changed, and it counts as new when its sha256 was not seen: ingestion is keyed
by content too, so a renamed copy of a seen file asks for nothing. A file
modified within the last few seconds is left for a later tick, so a reviewer's
copy or the gateway's write is not taken half done.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import astuple, dataclass, field
from pathlib import Path
from stat import S_ISDIR, S_ISFIFO, S_ISLNK, S_ISREG, S_ISSOCK

from ai_platform.config import Platform, under
from ai_platform.errors import PlatformError, UnreadableLabelFileError
from ai_platform.feedback.formats import FORMATS
from ai_platform.platform_repo import config_at
from ai_platform.warehouse import at

SETTLE_S = 5.0


@dataclass(frozen=True)
class InboxFile:
    name: str  # relative to the inbox, with /
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class Scan:
    files: list[InboxFile]  # settled label files, by name
    settling: list[str]  # label files modified within SETTLE_S: next tick
    refused: list[str] = field(default_factory=list)  # "NAME: why": symlinks, FIFOs, ... never opened

    def cursor(self) -> str:
        return json.dumps([astuple(f) for f in self.files], separators=(",", ":"))

    def new_since(self, cursor: str | None) -> list[InboxFile]:
        seen = {f.sha256 for f in files_in(cursor)}
        return [f for f in self.files if f.sha256 not in seen]


def files_in(cursor: str | None) -> list[InboxFile]:
    """The files a cursor remembers; an unreadable cursor remembers none (everything is new again, harmlessly)."""
    try:
        return [InboxFile(str(n), int(s), int(m), str(h)) for n, s, m, h in json.loads(cursor or "[]")]
    except (ValueError, TypeError):
        return []


def inbox_path(repo: Path, home: Path, ref: str) -> Path:
    """platform.yaml's feedback.inbox at `ref`, under the platform home unless absolute."""
    return under(home, config_at(repo, ref).feedback.inbox)


def scan(inbox: Path, cursor: str | None = None, *, now: float | None = None, settle_s: float = SETTLE_S) -> Scan:
    """The label files under `inbox` (hidden files and folders skipped), reusing the cursor's hashes.

    Only regular files are read: a symlink (which could name any file on the host) or a FIFO, socket or
    device is never opened, only listed in `refused`."""
    known = {f.name: f for f in files_in(cursor)}
    now = time.time() if now is None else now
    files, settling, refused = [], [], []
    for path in sorted(inbox.rglob("*")):
        relative = path.relative_to(inbox)
        if any(part.startswith(".") for part in relative.parts):
            continue
        try:
            stat = path.lstat()  # the entry itself: a symlink is not followed
        except OSError:  # gone between listing and stat: not there
            continue
        name = relative.as_posix()
        if S_ISDIR(stat.st_mode):
            continue
        if not S_ISREG(stat.st_mode):
            refused.append(f"{name}: {_kind(stat.st_mode)}, not a regular file: skipped, never opened")
            continue
        if path.suffix.lower() not in FORMATS:
            continue
        if now - stat.st_mtime < settle_s:
            settling.append(name)
            continue
        before = known.get(name)
        if before is not None and (before.size, before.mtime_ns) == (stat.st_size, stat.st_mtime_ns):
            files.append(before)
            continue
        try:
            files.append(InboxFile(name, stat.st_size, stat.st_mtime_ns, _sha256(path)))
        except OSError as exc:
            raise UnreadableLabelFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return Scan(files, settling, refused)


def _kind(mode: int) -> str:
    if S_ISLNK(mode):
        return "a symlink"
    if S_ISFIFO(mode):
        return "a FIFO"
    return "a socket" if S_ISSOCK(mode) else "a device"


def _sha256(path: Path) -> str:
    """Open without following a symlink or blocking on a FIFO swapped in since the scan listed a regular file."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with open(fd, "rb") as handle:
        if not S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "no longer a regular file")
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def run_key(files: list[InboxFile]) -> str:
    """The same new files ask for the same run, however often a tick sees them."""
    return hashlib.sha256("\n".join(sorted(f.sha256 for f in files)).encode()).hexdigest()


def already_ingested(platform: Platform, digests: list[str]) -> set[str]:
    """Which of these file contents the warehouse has ingested already (`feedback_files`): a sensor with an empty
    cursor (a new Dagster instance, `make ui` after `make demo`) must not ask to ingest them again. A warehouse
    that does not exist yet, or is busy, answers "none": ingestion is idempotent, so the worst is one run too many."""
    location = platform.config.storage.warehouse_location(platform.home)
    if not digests or not (location.startswith("ducklake:") or Path(location).is_file()):
        return set()
    marks = ", ".join("?" for _ in digests)
    try:
        query = f"SELECT sha256 FROM feedback_files WHERE sha256 IN ({marks})"
        _, rows = at(location, lock_timeout_s=2).query(query, digests)
    except PlatformError:
        return set()
    return {row[0] for row in rows}
