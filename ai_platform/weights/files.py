"""What a model folder may hold: regular files, and symlinks that end at one inside the folder.

It is decided from lstat/stat before anything is opened: a FIFO named
`model.safetensors` would block its reader forever, and a dangling or looping
symlink would surface as a bare OSError. `open_regular` checks again on the
open file descriptor (opened non-blocking), for a file swapped after the scan.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from ai_platform.errors import (
    DanglingSymlinkError,
    ModelFolderError,
    NotRegularFileError,
    SymlinkEscapeError,
    SymlinkLoopError,
)

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def _not_regular(shown: str, mode: int) -> NotRegularFileError:
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    return NotRegularFileError(
        f"{shown}: {kind}, not a regular file; a model folder holds only files (remove it, or put the file there)"
    )


def check_entry(path: Path, relative: str, root: Path) -> None:
    """Raise unless `path` is a regular file, or a symlink that ends at one inside `root` (already resolved)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        raise ModelFolderError(f"{relative}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISLNK(mode):
        if not stat.S_ISREG(mode):
            raise _not_regular(relative, mode)
        return
    link = os.readlink(path)
    try:
        target = Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise DanglingSymlinkError(
                f"{relative}: symlink to {link!r}, which does not exist; restore the file it names or remove the link"
            ) from None
        if exc.errno == errno.ELOOP:
            raise SymlinkLoopError(
                f"{relative}: symlink loop ({relative} -> {link!r} never reaches a file); replace it with the file"
            ) from None
        raise ModelFolderError(f"{relative}: symlink to {link!r} cannot be followed ({exc.strerror})") from None
    if not target.is_relative_to(root):
        raise SymlinkEscapeError(f"{relative}: symlink points outside the snapshot ({link})")
    mode = os.stat(target).st_mode
    if not stat.S_ISREG(mode):
        raise _not_regular(f"{relative} -> {target.relative_to(root).as_posix()}", mode)


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file to read; anything else is refused without blocking (O_NONBLOCK, then fstat)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ModelFolderError(f"{path}: cannot be opened ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(str(path), mode)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
