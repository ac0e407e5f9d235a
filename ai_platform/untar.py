"""Extract a tar archive without letting it reach outside the folder: every extraction goes through here.

tarfile's `data` filter had bypasses until CPython 3.11.13 (CVE-2025-4517,
CVE-2024-12718, CVE-2025-4138, CVE-2025-4330, CVE-2025-4435): it judged a
member by `os.path.realpath`, which stops resolving links once a path
outgrows PATH_MAX, and by the links on disk at that moment, so a link made
later could turn an earlier one outward. We run the `data` filter and then
checks of our own that use neither realpath nor the order of members:

- no member is a device or FIFO, and no member name holds `..`;
- nothing is written through a symlink: not one of the member's parent
  folders, nor the member's own path (a later member replacing a link);
- a symlink's target and a hard link's target are resolved link by link
  (`_resolve`, at most 40 links, no path lookups beyond one lstat per
  component) and must stay inside; a hard link must name a file already
  extracted;
- once the archive is out, every symlink in the folder is resolved again, so
  a chain that only leads out after a later member (a -> l/../x, then l -> .)
  is caught.

Any refusal is an UnsafeArchiveError, of the class that names its cause
(ArchiveEscapeError, ThroughSymlinkError, SpecialMemberError); callers extract into a temporary
folder and move it into place only when the whole archive passed.
"""

from __future__ import annotations

import os
import stat
import tarfile
from pathlib import Path

from ai_platform.errors import ArchiveEscapeError, SpecialMemberError, ThroughSymlinkError, UnsafeArchiveError

MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup


def _again(exc: UnsafeArchiveError, message: str) -> UnsafeArchiveError:
    """The same refusal (its class), told in a wider `message`."""
    return type(exc)(message)


def _resolve(root: str, parts: list[str]) -> list[str]:
    """Where `parts` (relative to `root`) leads once every symlink on the way is followed, kept inside `root`."""
    pending, done, links = list(reversed(parts)), list[str](), 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                raise ArchiveEscapeError("leads outside the folder it is extracted to")
            done.pop()
            continue
        here = os.path.join(root, *done, part)
        try:
            mode = os.lstat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            done.append(part)  # not there (yet): the rest of the path is taken as written
            continue
        except OSError as exc:  # a path too long to look up is too long to trust
            raise ArchiveEscapeError(f"cannot be checked ({exc.strerror})") from None
        if not stat.S_ISLNK(mode):
            done.append(part)
            continue
        links += 1
        if links > MAX_LINKS:
            raise ArchiveEscapeError(f"goes through more than {MAX_LINKS} symlinks (a loop)")
        target = os.readlink(here)
        if target.startswith("/"):
            raise ArchiveEscapeError("leads outside the folder it is extracted to (through an absolute symlink)")
        pending.extend(reversed(target.split("/")))
    return done


def _check_member(member: tarfile.TarInfo, root: str) -> None:
    if member.isdev():  # character and block devices and FIFOs
        raise SpecialMemberError("is a device or FIFO; an archive here holds only files, folders and links")
    if (member.issym() or member.islnk()) and member.linkname.startswith("/"):
        raise ArchiveEscapeError(f"links to the absolute path {member.linkname!r}")
    parts = [p for p in member.name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveEscapeError("has '..' in its name")
    for depth in range(1, len(parts) + 1):
        here = os.path.join(root, *parts[:depth])
        try:
            mode = os.lstat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break  # nothing on disk from here down
        except OSError as exc:
            raise ArchiveEscapeError(f"cannot be checked ({exc.strerror})") from None
        if stat.S_ISLNK(mode) and (depth < len(parts) or not member.issym()):
            raise ThroughSymlinkError(f"would be written through the symlink {'/'.join(parts[:depth])!r}")
    if member.issym():
        try:
            _resolve(root, [*parts[:-1], *member.linkname.split("/")])
        except UnsafeArchiveError as exc:
            raise _again(exc, f"is a symlink to {member.linkname!r}, which {exc}") from None
    elif member.islnk():
        try:
            target = _resolve(root, member.linkname.split("/"))
        except UnsafeArchiveError as exc:
            raise _again(exc, f"is a hard link to {member.linkname!r}, which {exc}") from None
        if not os.path.isfile(os.path.join(root, *target)) or os.path.islink(os.path.join(root, *target)):
            raise ArchiveEscapeError(f"is a hard link to {member.linkname!r}, which is not a file extracted before it")


def _check_tree(root: str) -> None:
    """Every symlink now on disk still leads inside (a later link can turn an earlier one outward)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            relative = os.path.relpath(path, root)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                try:
                    _resolve(root, relative.split(os.sep))
                except UnsafeArchiveError as exc:
                    link = os.readlink(path)
                    raise _again(
                        exc, f"{relative!r} -> {link!r} {exc} (through the links extracted after it)"
                    ) from None
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise SpecialMemberError(f"{relative!r} is a device, FIFO or socket")


def extract(tar: tarfile.TarFile, dest: Path, what: str) -> None:
    """Extract every member of `tar` (opened for reading, streamed or not) into the folder `dest`.

    `what` names the archive in errors (e.g. "layer sha256:…"). On a refusal, `dest`
    holds part of the archive: extract into a temporary folder and remove it on failure.
    """
    root = str(dest)

    def check(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
        try:
            _check_member(member, root)  # first: tarfile's own answer to a device is less clear
            filtered = tarfile.data_filter(member, path)
        except UnsafeArchiveError as exc:
            raise _again(exc, f"{what}: {member.name!r} {exc}; nothing was extracted") from None
        except tarfile.FilterError as exc:  # what our checks, run first, did not see: no subclass claims it
            raise UnsafeArchiveError(f"{what}: {exc}; nothing was extracted") from None
        return filtered

    tar.extractall(dest, filter=check)
    try:
        _check_tree(root)
    except UnsafeArchiveError as exc:
        raise _again(exc, f"{what}: {exc}; nothing was extracted") from None
