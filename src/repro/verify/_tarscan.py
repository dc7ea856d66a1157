"""A tar archive's members read from its raw headers, as GNU tar extracts them, and refused
(:func:`~repro.verify._archive.ambiguous`) wherever another reader (Python's tarfile, ``tar
--ignore-zeros``) would read other members, names or bytes.

Read strictly: every header's checksum matches (GNU tar skips a bad header and reads on, tarfile
stops there); its magic is POSIX ustar, GNU or v7, and only a POSIX header's prefix field is
part of its name (tarfile prepends any prefix, GNU tar only a POSIX one's); every numeric field
is octal digits between spaces and NULs, or base-256, which both read alike; a member's name
comes from one of a pax ``path`` record, a GNU long name or the header (never two that differ,
nor a NUL inside); a pax header's records tile it exactly, none repeated, its ``size`` the
header's own; a global pax header changes no name or size; only members whose data both skip
alike have a size; after the end-of-archive block there are only zeros (a reader that goes on
past it would find no member).
"""

from __future__ import annotations

import contextlib
import re

from repro.verify._archive import (
    BLOCK,
    ArchiveFile,
    Member,
    Refusal,
    ambiguous,
    shown,
    unreadable,
)

__all__ = ["looks_like_header", "read_tar"]

#: A tar block: every header, and the unit member data is padded to.
RECORD = 512
_ZEROS = bytes(RECORD)

_POSIX_MAGIC = b"ustar\x0000"
_GNU_MAGIC = b"ustar  \x00"
_V7_MAGIC = bytes(8)

#: The header types that carry data of their own rather than a member: a pax header, a global
#: pax header, a GNU long name and a GNU long link name.
_PAX, _GLOBAL, _LONG_NAME, _LONG_LINK = b"x", b"g", b"L", b"K"
_EXTENSIONS = (_PAX, _GLOBAL, _LONG_NAME, _LONG_LINK)
_CONTIGUOUS = b"7"

#: Each member type both readers know, by what verify calls it. A regular file ("0", or NUL as
#: old archives write it) has data; every other kind must declare none, since the readers do
#: not agree whether to skip data after it, but a contiguous file ("7"), which both read as a
#: regular file with its data, and no bundle holds.
_KINDS = {
    b"0": "file",
    b"\x00": "file",
    b"1": "hard-link",
    b"2": "symlink",
    b"3": "special",
    b"4": "special",
    b"5": "directory",
    b"6": "special",
    b"7": "special",
}

#: Octal digits between spaces and NULs: how GNU tar and tarfile both read a number (tarfile
#: also takes signs and underscores; GNU tar stops at any byte after a space).
_OCTAL = re.compile(rb" *[0-7]+[ \x00]*")
#: How GNU tar reads a checksum field; and a pax record's length.
_GNU_OCTAL = re.compile(rb" *([0-7]+)(?:[ \x00]|$)")
_LENGTH = re.compile(rb"[1-9][0-9]{0,18} ")
_DECIMAL = re.compile(rb"0|[1-9][0-9]{0,18}")

#: Header fields: (start, end) of the numeric ones, by name.
_NUMBERS = {"mode": (100, 108), "uid": (108, 116), "gid": (116, 124), "mtime": (136, 148)}
_SIZE = (124, 136)
_DEVICES = ((329, 337), (337, 345))

#: pax keywords that change which member a header names or which bytes it holds; what the
#: readers do with ``hdrcharset`` (how a name's bytes are decoded) and with GNU's own keywords
#: (sparse maps, volumes) differs.
_NAMING_KEYS = (b"path", b"linkpath", b"size")
_DIFFERING_KEYS = (b"hdrcharset",)
_DIFFERING_PREFIXES = (b"GNU.",)


def _text(field: bytes) -> bytes:
    """A text field up to its first NUL, as every reader cuts it."""
    return field.split(b"\x00", 1)[0]


def _sums(block: bytes) -> set[int]:
    """The block's checksums, its checksum field read as spaces: as unsigned bytes, and as
    signed ones (which old writers summed; both readers accept either)."""
    rest = block[:148] + b" " * 8 + block[156:]
    unsigned = sum(rest)
    return {unsigned, unsigned - 256 * sum(1 for b in rest if b > 127)}


