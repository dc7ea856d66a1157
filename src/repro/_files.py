"""Read a small input file (a protocol) without ever blocking on what is not a regular file, and
open a file below a root without following a symlink (:func:`open_below`: what verify's walk
opens a bundle's files with, and what a bundle's identity is read through); and a path given to
the Python API, checked (:func:`path_of`).

A path test before an open (``Path.is_file``) leaves a window in which a FIFO or a device can take
the file's place, and opening a FIFO blocks until a writer comes. Here the open itself cannot
block (``O_NONBLOCK``), and ``fstat`` of what was opened decides. The module imports only the
standard library: the study command calls it before its own imports."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "DIR_FLAGS",
    "FILE_FLAGS",
    "PathArg",
    "open_below",
    "path_of",
    "paths_of",
    "read_regular",
]

#: How a directory below a root is opened: never through a symlink.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: O_NONBLOCK: a FIFO put in place of a file after the scan must not block the open; fstat then
#: refuses it as not a regular file before anything is read.
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

#: The errors under which ``Path.is_file`` says False: nothing (or a dangling link) is there.
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})


def read_regular(path: Path, limit: int) -> tuple[int, bytes] | None:
    """The size ``fstat`` gives and at most ``limit + 1`` bytes of the regular file at ``path``
    (one past the limit: a file may grow, or, in ``/proc``, report a size of 0), or None when
    nothing is there or it is no regular file (a directory, a FIFO, a device). A file whose size
    is over ``limit`` is not read (its bytes are ``b""``). Raises OSError when it cannot be
    opened or read for another reason (permissions)."""
    try:
        # What is plainly no regular file is not opened at all (opening a FIFO's read end, even
        # without blocking, would let a writer waiting on it go on into a broken pipe).
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return None
        raise
    with open(fd, "rb", closefd=True) as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > limit:
            return info.st_size, b""
        return info.st_size, file.read(limit + 1)


def open_below(root: Path, name: str) -> int:
    """A descriptor for ``name`` (``/``-separated) below ``root``, reached one component at a
    time without following a symlink, so a file or directory swapped for a link after the scan
    is refused rather than followed."""
    fd = os.open(root, DIR_FLAGS)
    try:
        *directories, leaf = name.split("/")
        for part in directories:
            parent, fd = fd, os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(parent)
        return os.open(leaf, FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


#: What the Python API's functions take as a path: a ``str`` or any ``os.PathLike`` of one
#: (``pathlib.Path``).
PathArg = str | os.PathLike[str]


def path_of(value: object, what: str) -> Path:
    """``value`` as a :class:`Path`; a value that is no path (bytes among them) is a
    :class:`TypeError` naming the argument ``what``."""
    if isinstance(value, str | os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str):
            return Path(path)
    raise TypeError(f"{what} must be a str or an os.PathLike of one, not {type(value).__name__}")


def paths_of(values: object, what: str) -> list[Path]:
    """Each path of the sequence ``values``; one path alone (a ``str`` would be iterated as its
    characters) is a :class:`TypeError`."""
    if isinstance(values, str | bytes | os.PathLike) or not isinstance(values, Iterable):
        raise TypeError(f"{what} must be a sequence of paths, not {type(values).__name__}")
    return [path_of(value, f"each of {what}") for value in values]
