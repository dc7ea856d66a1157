"""A packed bundle: the bag serialized as BagIt describes it, in one top-level directory named
after the bundle directory, as a zip or tar file (``repro pack``), which ``repro verify`` and
every command that reads a bundle read in place (:mod:`repro.verify._packed`).

Packing is a function of the bundle's bytes: the files in sorted order, each as verify read it,
with fixed times (1980-01-01, the earliest a zip can hold), modes (0644) and owners, so packing
one bundle twice gives the same bytes (a zip's, with the same zlib: its members are deflated).
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from repro._files import write_atomically
from repro._layout import is_packed, unsafe_path
from repro.errors import BadInput, NotVerified

if TYPE_CHECKING:
    from repro.verify._core import VerifiedBundle

__all__ = ["PACKED_SUFFIXES", "pack"]

#: The kinds of packed bundle, by the suffix of the file's name.
PACKED_SUFFIXES = (".zip", ".tar")

#: 1980-01-01 00:00:00 UTC: a zip's earliest time, given every member of a packed bundle.
_EPOCH = (1980, 1, 1, 0, 0, 0)
_EPOCH_SECONDS = 315_532_800

#: rw-r--r--, a regular file's mode in a packed bundle.
_MODE = 0o644


def _top(root: Path) -> str:
    """The top-level directory's name: the bundle directory's own name, which must be a safe
    single component."""
    name = root.resolve().name
    if not name or "/" in name or unsafe_path(name) is not None:
        raise BadInput(f"{root}: its name {name!r} cannot name a packed bundle's directory")
    return name


def _zip(out: IO[bytes], top: str, files: Iterator[tuple[str, int, Iterator[bytes]]]) -> None:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, _, blocks in files:
            info = zipfile.ZipInfo(f"{top}/{name}", _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so that the mode below is read as one
            info.external_attr = (0o100000 | _MODE) << 16
            with archive.open(info, "w") as member:
                for block in blocks:
                    member.write(block)


class _Blocks(io.RawIOBase):
    """A file's blocks as the file object tarfile copies a member's data from."""

    def __init__(self, blocks: Iterator[bytes]) -> None:
        self.blocks = blocks
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self.pending:
            block = next(self.blocks, None)
            if block is None:
                return 0
            self.pending = block
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


def _tar(out: IO[bytes], top: str, files: Iterator[tuple[str, int, Iterator[bytes]]]) -> None:
    with tarfile.open(fileobj=out, mode="w:", format=tarfile.PAX_FORMAT) as archive:
        for name, size, blocks in files:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = size, _EPOCH_SECONDS, _MODE
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BufferedReader(_Blocks(blocks)))
            # Read to their end: the blocks say there whether the file is still what verify
            # read (a change raises NotVerified).
            for _ in blocks:
                pass


def pack(root: Path, out: Path, open_verified: Callable[[Path], VerifiedBundle]) -> Path:
    """Verify the bundle directory ``root`` (with ``open_verified``,
    :func:`repro.verify.open_verified`, which the caller passes: verify is above the bundle
    layer, and reads this package) and write it to ``out`` (a new ``.zip`` or ``.tar``
    file, written under a temporary name and then linked into place, so that an ``out`` that
    exists is never replaced), each file as verify read it; return ``out``. Raises
    :class:`BadInput` for another suffix, an ``out`` that exists or cannot be written, a root
    that is not a bundle directory or does not verify (naming how many findings)."""
    if out.suffix not in PACKED_SUFFIXES:
        raise BadInput(f"{out}: a packed bundle's name ends in {' or '.join(PACKED_SUFFIXES)}")
    if os.path.lexists(out):
        raise BadInput(f"{out} already exists: repro never replaces a file")
    if is_packed(root):
        raise BadInput(f"{root} is packed already: pack a bundle directory")
    try:
        bundle = open_verified(root)
    except NotVerified as exc:
        raise BadInput(
            f"{root} does not verify ({len(exc.findings)} finding(s)): only a bundle that "
            f"verifies is packed; see repro verify {root}"
        ) from None
    top = _top(root)
    files = ((name, bundle.size(name), bundle.blocks(name)) for name in bundle.names())
    try:
        # Mode 0644 as the umask narrows it (a file to share, as the user's others are).
        with write_atomically(out, mode=_MODE, exact_mode=False, place=os.link) as fh:
            (_zip if out.suffix == ".zip" else _tar)(fh, top, files)
    except NotVerified as exc:
        raise BadInput(
            f"{root} changed while it was packed ({len(exc.findings)} finding(s)); nothing written"
        ) from None
    except OSError as exc:
        raise BadInput(f"{out}: cannot write ({exc.strerror or type(exc).__name__})") from None
    return out