def _number(field: bytes) -> int | None:
    """A numeric field as GNU tar and tarfile both read it (octal, or base-256 led by 0x80 for a
    positive number, 0xFF for a negative one), or None where they may differ."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return value if field[0] == 0x80 else value - (1 << (8 * (len(field) - 1)))
    if _OCTAL.fullmatch(field):
        return int(field.strip(b" \x00"), 8)
    return None


def looks_like_header(block: bytes) -> bool:
    """Whether GNU tar or tarfile would take ``block`` (a file's first 512 bytes) for a tar
    header: whether its checksum field, as either reads it, is one of its sums."""
    if len(block) != RECORD or block == _ZEROS:
        return False
    field = block[148:156]
    readings = {_number(field)}
    gnu = _GNU_OCTAL.match(field)
    if gnu:
        readings.add(int(gnu.group(1), 8))
    with contextlib.suppress(ValueError):  # tarfile's reading: int() with base 8
        readings.add(int(_text(field).strip() or b"0", 8))
    return bool(readings & _sums(block))


def _field_problem(shape: str, at: int, what: str, expected: str, found: bytes) -> Refusal:
    return ambiguous(shape, ".", f"tar header at byte {at}: {what}", expected, repr(found[:80]))


def _header(block: bytes, at: int) -> tuple[bytes, bytes, int]:
    """The type, name and size of the header ``block`` at byte ``at``, read strictly."""
    checksum = block[148:156]
    if _number(checksum) not in _sums(block):
        raise _field_problem(
            "checksum",
            at,
            "checksum does not match (GNU tar skips the header and reads on, tarfile stops)",
            "the header's sum",
            checksum,
        )
    magic = block[257:265]
    if magic not in (_POSIX_MAGIC, _GNU_MAGIC, _V7_MAGIC):
        raise _field_problem("header", at, "magic of no known format", "ustar, GNU or v7", magic)
    for what, (start, end) in (*_NUMBERS.items(), ("size", _SIZE)):
        if _number(block[start:end]) is None:
            raise _field_problem(
                "header",
                at,
                f"{what} that readers read differently",
                "octal digits",
                block[start:end],
            )
    for start, end in _DEVICES:
        if block[start:end].strip(b"\x00") and _number(block[start:end]) is None:
            raise _field_problem(
                "header",
                at,
                "device number that readers read differently",
                "octal digits",
                block[start:end],
            )
    name = _text(block[:100])
    prefix = _text(block[345:500])
    if magic == _POSIX_MAGIC:
        name = prefix + b"/" + name if prefix else name
    elif prefix:
        raise _field_problem(
            "header",
            at,
            "GNU or v7 header with bytes in the POSIX prefix field (GNU tar ignores them, "
            "tarfile puts them before the name)",
            "an empty prefix field",
            prefix,
        )
    size = _number(block[124:136])
    assert size is not None, "checked above"
    if size < 0:
        raise _field_problem("header", at, "negative size", "a size", block[124:136])
    return block[156:157], name, size


def _pax_records(data: bytes, at: int) -> dict[bytes, bytes]:
    """The records of the pax header at byte ``at``: ``LENGTH KEY=VALUE\\n``, tiling its data
    exactly, no key given twice."""
    records: dict[bytes, bytes] = {}
    pos = 0
    while pos < len(data):
        length = _LENGTH.match(data, pos)
        end = pos + int(length.group()[:-1]) if length else 0
        if length is None or end > len(data) or data[end - 1 : end] != b"\n":
            raise _field_problem(
                "header",
                at,
                "pax record that readers cut differently",
                "LENGTH KEY=VALUE",
                data[pos:],
            )
        key, equals, value = data[length.end() : end - 1].partition(b"=")
        if not equals or not key or key in records:
            raise _field_problem(
                "header",
                at,
                "pax record without a key, or a key given twice",
                "one record a key",
                data[pos:end],
            )
        records[key] = value
        pos = end
    return records


class _Pending:
    """The extension headers read for the next member: pax records, a GNU long name, a GNU long
    link name (each at most once)."""

    def __init__(self) -> None:
        self.headers: dict[bytes, bytes] = {}
        self.pax: dict[bytes, bytes] = {}

    def add(self, kind: bytes, data: bytes, at: int) -> None:
        if kind in self.headers or (kind == _GLOBAL and self.headers):
            raise _field_problem(
                "header",
                at,
                "extension header repeated, or global one inside a member's",
                "one of each kind before a member",
                kind,
            )
        if kind in (_LONG_NAME, _LONG_LINK):
            self.headers[kind] = _text(data)
            return
        records = _pax_records(data, at)
        differing = [
            key
            for key in records
            if key in _DIFFERING_KEYS
            or key.startswith(_DIFFERING_PREFIXES)
            or (kind == _GLOBAL and key in _NAMING_KEYS)
        ]
        if differing:
            raise _field_problem(
                "header",
                at,
                "pax keyword the readers apply differently",
                "path, size and metadata in a member's pax header",
                differing[0],
            )
        if kind == _PAX:
            self.headers[kind] = data
            self.pax = records

    def name(self, header_name: bytes, at: int) -> bytes:
        """The member's name: its pax path, its GNU long name or its header's name."""
        return self._one(b"path", _LONG_NAME, header_name, at)

    def check_link(self, at: int) -> None:
        """A link name given by a pax record and a GNU long link name both is ambiguous."""
        self._one(b"linkpath", _LONG_LINK, b"", at)

    def _one(self, key: bytes, long: bytes, header: bytes, at: int) -> bytes:
        given = [v for v in (self.pax.get(key), self.headers.get(long)) if v is not None]
        if len(given) > 1 and given[0] != given[1]:
            raise ambiguous(
                "name",
                shown(given[0]),
                f"tar member at byte {at} named by both a pax {key.decode()} record and a GNU "
                "long name (tarfile and GNU tar take different ones)",
                "one name",
                repr(given[1][:80]),
            )
        if given and (b"\x00" in given[0] or not given[0]):
            raise ambiguous(
                "name",
                shown(given[0]),
                f"tar member at byte {at} with an empty name, or a NUL inside it (GNU tar cuts "
                "the name there, tarfile does not)",
                "a name",
                repr(given[0][:80]),
            )
        return given[0] if given else header

    def size(self, size: int, at: int) -> int:
        """The member's size: its header's, which a pax ``size`` record must repeat."""
        value = self.pax.get(b"size")
        if value is not None and (not _DECIMAL.fullmatch(value) or int(value) != size):
            raise _field_problem("header", at, "pax size other than the header's", f"{size}", value)
        return size


def _padded(size: int) -> int:
    return -(-size // RECORD) * RECORD


def _after_end(archive: ArchiveFile, at: int) -> None:
    """Only zeros after the end-of-archive block at ``at``: a reader that reads on past it
    (``tar --ignore-zeros``) must find no member there."""
    while at < archive.size:
        chunk = archive.read(at, min(BLOCK, archive.size - at))
        rest = chunk.lstrip(b"\x00")
        if rest:
            found = at + len(chunk) - len(rest)
            raise ambiguous(
                "after-end",
                ".",
                "bytes after the tar's end-of-archive block (tar --ignore-zeros reads on, "
                "tarfile and tar stop)",
                "zeros only",
                f"a byte other than zero at byte {found}",
            )
        at += len(chunk)


def read_tar(archive: ArchiveFile, max_members: int, header_bytes: int) -> list[Member]:
    """The members of the tar ``archive`` in order, at most ``max_members`` + 1 (the listing
    stops past its limit), each with the name and kind GNU tar gives it. Raises
    :class:`~repro.verify._archive.Refusal` for an archive another reader would read otherwise,
    or whose headers cannot be read (an extension header past ``header_bytes``, data past the
    file's end)."""
    members: list[Member] = []
    pending = _Pending()
    at = 0
    while at < archive.size and len(members) <= max_members:
        block = archive.read(at, RECORD)
        if block == _ZEROS:
            if pending.headers:
                raise _field_problem(
                    "header",
                    at,
                    "extension header with no member after it",
                    "a member",
                    b"end of archive",
                )
            _after_end(archive, at + RECORD)
            break
        kind, name, size = _header(block, at)
        end = at + RECORD + _padded(size)
        if end > archive.size:
            raise unreadable(
                "tar member's data runs past the archive's end: listing stopped",
                f"{size} bytes",
                f"{archive.size - at - RECORD} bytes left",
                shown(name),
            )
        if kind in _EXTENSIONS:
            if size > header_bytes:
                raise unreadable(
                    f"tar extension header past {header_bytes} bytes: listing stopped",
                    f"<= {header_bytes} bytes",
                    f"{size} bytes",
                )
            pending.add(kind, archive.read(at + RECORD, size), at)
        else:
            members.append(_member(kind, name, size, at, pending))
            pending = _Pending()
        at = end
    return members


def _member(kind: bytes, header_name: bytes, size: int, at: int, pending: _Pending) -> Member:
    """The member whose header is at byte ``at``, with the extension headers before it."""
    what = _KINDS.get(kind)
    if what is None:
        raise _field_problem(
            "header",
            at,
            "member type the readers treat differently",
            "0, 1, 2, 3, 4, 5, 6 or 7",
            kind,
        )
    name = pending.name(header_name, at)
    pending.check_link(at)
    size = pending.size(size, at)
    if name.endswith(b"/") and what == "file":
        if kind != b"\x00":
            raise ambiguous(
                "header",
                shown(name),
                f"tar member at byte {at}: a regular file named as a directory (GNU tar makes a "
                "directory, tarfile a file)",
                "no trailing slash",
                repr(name[:80]),
            )
        what = "directory"  # an old archive's directory, as both readers take it
    if what != "file" and size and kind != _CONTIGUOUS:
        raise ambiguous(
            "header",
            shown(name),
            f"tar member at byte {at}: a {what} with data (the readers differ on skipping it)",
            "size 0",
            f"{size} bytes",
        )
    decoded = name.decode("utf-8", "surrogateescape")
    return Member(decoded, what, size, offset=at + RECORD, stored=size)
