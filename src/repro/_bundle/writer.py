"""The bundle on disk: its layout, atomic writes into a fresh root, and BagIt tag files."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from repro._disclosure import FileHits, Scanner, scan_hits
from repro._files import write_atomically
from repro._json.serde import to_bytes
from repro._layout import BAG_INFO, BAGIT, BAGIT_TXT, MANIFEST, MANIFEST_LINE, TAGMANIFEST
from repro.errors import BadInput

__all__ = [
    "BAGIT_TXT",
    "MANIFEST_LINE",
    "BundleWriter",
    "bag_info",
    "create_root",
    "manifest_text",
]


def create_root(out: Path) -> None:
    """Create the fresh output root with mode 0700; refuse any existing path, and a root whose
    parent directory does not exist: only the root itself is created, so that a mistyped path
    creates no tree of directories."""
    if os.path.lexists(out):
        raise BadInput(
            f"output root {out} already exists: repro never resumes, appends or overwrites"
        )
    parent = out.parent
    if not parent.is_dir():
        what = "is not a directory" if os.path.lexists(parent) else "does not exist"
        raise BadInput(
            f"cannot create output root {out}: its parent {parent} {what}; repro creates the "
            f"root alone, never the directories above it (create {parent} first)"
        )
    try:
        os.mkdir(out, 0o700)
    except OSError as exc:
        raise BadInput(f"cannot create output root {out} ({exc.strerror})") from None
    os.chmod(out, 0o700)  # the umask may have narrowed it further; make it exactly 0700


def manifest_text(digests: Mapping[str, str]) -> bytes:
    """A BagIt manifest: one ``<sha256>  <path>`` line per file, sorted by path."""
    return "".join(f"{digests[name]}  {name}\n" for name in sorted(digests)).encode()


def bag_info(octets: int, count: int, fields: Mapping[str, str]) -> bytes:
    """bag-info.txt with the Payload-Oxum of the payload and the given fields."""
    lines = [f"{k}: {v}" for k, v in fields.items()] + [f"Payload-Oxum: {octets}.{count}"]
    return ("\n".join(lines) + "\n").encode()


#: The modes of a bundle's files and directories, set whatever the umask: the root is 0700,
#: and what is inside it is its owner's alone too, until the owner chooses to share it.
_FILE_MODE = 0o600
_DIR_MODE = 0o700
#: Bytes of lines gathered before the disclosure scanner is fed them.
_SCAN_BLOCK = 1 << 16


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Let an I/O error that names no file name ``path``, so the user learns which file of the
    bundle could not be written."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        raise


class BundleWriter:
    """Writes files under a fresh root, each to a temporary name and then renamed, and keeps
    their digests for the manifest, which :meth:`finish` writes last.

    Threads may write different files at once (each partition's runs file is written by the
    thread that runs it): the digests, sizes and disclosure hits are recorded under a lock, and
    nothing that depends on the order of writes is kept (the manifest is sorted by path)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._payload: dict[str, str] = {}
        self._octets = 0
        #: Disclosure hits in every file written so far, found as its bytes were written.
        self.disclosures: list[FileHits] = []
        self._bagit_sha256: str | None = None

    def _target(self, name: str) -> Path:
        path = self.root / name
        if not path.parent.is_dir():
            # One level at a time, each made private to its owner (as the root is) whatever
            # the umask, before the next is made inside it.
            for parent in reversed(path.relative_to(self.root).parents[:-1]):
                directory = self.root / parent
                with contextlib.suppress(FileExistsError):
                    os.mkdir(directory, _DIR_MODE)
                    os.chmod(directory, _DIR_MODE)
        return path

    def begin(self) -> None:
        """Write the BagIt declaration, bagit.txt, first: the mark of a root a study began in,
        which tells an unfinished study (it has bagit.txt and no tag manifest) from a directory
        that is no bundle at all (neither)."""
        self._bagit_sha256 = self.write(BAGIT, BAGIT_TXT)

    def commit(self, tmp: Path, path: Path) -> None:
        """Put a file written in full under its temporary name into place: one rename, so a
        reader sees the whole file or none (tests count and stop studies here)."""
        os.replace(tmp, path)

    def _create(self, path: Path) -> contextlib.AbstractContextManager[BinaryIO]:
        """A new file at ``path``'s temporary name with mode :data:`_FILE_MODE` whatever the
        umask, open for writing bytes, put in place by :meth:`commit` once the block ends; left
        under its temporary name if the block fails, the mark of an unfinished file that verify
        names."""
        return write_atomically(path, mode=_FILE_MODE, place=self.commit, keep_partial=True)

    def write(self, name: str, data: bytes) -> str:
        """Write ``data`` as ``name`` (a path inside the root, ``/``-separated); return its
        sha256."""
        path = self._target(name)
        with _naming(path), self._create(path) as fh:
            fh.write(data)
        digest = hashlib.sha256(data).hexdigest()
        self._record(
            name, digest, len(data), scan_hits(name, data), payload=name.startswith("data/")
        )
        return digest

    def _record(self, name: str, digest: str, size: int, hits: FileHits, *, payload: bool) -> None:
        with self._lock:
            self.disclosures.append(hits)
            if payload:
                self._payload[name] = digest
                self._octets += size

    def aside(self, name: str, data: bytes) -> None:
        """Write ``name`` whole or not at all, outside the payload and the tag files: what an
        unfinished root keeps for a study that continues it (``continue/``, which the study
        removes before it finishes). No file of the bundle: not put in place by :meth:`commit`,
        and left under no temporary name if the write fails."""
        path = self._target(name)
        with _naming(path), write_atomically(path, mode=_FILE_MODE) as fh:
            fh.write(data)

    def model(self, name: str, value: Any) -> None:
        """Write a model as canonical JSON."""
        self.write(name, to_bytes(value))

    @contextmanager
    def lines(self, name: str) -> Iterator[Callable[[Any], None]]:
        """Stream canonical JSON Lines into ``name``; the file appears only when complete."""
        with self._streaming(name) as put:
            yield lambda value: put(to_bytes(value))

    def stream(self, name: str, chunks: Iterable[bytes]) -> None:
        """Write ``chunks``, joined, as ``name``, one chunk at a time (a file too big to hold,
        such as the crate of a large plan); the file appears only when complete."""
        with self._streaming(name) as put:
            for chunk in chunks:
                put(chunk)

    @contextmanager
    def _streaming(self, name: str) -> Iterator[Callable[[bytes], None]]:
        """Append bytes to ``name`` under its temporary name, digesting and scanning them as
        they come; put it in place once the block ends."""
        path = self._target(name)
        digest = hashlib.sha256()
        size = 0
        scanner = Scanner(name)
        # The scanner is fed blocks of lines: it scans a block faster than the lines one by one.
        pending: list[bytes] = []
        held = 0
        with _naming(path), self._create(path) as fh:

            def put(data: bytes) -> None:
                nonlocal size, held
                pending.append(data)
                held += len(data)
                if held >= _SCAN_BLOCK:
                    scanner.feed(b"".join(pending))
                    pending.clear()
                    held = 0
                fh.write(data)
                digest.update(data)
                size += len(data)

            yield put
        scanner.feed(b"".join(pending))
        self._record(
            name, digest.hexdigest(), size, scanner.finish(), payload=name.startswith("data/")
        )

    def finish(self, fields: Mapping[str, str]) -> None:
        """Write the BagIt tag files; the tag manifest goes last, so a crashed study is visibly
        incomplete."""
        tags = {
            BAGIT: self._bagit_sha256 or self.write(BAGIT, BAGIT_TXT),
            BAG_INFO: self.write(BAG_INFO, bag_info(self._octets, len(self._payload), fields)),
            MANIFEST: self.write(MANIFEST, manifest_text(self._payload)),
        }
        self.write(TAGMANIFEST, manifest_text(tags))
