"""Files read and written safely: a small input file (a protocol) read without ever blocking on
what is not a regular file (:func:`read_regular`), a file written whole or not at all
(:func:`write_atomically`), a file below a root opened without following a symlink
(:func:`open_below`: what verify's walk opens a bundle's files with, and what a bundle's identity
is read through), and a path given to the Python API, checked (:func:`path_of`).

A path test before an open (``Path.is_file``) leaves a window in which a FIFO or a device can take
the file's place, and opening a FIFO blocks until a writer comes. Here the open itself cannot
block (``O_NONBLOCK``), and ``fstat`` of what was opened decides. The module imports only the
standard library: the study command calls it before its own imports."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "DIR_FLAGS",
    "FILE_FLAGS",
    "PathArg",
    "open_below",
    "partial_name",
    "path_of",
    "paths_of",
    "read_regular",
    "write_atomically",
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


#: A new file, refused if its name exists, not inherited by a child process.
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def partial_name(path: Path) -> Path:
    """The temporary name ``path`` is written under: ``.NAME.partial`` beside it (the name
    verify knows an unfinished study's files by)."""
    return path.with_name(f".{path.name}.partial")


@contextmanager
def write_atomically(
    path: Path,
    *,
    mode: int = 0o600,
    exact_mode: bool = True,
    place: Callable[[Path, Path], None] = os.replace,
    keep_partial: bool = False,
) -> Iterator[BinaryIO]:
    """A file open for writing bytes under ``path``'s temporary name (:func:`partial_name`),
    which is put in place as ``path`` once the block ends: flushed, fsynced, closed, then
    ``place(tmp, path)``, so a reader sees the whole file or none.

    - ``mode``: the file's mode; exactly that whatever the umask (``exact_mode``), or as the
      umask narrows it (``exact_mode=False``, a file meant to be shared as the user's others).
    - ``place``: ``os.replace`` (a rename, which would replace a file at ``path``) or
      ``os.link`` (which refuses one that exists: ``FileExistsError``), or any callable that
      puts the temporary file in place (the bundle writer's hook).
    - ``keep_partial``: leave the temporary file when the block or the write fails (a study's
      unfinished file, which verify names as such); otherwise it is removed, and it never
      outlives a successful ``place``.

    Raises ``FileExistsError`` when the temporary name exists (that file is left alone: it is
    not this call's), and any ``OSError`` of the writing or the placing."""
    tmp = partial_name(path)
    fd = os.open(tmp, _NEW, mode)
    placed = False
    try:
        try:
            if exact_mode:
                os.fchmod(fd, mode)  # the umask narrows the mode os.open sets; never widens it
            fh = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        place(tmp, path)
        placed = True
    finally:
        if placed or not keep_partial:
            tmp.unlink(missing_ok=True)


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
