"""Files read and written safely: a small input file (a protocol) read without ever blocking on
what is not a regular file (:func:`read_regular`), and a file written whole or not at all
(:func:`write_atomically`).

A path test before an open (``Path.is_file``) leaves a window in which a FIFO or a device can take
the file's place, and opening a FIFO blocks until a writer comes. Here the open itself cannot
block (``O_NONBLOCK``), and ``fstat`` of what was opened decides. The module imports only the
standard library: the study command calls it before its own imports."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["partial_name", "read_regular", "write_atomically"]

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
