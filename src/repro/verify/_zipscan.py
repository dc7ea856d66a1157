"""A zip archive's members read from its raw records, as Info-ZIP unzip extracts them, and refused
(:func:`~repro.verify._archive.ambiguous`) wherever another reader (Python's zipfile, a reader
that walks the local headers from the start) would read other members, names or bytes.

Read strictly: the end record (the last one, as every reader finds it) ends the file with its
comment; a zip64 end record lies just before its locator and agrees with the 32-bit one; the
central directory lies where the end record says and holds as many entries as it says, each on
disk 0; the members' local headers and bytes tile what lies before it, from byte 0, with no byte
between them (where a reader that walks the local headers would find a member the index does not
list); each local header agrees with its index entry (name, flags, method, CRC-32 and sizes, or,
with a data descriptor, the descriptor does); a name is ASCII or flagged UTF-8, holds no NUL,
and no Info-ZIP Unicode Path field names another; a zip64 extra field holds exactly the values
its entry defers to it; a member is a directory by its name and its mode alike, and its mode
bits say what it is whatever system made it (unzip takes a Unix mode from several); it needs no
later zip version than 4.5, zip64's (unzip skips one that does). A member's bytes are checked
when read (:class:`~repro.verify._archive.MemberReader`).

Members whose bytes overlap another's or the index, compressed other than by deflate, encrypted,
or declaring more than the ratio limit are not read (the member's ``problem``).
"""

from __future__ import annotations

import stat
import struct
import zlib
from collections import defaultdict

from attrs import frozen

from repro.verify._archive import ArchiveFile, Member, NotArchive, Refusal, ambiguous, shown
from repro.verify._limits import Limits

__all__ = ["has_end_record", "read_zip"]

_END = struct.Struct("<4s4H2LH")
_END_SIGNATURE = b"PK\x05\x06"
_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_LOCAL = struct.Struct("<4s5H3L2H")
_DESCRIPTOR = struct.Struct("<4s3L")
_DESCRIPTOR64 = struct.Struct("<4sL2Q")

#: Where every end record lies: in the last bytes of the file, a comment's length from its end.
_TAIL = _END.size + 0xFFFF

_MAX16, _MAX32 = 0xFFFF, 0xFFFFFFFF

#: Flag bits verify reads: deflate's options (1, 2), a data descriptor (3), UTF-8 names (11).
#: Every other (encryption among them) makes a member verify does not read.
_READ_FLAGS = 0x0002 | 0x0004 | 0x0008 | 0x0800
_DESCRIBED, _UTF8 = 0x0008, 0x0800
_ZIP64, _UNICODE_PATH = 0x0001, 0x7075
_STORED, _DEFLATED = 0, 8
#: The latest zip version a member may need: 4.5, zip64's (deflate needs 2.0).
_NEEDS = 45


def has_end_record(archive: ArchiveFile) -> bool:
    """Whether a zip reader, looking where an end record can be, finds one in the file."""
    start = max(0, archive.size - _TAIL)
    return _END_SIGNATURE in archive.read(start, archive.size - start)


@frozen
class _Entry:
    """One entry of the central directory, its zip64 values applied."""

    name: bytes
    flags: int
    method: int
    crc: int
    stored: int
    size: int
    offset: int
    kind: str


def _layout(what: str, expected: str, found: str) -> Refusal:
    return ambiguous("layout", ".", what, expected, found)


