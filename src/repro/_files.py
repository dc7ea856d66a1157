"""Read a small input file (a protocol) without ever blocking on what is not a regular file.

A path test before an open (``Path.is_file``) leaves a window in which a FIFO or a device can take
the file's place, and opening a FIFO blocks until a writer comes. Here the open itself cannot
block (``O_NONBLOCK``), and ``fstat`` of what was opened decides. The module imports only the
standard library: the study command calls it before its own imports."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["read_regular"]

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