def _end_record(archive: ArchiveFile, limits: Limits) -> tuple[int, int, int]:
    """The central directory's offset and size, and its entry count, from the end records."""
    start = max(0, archive.size - _TAIL)
    tail = archive.read(start, archive.size - start)
    at = tail.rfind(_END_SIGNATURE)
    if at < 0 or at + _END.size > len(tail):
        raise NotArchive("no end of central directory record")
    _, disk, cd_disk, on_disk, count, cd_size, cd_offset, comment = _END.unpack_from(tail, at)
    end_at = start + at
    if end_at + _END.size + comment != archive.size:
        raise ambiguous(
            "after-end",
            ".",
            "bytes after the zip's end record and its comment, or a comment past the file's "
            "end (readers that look elsewhere for the end record find another)",
            f"the file's end at byte {end_at + _END.size + comment}",
            f"{archive.size} bytes",
        )
    fields = (disk, cd_disk, on_disk, count, cd_size, cd_offset)
    markers = (_MAX16, _MAX16, _MAX16, _MAX16, _MAX32, _MAX32)
    cd_end = end_at
    locator_at = end_at - _LOCATOR.size
    if locator_at >= 0 and archive.read(locator_at, 4) == b"PK\x06\x07":
        cd_end, zip64 = _end_record64(archive, locator_at)
        if any(v != m and v != v64 for v, v64, m in zip(fields, zip64, markers, strict=True)):
            raise _layout(
                "zip64 end record disagreeing with the 32-bit one",
                "equal fields, or the 32-bit one at its marker",
                f"{fields} against {zip64}",
            )
        fields = zip64
    elif any(v == m for v, m in zip(fields, markers, strict=True)):
        raise _layout(
            "end record field at its zip64 marker without a zip64 end record",
            "no marker",
            f"{fields}",
        )
    disk, cd_disk, on_disk, count, cd_size, cd_offset = fields
    if cd_size > limits.max_archive_index_bytes:
        raise Refusal(
            "archive-index-limit",
            ".",
            "zip index larger than the limit max_archive_index_bytes: not read",
            f"<= {limits.max_archive_index_bytes} bytes",
            f"{cd_size} bytes",
        )
    if disk or cd_disk or on_disk != count:
        raise _layout("zip on more than one disk", "disk 0 only", f"disks {disk}, {cd_disk}")
    if cd_offset + cd_size != cd_end:
        raise _layout(
            "central directory not where the end record puts it (zipfile reads it back from "
            "the end record, unzip where it says)",
            f"ending at byte {cd_end}",
            f"bytes {cd_offset} to {cd_offset + cd_size}",
        )
    return cd_offset, cd_size, count


def _end_record64(
    archive: ArchiveFile, locator_at: int
) -> tuple[int, tuple[int, int, int, int, int, int]]:
    """Where the zip64 end record begins, and its fields as the 32-bit end record orders them."""
    _, disk, record_at, disks = _LOCATOR.unpack(archive.read(locator_at, _LOCATOR.size))
    if disk or disks != 1 or record_at + _END64.size != locator_at:
        raise _layout(
            "zip64 locator pointing elsewhere than the record just before it (zipfile reads "
            "the one before it, unzip the one it points to)",
            f"byte {locator_at - _END64.size}",
            f"byte {record_at}",
        )
    record = _END64.unpack(archive.read(record_at, _END64.size))
    signature, size, _, _, disk, cd_disk, on_disk, count, cd_size, cd_offset = record
    if signature != b"PK\x06\x06" or size != _END64.size - 12:
        raise _layout("zip64 end record malformed", "a zip64 end record", repr(signature))
    return record_at, (disk, cd_disk, on_disk, count, cd_size, cd_offset)


def _extra_fields(extra: bytes, name: bytes) -> dict[int, bytes]:
    """An extra field's parts by tag, which must tile it exactly, no tag twice."""
    fields: dict[int, bytes] = {}
    pos = 0
    while pos < len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos) if pos + 4 <= len(extra) else (0, 0)
        if pos + 4 > len(extra) or pos + 4 + length > len(extra) or tag in fields:
            raise ambiguous(
                "header",
                shown(name),
                "zip extra field cut otherwise than into whole parts, or a part given twice",
                "whole parts, one of each kind",
                repr(extra[pos : pos + 16]),
            )
        fields[tag] = extra[pos + 4 : pos + 4 + length]
        pos += 4 + length
    return fields


def _zip64(fields: dict[int, bytes], values: list[int], markers: list[int], name: bytes) -> None:
    """Replace each of ``values`` at its marker by the zip64 extra field's, in order; the field
    must hold exactly those (8 bytes each, 4 for a disk number)."""
    deferred = [i for i, (v, m) in enumerate(zip(values, markers, strict=True)) if v == m]
    widths = [8 if markers[i] == _MAX32 else 4 for i in deferred]
    data = fields.get(_ZIP64)
    if (data is None and deferred) or (data is not None and len(data) != sum(widths)):
        raise ambiguous(
            "header",
            shown(name),
            "zip64 extra field that does not hold exactly the values its entry defers to it",
            f"{sum(widths)} bytes",
            "none" if data is None else f"{len(data)} bytes",
        )
    pos = 0
    for i, width in zip(deferred, widths, strict=True):
        values[i] = int.from_bytes(data[pos : pos + width], "little") if data else 0
        pos += width


def _name(name: bytes, flags: int, fields: dict[int, bytes]) -> None:
    """A name every reader decodes alike: no NUL, ASCII unless flagged UTF-8 (zipfile reads
    other bytes as cp437, unzip as the system's charset), and no Unicode Path field naming
    another file (unzip takes its name)."""
    problem = None
    if b"\x00" in name:
        problem = "name with a NUL inside (zipfile cuts it there)"
    elif flags & _UTF8:
        try:
            name.decode("utf-8")
        except UnicodeDecodeError:
            problem = "name flagged UTF-8 that is not"
    elif not name.isascii():
        problem = "name neither ASCII nor flagged UTF-8 (zipfile reads it as cp437, unzip not)"
    unicode_path = fields.get(_UNICODE_PATH)
    if (
        unicode_path is not None
        and unicode_path != b"\x01" + struct.pack("<L", zlib.crc32(name)) + name
    ):
        problem = "Info-ZIP Unicode Path field naming another file (unzip takes its name)"
    if problem:
        raise ambiguous("name", shown(name), problem, "one name every reader reads", repr(name))


def _version(needs: int, method: int, name: bytes) -> None:
    """A member stored or deflated needs a version unzip extracts (it skips a member needing a
    later one, which zipfile reads): zip64's 4.5 at most, and no system named. (A member
    compressed otherwise is not read whatever it needs.)"""
    if needs > _NEEDS and method in (_STORED, _DEFLATED):
        raise ambiguous(
            "header",
            shown(name),
            "member needing a later zip version than unzip extracts (unzip skips it, zipfile "
            "reads it)",
            f"<= {_NEEDS // 10}.{_NEEDS % 10}",
            f"{needs & 0xFF} for system {needs >> 8}",
        )


def _kind(name: bytes, external: int, size: int) -> str:
    """What the member is, by its mode bits (for whatever system made it: unzip reads a Unix
    mode from several) and its name."""
    mode = stat.S_IFMT(external >> 16)
    named_directory = name.endswith(b"/")
    if mode == stat.S_IFLNK:
        return "symlink"
    if mode not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "special"
    if not named_directory and mode != stat.S_IFDIR:
        return "file"
    if not named_directory or mode == stat.S_IFREG or size:
        raise ambiguous(
            "header",
            shown(name),
            "a directory by its name or its mode but not both, or holding data (readers "
            "tell directories by one or the other)",
            "a name ending in / and a directory's mode, or neither",
            f"mode {external >> 16:o}, {size} bytes",
        )
    return "directory"


def _central(cd: bytes, cd_offset: int, count: int, max_members: int) -> list[_Entry]:
    """The entries of the central directory ``cd``, at most ``max_members`` + 1."""
    entries: list[_Entry] = []
    pos = 0
    while pos < len(cd) and len(entries) <= max_members:
        if pos + _CENTRAL.size > len(cd) or cd[pos : pos + 4] != b"PK\x01\x02":
            raise _layout("zip index entry that is none", "an entry", f"byte {cd_offset + pos}")
        (
            _,
            _,
            needs,
            flags,
            method,
            _,
            _,
            crc,
            stored,
            size,
            n,
            m,
            k,
            disk,
            _,
            external,
            offset,
        ) = _CENTRAL.unpack_from(cd, pos)
        name = cd[pos + 46 : pos + 46 + n]
        _version(needs, method, name)
        extra = cd[pos + 46 + n : pos + 46 + n + m]
        pos += _CENTRAL.size + n + m + k
        if pos > len(cd):
            raise _layout("zip index entry past the index's end", "an entry", shown(name))
        fields = _extra_fields(extra, name)
        _name(name, flags, fields)
        values = [size, stored, offset, disk]
        _zip64(fields, values, [_MAX32, _MAX32, _MAX32, _MAX16], name)
        size, stored, offset, disk = values
        if disk:
            raise _layout("zip member on another disk", "disk 0", f"disk {disk}")
        kind = _kind(name, external, size)
        if kind == "file" and method == _STORED and stored != size:
            raise ambiguous(
                "stream",
                shown(name),
                "member stored as it is whose stored and declared sizes differ (zipfile reads "
                "the one, unzip the other)",
                f"{size} bytes",
                f"{stored} bytes stored",
            )
        entries.append(_Entry(name, flags, method, crc, stored, size, offset, kind))
    if len(entries) <= max_members and len(entries) != count:
        raise _layout(
            "zip index holding another number of entries than its end record says (zipfile "
            "reads them all, unzip as many as it says)",
            f"{count} entries",
            f"{len(entries)}",
        )
    return entries


@frozen
class _Local:
    """A member's local header: what it declares, its extra field's parts, and where the
    member's stored bytes begin."""

    name: bytes
    flags: int
    method: int
    crc: int
    stored: int
    size: int
    fields: dict[int, bytes]
    data_at: int

    def end(self, stored: int) -> int:
        """Where the member's record ends, ``stored`` bytes and any data descriptor after it."""
        if not self.flags & _DESCRIBED:
            return self.data_at + stored
        described = _DESCRIPTOR64 if _ZIP64 in self.fields else _DESCRIPTOR
        return self.data_at + stored + described.size


def _local_header(archive: ArchiveFile, at: int, limit: int) -> _Local | None:
    """The local header at byte ``at``; None when it runs past ``limit`` (into the next member
    or the index)."""
    if at + _LOCAL.size > limit:
        return None
    signature, needs, flags, method, _, _, crc, stored, size, n, m = _LOCAL.unpack(
        archive.read(at, _LOCAL.size)
    )
    if signature != b"PK\x03\x04":
        raise ambiguous(
            "local-header",
            ".",
            "no local header where the index puts one",
            "a local header",
            f"{signature!r} at byte {at}",
        )
    data_at = at + _LOCAL.size + n + m
    if data_at > limit:
        return None
    name = archive.read(at + _LOCAL.size, n)
    _version(needs, method, name)
    fields = _extra_fields(archive.read(at + _LOCAL.size + n, m), name)
    return _Local(name, flags, method, crc, stored, size, fields, data_at)


def _agree(archive: ArchiveFile, entry: _Entry, local: _Local) -> None:
    """The local header (and data descriptor) declares what the index entry does."""
    name = shown(entry.name)

    def differs(what: str, expected: object, found: object) -> Refusal:
        return ambiguous(
            "local-header",
            name,
            f"local header {what} than its index entry (zipfile reads the index, unzip the "
            "local sizes, a reader walking the local headers all of the local one)",
            str(expected),
            str(found),
        )

    if local.name != entry.name:
        raise differs("naming another file", repr(entry.name), repr(local.name))
    if (local.flags, local.method) != (entry.flags, entry.method):
        raise differs(
            "with other flags or method",
            (entry.flags, entry.method),
            (local.flags, local.method),
        )
    _name(local.name, local.flags, local.fields)
    sizes = [local.size, local.stored]
    _zip64(local.fields, sizes, [_MAX32, _MAX32], entry.name)
    declared = (local.crc, sizes[1], sizes[0])
    indexed = (entry.crc, entry.stored, entry.size)
    if not entry.flags & _DESCRIBED:
        if declared != indexed:
            raise differs("with another CRC-32 or other sizes", indexed, declared)
        return
    # With a data descriptor, the local header may leave its CRC-32 and sizes 0.
    if any(d not in (0, i) for d, i in zip(declared, indexed, strict=True)):
        raise differs("with another CRC-32 or other sizes", indexed, declared)
    at = local.data_at + entry.stored
    described = _DESCRIPTOR64 if _ZIP64 in local.fields else _DESCRIPTOR
    signature, *values = described.unpack(archive.read(at, described.size))
    if signature != b"PK\x07\x08" or tuple(values) != indexed:
        raise differs("'s data descriptor with another CRC-32 or other sizes", indexed, values)


def _gap(start: int, end: int) -> Refusal:
    return _layout(
        "bytes of the zip no member accounts for (a reader walking the local headers may find "
        "a member there that the index does not list)",
        "members back to back from byte 0 to the index",
        f"bytes {start} to {end}",
    )


def _tile(
    archive: ArchiveFile, entries: list[_Entry], cd_offset: int
) -> tuple[dict[int, int], set[int]]:
    """Where each member's stored bytes begin, by its local header's offset, and the offsets
    whose members overlap another's bytes or the index (whose local headers are not compared:
    they are not read). Raises :class:`Refusal` for bytes no member accounts for, or a local
    header that disagrees with its entry."""
    by_offset: dict[int, list[_Entry]] = defaultdict(list)
    for entry in entries:
        by_offset[entry.offset].append(entry)
    starts = sorted(by_offset)
    data_at: dict[int, int] = {}
    overlapping: set[int] = set()
    covered = 0
    for i, start in enumerate(starts):
        limit = min(starts[i + 1] if i + 1 < len(starts) else cd_offset, cd_offset)
        if start < covered or start >= cd_offset:
            # Inside another member's bytes or the index: what lies there is not read.
            overlapping.add(start)
            continue
        if start > covered:
            raise _gap(covered, start)
        group = by_offset[start]
        local = _local_header(archive, start, limit)
        end = limit if local is None else local.end(max(e.stored for e in group))
        if local is None or end > limit or len(group) > 1:
            overlapping.add(start)
        covered = max(covered, end)
        if local is not None and start not in overlapping:
            _agree(archive, group[0], local)
            data_at[start] = local.data_at
    if covered < cd_offset:
        raise _gap(covered, cd_offset)
    return data_at, overlapping


def _problem(entry: _Entry, overlaps: bool, limits: Limits) -> tuple[str, str, str, str] | None:
    """Why a regular member of a zip is not read (code, what, expected, found), or None."""
    if entry.method not in (_STORED, _DEFLATED):
        return (
            "archive-member-method",
            "member compressed other than by deflate: not inflated",
            "stored or deflated",
            f"compression method {entry.method}",
        )
    if entry.flags & ~_READ_FLAGS:
        return (
            "archive-member-method",
            "member encrypted, or flagged for a feature verify does not read: not read",
            "flag bits 1, 2, 3 and 11 only",
            f"flag bits {entry.flags & ~_READ_FLAGS:#06x}",
        )
    if entry.size > limits.max_compression_ratio * max(entry.stored, 1):
        return (
            "archive-ratio-limit",
            "member declares more bytes per stored byte than the limit max_compression_ratio: "
            "not inflated",
            f"<= {limits.max_compression_ratio} to 1",
            f"{entry.size} bytes from {entry.stored}",
        )
    if overlaps:
        return (
            "archive-overlap",
            "member's bytes overlap another member's or the index: not read",
            "members apart",
            f"stored at byte {entry.offset}",
        )
    return None


def _member(entry: _Entry, data_at: int | None, overlaps: bool, limits: Limits) -> Member:
    name = entry.name.decode("utf-8")  # ASCII, or flagged and checked UTF-8
    problem = _problem(entry, overlaps, limits) if entry.kind == "file" else None
    return Member(
        name,
        entry.kind,
        entry.size,
        offset=data_at or 0,
        stored=entry.stored,
        method=entry.method,
        crc=entry.crc,
        problem=problem,
    )


def read_zip(archive: ArchiveFile, limits: Limits) -> list[Member]:
    """The members of the zip ``archive`` in its index's order, at most ``limits.max_files`` +
    1 (the listing stops past its limit), each as unzip extracts it. Raises
    :class:`~repro.verify._archive.Refusal` for an archive another reader would read otherwise,
    or whose index is past its limit or cannot be read; :class:`NotArchive` without an end
    record."""
    cd_offset, cd_size, count = _end_record(archive, limits)
    entries = _central(archive.read(cd_offset, cd_size), cd_offset, count, limits.max_files)
    if len(entries) > limits.max_files:
        # Past the limit the listing stops and nothing is read: the rest is not worth checking.
        return [Member(e.name.decode("utf-8"), e.kind, e.size) for e in entries]
    data_at, overlapping = _tile(archive, entries, cd_offset)
    return [_member(e, data_at.get(e.offset), e.offset in overlapping, limits) for e in entries]
