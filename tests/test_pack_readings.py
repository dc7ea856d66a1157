"""Packed bundles are read exactly as GNU tar and Info-ZIP unzip extract them, or refused as
ambiguous: for each shape of archive that Python's tarfile or zipfile reads otherwise than the
stock tools do, the tools are run on it to show that the readings differ (the case is real), and
verify refuses it with one ``archive-ambiguous-*`` finding, reading nothing of it; shapes that the
stock tools read as Python does, but another reader could not, are refused too. Archives that
GNU tar and Info-ZIP zip make of a genuine bundle verify clean.

The stock tools are /usr/bin/tar (GNU), zip and unzip (Info-ZIP): a test skips without them,
and fails without them when CI is set (``.ci/run`` installs them)."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import struct
import subprocess
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from itertools import count
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from repro._cli.app import app
from repro.errors import BadInput
from repro.verify import verify

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "quick-start-bundle"
TOP = "bundle"
AGG = f"{TOP}/data/aggregates.json"
FORGED = b'{"forged": true}\n'
END = bytes(1024)

runner = CliRunner()
_runs = count()


def _genuine() -> dict[str, bytes]:
    """The example bundle's files, by their name in an archive of it."""
    return {
        f"{TOP}/{p.relative_to(EXAMPLE).as_posix()}": p.read_bytes()
        for p in sorted(EXAMPLE.rglob("*"))
        if p.is_file()
    }


GENUINE = _genuine()


# ------------------------------------------------------------------------------- stock tools

#: Each stock tool, the argument that makes it print its version, and what that must say.
_TOOLS = {"tar": ("--version", "GNU tar"), "zip": ("-v", "Info-ZIP"), "unzip": ("-v", "Info-ZIP")}


def _stock(tool: str) -> str:
    """The stock tool's path; the test is skipped without it, and failed without it when CI
    is set."""
    path = Path("/usr/bin") / tool
    flag, brand = _TOOLS[tool]
    if path.is_file() and os.access(path, os.X_OK):
        shown = subprocess.run([str(path), flag], capture_output=True, check=False).stdout
        if brand.encode() in shown:
            return str(path)
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {path} ({brand}) is missing (.ci/run installs it)")
    pytest.skip(f"{path} ({brand}) not installed; CI never skips this")


@pytest.fixture(scope="module")
def gnu_tar() -> str:
    """GNU tar."""
    return _stock("tar")


@pytest.fixture(scope="module")
def unzip() -> str:
    """Info-ZIP unzip."""
    return _stock("unzip")


@pytest.fixture(scope="module")
def info_zip() -> str:
    """Info-ZIP zip."""
    return _stock("zip")


def _tree(root: Path) -> dict[str, bytes | str]:
    """What an extraction left below ``root``: each file's bytes, each symlink's target."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[name] = f"symlink to {os.readlink(path)}"
        elif path.is_file():
            found[name] = path.read_bytes()
    return found


def _extracted(command: list[str], tmp_path: Path) -> dict[str, bytes | str]:
    """What ``command`` extracts into a fresh directory (appended as its last argument)."""
    dest = tmp_path / f"extracted-{next(_runs)}"
    dest.mkdir()
    subprocess.run(
        [*command, str(dest)], capture_output=True, stdin=subprocess.DEVNULL, check=False
    )
    return _tree(dest)


def _gnu_tar_extracts(
    tar: str, archive: Path, tmp_path: Path, *options: str
) -> dict[str, bytes | str]:
    return _extracted([tar, *options, "-xf", str(archive), "-C"], tmp_path)


def _unzip_extracts(unzip: str, archive: Path, tmp_path: Path) -> dict[str, bytes | str]:
    return _extracted([unzip, "-o", "-qq", str(archive), "-d"], tmp_path)


def _tarfile_reads(archive: Path) -> dict[str, bytes | str]:
    """What Python's tarfile reads: each regular member's bytes (the last of a name)."""
    found: dict[str, bytes | str] = {}
    with tarfile.open(archive) as members:
        for member in members:
            stream = members.extractfile(member) if member.isreg() else None
            if stream is not None:
                found[member.name] = stream.read()
    return found


def _zipfile_reads(archive: Path) -> dict[str, bytes | str]:
    """What Python's zipfile reads: each member's bytes, or the error reading it."""
    found: dict[str, bytes | str] = {}
    with zipfile.ZipFile(archive) as members:
        for info in members.infolist():
            if info.is_dir():
                continue
            try:
                found[info.filename] = members.read(info)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as exc:
                found[info.filename] = f"error: {exc}"
    return found


def _refused(archive: Path, code: str) -> None:
    """verify names ``archive`` by exactly one finding, of ``code`` (nothing of it is read as
    bundle content), and the CLI exits 1 printing it."""
    assert [f.code for f in verify(archive)] == [code]
    result = runner.invoke(app, ["verify", "--json", str(archive)])
    assert result.exit_code == 1, result.output
    assert [f["code"] for f in json.loads(result.stdout)["findings"]] == [code]


# ----------------------------------------------------------------------------------- tar bytes


def _header(name: str, size: int, kind: bytes = tarfile.REGTYPE, form: int = 0) -> bytearray:
    """A tar header block (GNU format unless ``form`` says), its checksum to be sealed."""
    info = tarfile.TarInfo(name)
    info.size, info.type, info.mode = size, kind, 0o644
    return bytearray(info.tobuf(form or tarfile.GNU_FORMAT, "utf-8", "surrogateescape")[:512])


def _sealed(block: bytearray) -> bytes:
    """The header block with its checksum made to match."""
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\x00 " % sum(block)
    return bytes(block)


def _padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


def _tar_member(name: str, data: bytes) -> bytes:
    return _sealed(_header(name, len(data))) + _padded(data)


def _pax(records: dict[bytes, bytes], kind: bytes = tarfile.XHDTYPE) -> bytes:
    """A pax header of ``records``, each ``LENGTH KEY=VALUE\\n``."""
    data = b""
    for key, value in records.items():
        body = b" " + key + b"=" + value + b"\n"
        length = len(body) + 1
        while len(str(length)) + len(body) != length:
            length = len(str(length)) + len(body)
        data += str(length).encode() + body
    return _raw_pax(data, kind)


def _raw_pax(data: bytes, kind: bytes = tarfile.XHDTYPE) -> bytes:
    """A pax header holding ``data`` as it is."""
    return _sealed(_header("././@PaxHeader", len(data), kind, tarfile.PAX_FORMAT)) + _padded(data)


def _long_name(name: str) -> bytes:
    data = name.encode() + b"\x00"
    return _sealed(_header("././@LongLink", len(data), tarfile.GNUTYPE_LONGNAME)) + _padded(data)


def _tar_of(files: dict[str, bytes], instead: dict[str, bytes] | None = None) -> list[bytes]:
    """The members of a tar of ``files`` in name order, a member given ``instead`` in place of
    the one of its name."""
    instead = instead or {}
    return [instead.get(name) or _tar_member(name, data) for name, data in files.items()]


def _write(out: Path, *parts: bytes | list[bytes]) -> Path:
    out.write_bytes(b"".join(b"".join(p) if isinstance(p, list) else p for p in parts))
    return out


# ----------------------------------------------------------------------------------- zip bytes


def _zip_bytes(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytearray:
    """A zip of ``files`` in name order, written by zipfile (Unix members, mode 0644)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            info.create_system = 3
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, data)
    return bytearray(out.getvalue())


def _end(data: bytes) -> tuple[int, int, int]:
    """The end record's offset, and the central directory's offset and size."""
    end = data.rfind(b"PK\x05\x06")
    size, offset = struct.unpack_from("<2L", data, end + 12)
    return end, offset, size


def _entries(data: bytes) -> dict[bytes, tuple[int, int]]:
    """The offsets of each member's local header and index entry, by its name's bytes."""
    _, at, size = _end(data)
    stop = at + size
    found = {}
    while at < stop:
        n, m, k = struct.unpack_from("<3H", data, at + 28)
        found[bytes(data[at + 46 : at + 46 + n])] = (struct.unpack_from("<L", data, at + 42)[0], at)
        at += 46 + n + m + k
    return found


def _records(data: bytes, name: str) -> tuple[int, int]:
    """The offsets of member ``name``'s local header and index entry."""
    return _entries(data)[name.encode()]


def _local_data(data: bytes, local: int) -> int:
    """Where the member whose local header is at ``local`` has its stored bytes."""
    n, m = struct.unpack_from("<2H", data, local + 26)
    return local + 30 + n + m


def _set_both(
    data: bytearray, name: str, local_at: int, central_at: int, fmt: str, *v: int
) -> None:
    """Write ``v`` at the same field of member ``name``'s local header and index entry (the
    field's offset in each given)."""
    local, central = _records(data, name)
    struct.pack_into(fmt, data, local + local_at, *v)
    struct.pack_into(fmt, data, central + central_at, *v)


# ------------------------------------------------------------------------------ the genuine


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the example bundle as ``bundle`` and nothing else."""
    parent = tmp_path_factory.mktemp("stock")
    shutil.copytree(EXAMPLE, parent / TOP)
    return parent


class TestStockArchivesVerify:
    """What GNU tar and Info-ZIP zip make of a genuine bundle verifies clean, whatever the
    format and however the names are led."""

    @pytest.mark.parametrize("form", ["gnu", "oldgnu", "posix", "ustar", "v7"])
    @pytest.mark.parametrize("lead", ["", "./"])
    def test_gnu_tar(
        self, form: str, lead: str, parent: Path, gnu_tar: str, tmp_path: Path
    ) -> None:
        """``tar --format=FORM -cf x.tar [./]bundle``: verifies with no finding."""
        out = tmp_path / "x.tar"
        subprocess.run(
            [gnu_tar, f"--format={form}", "-C", str(parent), "-cf", str(out), f"{lead}{TOP}"],
            check=True,
        )
        assert verify(out) == []

    def test_gnu_tar_of_the_parent(self, parent: Path, gnu_tar: str, tmp_path: Path) -> None:
        """``tar -C PARENT -cf x.tar .``: every name led by ``./``, the parent itself ``./``;
        verifies with no finding."""
        out = tmp_path / "x.tar"
        subprocess.run([gnu_tar, "-C", str(parent), "-cf", str(out), "."], check=True)
        with tarfile.open(out) as archive:
            assert archive.getnames()[:2] == [".", f"./{TOP}"]
        assert verify(out) == []

    def test_gnu_tar_base_256_owner(self, parent: Path, gnu_tar: str, tmp_path: Path) -> None:
        """An owner past what 7 octal digits hold, which GNU tar writes in base-256 (read alike
        by every reader): verifies with no finding."""
        out = tmp_path / "x.tar"
        owner = ["--owner=3000000", "--group=3000000", "--numeric-owner"]
        subprocess.run(
            [gnu_tar, "--format=gnu", *owner, "-C", str(parent), "-cf", str(out), TOP], check=True
        )
        assert out.read_bytes()[108] == 0x80  # the uid field, in base-256
        assert verify(out) == []

    @pytest.mark.parametrize("lead", ["", "./"])
    def test_info_zip(self, lead: str, parent: Path, info_zip: str, tmp_path: Path) -> None:
        """``zip -r x.zip [./]bundle``: verifies with no finding."""
        out = tmp_path / "x.zip"
        subprocess.run([info_zip, "-q", "-r", str(out), f"{lead}{TOP}"], cwd=parent, check=True)
        assert verify(out) == []

    def test_info_zip_streamed(self, parent: Path, info_zip: str, tmp_path: Path) -> None:
        """``zip -r - bundle | cat``: each member followed by a data descriptor, its local
        header's CRC-32 and size left 0; verifies with no finding."""
        zipped = subprocess.run(
            [info_zip, "-q", "-r", "-", TOP], cwd=parent, check=True, capture_output=True
        )
        out = tmp_path / "x.zip"
        out.write_bytes(zipped.stdout)
        assert b"PK\x07\x08" in zipped.stdout
        assert verify(out) == []

    def test_a_repeated_name_led_by_dot_slash(
        self, parent: Path, gnu_tar: str, tmp_path: Path
    ) -> None:
        """``./bundle/x`` and ``bundle/x`` are one name: given both, the second is named
        (GNU tar extracts the later over the earlier)."""
        out = _write(
            tmp_path / "x.tar",
            _tar_of(GENUINE),
            _tar_member(f"./{AGG}", FORGED),
            END,
        )
        assert _gnu_tar_extracts(gnu_tar, out, tmp_path)[AGG] == FORGED
        assert [f.code for f in verify(out)] == ["archive-name-repeated"]


# ------------------------------------------------------------------------------- tar shapes


class TestTarShapes:
    """Each tar that GNU tar extracts otherwise than tarfile reads it is refused, nothing of it
    read."""

    def test_members_after_the_end(self, gnu_tar: str, tmp_path: Path) -> None:
        """A forged member after the end-of-archive blocks: tarfile and tar stop at the end,
        ``tar --ignore-zeros`` extracts the forgery over the genuine file."""
        out = _write(tmp_path / "x.tar", _tar_of(GENUINE), END, _tar_member(AGG, FORGED), END)
        assert _tarfile_reads(out) == GENUINE
        assert _gnu_tar_extracts(gnu_tar, out, tmp_path) == GENUINE
        assert _gnu_tar_extracts(gnu_tar, out, tmp_path, "--ignore-zeros")[AGG] == FORGED
        _refused(out, "archive-ambiguous-after-end")

    def test_a_bad_checksum_then_a_forged_member(self, gnu_tar: str, tmp_path: Path) -> None:
        """A header whose checksum does not match, then a forged member: tarfile stops at the
        bad header, GNU tar skips it and extracts the forgery."""
        bad = _header("junk", 0)
        bad[148:156] = b"0000000\x00"
        out = _write(tmp_path / "x.tar", _tar_of(GENUINE), bytes(bad), _tar_member(AGG, FORGED))
        assert _tarfile_reads(out) == GENUINE
        assert _gnu_tar_extracts(gnu_tar, out, tmp_path)[AGG] == FORGED
        _refused(out, "archive-ambiguous-checksum")

    @pytest.mark.parametrize("magic", [b"ustar  \x00", bytes(8)], ids=["gnu", "v7"])
    def test_a_prefix_in_a_gnu_or_v7_header(
        self, magic: bytes, gnu_tar: str, tmp_path: Path
    ) -> None:
        """A GNU (or v7) header named ``aggregates.json`` with ``bundle/data`` in the POSIX
        prefix field: tarfile reads the genuine name, GNU tar extracts it at the top."""
        header = _header("aggregates.json", len(GENUINE[AGG]))
        header[257:265] = magic
        header[345 : 345 + len(f"{TOP}/data")] = f"{TOP}/data".encode()
        member = _sealed(header) + _padded(GENUINE[AGG])
        out = _write(tmp_path / "x.tar", _tar_of(GENUINE, {AGG: member}), END)
        assert _tarfile_reads(out) == GENUINE
        extracted = _gnu_tar_extracts(gnu_tar, out, tmp_path)
        assert AGG not in extracted and "aggregates.json" in extracted
        _refused(out, "archive-ambiguous-header")

    def test_a_long_name_and_a_pax_path(self, gnu_tar: str, tmp_path: Path) -> None:
        """A GNU long name and a pax path that differ, for one member: tarfile takes the long
        name (the genuine one), GNU tar the pax path."""
        member = (
            _long_name(AGG)
            + _pax({b"path": f"{TOP}/data/other.json".encode()})
            + _tar_member("x", GENUINE[AGG])
        )
        out = _write(tmp_path / "x.tar", _tar_of(GENUINE, {AGG: member}), END)
        assert _tarfile_reads(out) == GENUINE
        extracted = _gnu_tar_extracts(gnu_tar, out, tmp_path)
        assert AGG not in extracted and f"{TOP}/data/other.json" in extracted
        _refused(out, "archive-ambiguous-name")

    def test_a_tar_that_is_also_a_zip(self, gnu_tar: str, unzip: str, tmp_path: Path) -> None:
        """A tar of the genuine bundle followed by a zip of a forged one: tar reads from the
        start, unzip from the end."""
        forged = bytes(_zip_bytes(GENUINE | {AGG: FORGED}))
        out = _write(tmp_path / "x.tar", _tar_of(GENUINE), END, forged)
        assert _gnu_tar_extracts(gnu_tar, out, tmp_path) == GENUINE
        assert _unzip_extracts(unzip, out, tmp_path)[AGG] == FORGED
        _refused(out, "archive-ambiguous-format")

    def test_a_zip_that_is_also_a_tar(self, gnu_tar: str, unzip: str, tmp_path: Path) -> None:
        """A zip of the genuine bundle whose first 512 bytes are a tar header (the fields set in
        the first member's extra field): GNU tar extracts a file of its own from it."""
        files = {f"{TOP}/": b""} | GENUINE
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            for name, data in files.items():
                info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
                if name == f"{TOP}/":
                    info.extra = struct.pack("<HH", 0xCAFE, 1100) + bytes(1100)
                archive.writestr(info, data)
        data = bytearray(out.getvalue())
        for at, value in (
            (100, b"0000644\x00"),
            (108, b"0000000\x00"),
            (116, b"0000000\x00"),
            (124, b"00000000000\x00"),
            (136, b"00000000000\x00"),
            (156, b"0"),
            (257, b"ustar  \x00"),
        ):
            data[at : at + len(value)] = value
        data[:512] = _sealed(data[:512])
        path = tmp_path / "x.zip"
        path.write_bytes(bytes(data))
        assert _unzip_extracts(unzip, path, tmp_path) == GENUINE
        [extracted] = _gnu_tar_extracts(gnu_tar, path, tmp_path)
        assert extracted.startswith("PK\x03\x04")
        _refused(path, "archive-ambiguous-format")

    def test_a_size_tarfile_reads_and_gnu_tar_does_not(self, gnu_tar: str, tmp_path: Path) -> None:
        """A size field with an underscore between its digits: tarfile reads it (int() does),
        GNU tar refuses it and skips the member."""
        size = format(len(GENUINE[AGG]), "o")
        header = _header(AGG, len(GENUINE[AGG]))
        header[124:136] = ("0" * (10 - len(size)) + "_" + size).encode() + b"\x00"
        member = _sealed(header) + _padded(GENUINE[AGG])
        out = _write(tmp_path / "x.tar", _tar_of(GENUINE, {AGG: member}), END)
        assert _tarfile_reads(out) == GENUINE
        assert AGG not in _gnu_tar_extracts(gnu_tar, out, tmp_path)
        _refused(out, "archive-ambiguous-header")

    def test_a_nul_inside_a_pax_path(self, gnu_tar: str, tmp_path: Path) -> None:
        """A pax path with a NUL inside: GNU tar cuts the name there, tarfile keeps it whole."""
        member = _pax({b"path": AGG.encode() + b"\x00.json"}) + _tar_member("x", GENUINE[AGG])
        out = _write(tmp_path / "x.tar", _tar_of(GENUINE, {AGG: member}), END)
        assert AGG not in _tarfile_reads(out)
        assert _gnu_tar_extracts(gnu_tar, out, tmp_path) == GENUINE
        _refused(out, "archive-ambiguous-name")

    def test_a_regular_file_named_as_a_directory(self, gnu_tar: str, tmp_path: Path) -> None:
        """A regular member (type 0) whose name ends in a slash: tarfile reads a file, GNU tar
        makes a directory."""
        odd = f"{TOP}/data/odd/"
        out = _write(tmp_path / "x.tar", _tar_of(GENUINE), _tar_member(odd, b"{}\n"), END)
        assert _tarfile_reads(out)[odd] == b"{}\n"
        extracted = _gnu_tar_extracts(gnu_tar, out, tmp_path)
        assert not any(name.startswith(f"{TOP}/data/odd") for name in extracted)
        _refused(out, "archive-ambiguous-header")


# ------------------------------------------------------------------------------- zip shapes


class TestZipShapes:
    """Each zip that unzip extracts otherwise than zipfile reads it is refused, nothing of it
    read; and a member is a link by its mode bits whatever system made it."""

    def test_a_declared_size_that_truncates_the_stream(self, unzip: str, tmp_path: Path) -> None:
        """aggregates.json deflated with a forged tail, its declared size and CRC-32 those of
        the genuine bytes: zipfile stops at the declared size, unzip inflates the whole stream."""
        files = GENUINE | {AGG: GENUINE[AGG] + FORGED}
        data = _zip_bytes(files)
        _set_both(data, AGG, 14, 16, "<L", zlib.crc32(GENUINE[AGG]))
        _set_both(data, AGG, 22, 24, "<L", len(GENUINE[AGG]))
        out = tmp_path / "x.zip"
        out.write_bytes(bytes(data))
        assert _zipfile_reads(out) == GENUINE
        assert _unzip_extracts(unzip, out, tmp_path)[AGG] == GENUINE[AGG] + FORGED
        _refused(out, "archive-ambiguous-stream")

    def test_a_local_header_naming_another_file(self, unzip: str, tmp_path: Path) -> None:
        """A local header naming another file than the index: zipfile refuses the member,
        unzip extracts it under the index's name."""
        data = _zip_bytes(GENUINE)
        local, _ = _records(data, AGG)
        data[local + 30 : local + 30 + len(AGG)] = AGG.replace("aggregates", "aggregatez").encode()
        out = tmp_path / "x.zip"
        out.write_bytes(bytes(data))
        assert str(_zipfile_reads(out)[AGG]).startswith("error")
        assert _unzip_extracts(unzip, out, tmp_path) == GENUINE
        _refused(out, "archive-ambiguous-local-header")

    def test_local_header_sizes_other_than_the_index(self, unzip: str, tmp_path: Path) -> None:
        """A stored member whose local header declares 10 bytes, its index entry all: zipfile
        reads by the index, unzip extracts 10 bytes."""
        data = _zip_bytes(GENUINE, zipfile.ZIP_STORED)
        local, _ = _records(data, AGG)
        struct.pack_into("<2L", data, local + 18, 10, 10)
        out = tmp_path / "x.zip"
        out.write_bytes(bytes(data))
        assert _zipfile_reads(out) == GENUINE
        assert _unzip_extracts(unzip, out, tmp_path)[AGG] == GENUINE[AGG][:10]
        _refused(out, "archive-ambiguous-local-header")

    def test_a_unicode_path_naming_another_file(self, unzip: str, tmp_path: Path) -> None:
        """An Info-ZIP Unicode Path field naming another file than the header: zipfile takes
        the header's name, unzip the field's."""
        other = f"{TOP}/data/other.json".encode()
        field = b"\x01" + struct.pack("<L", zlib.crc32(AGG.encode())) + other
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in GENUINE.items():
                info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                if name == AGG:
                    info.extra = struct.pack("<HH", 0x7075, len(field)) + field
                archive.writestr(info, data)
        path = tmp_path / "x.zip"
        path.write_bytes(out.getvalue())
        assert _zipfile_reads(path) == GENUINE
        extracted = _unzip_extracts(unzip, path, tmp_path)
        assert AGG not in extracted and other.decode() in extracted
        _refused(path, "archive-ambiguous-name")

    def test_a_name_neither_ascii_nor_flagged_utf8(self, unzip: str, tmp_path: Path) -> None:
        """A top-level directory named in UTF-8 without the UTF-8 flag: zipfile reads the name
        as cp437, unzip as it is."""
        files = {name.replace(TOP, "b\u00fcndle", 1): d for name, d in GENUINE.items()}
        data = _zip_bytes(files)
        for local, central in _entries(data).values():
            for at in (local + 6, central + 8):
                struct.pack_into("<H", data, at, struct.unpack_from("<H", data, at)[0] & ~0x800)
        out = tmp_path / "x.zip"
        out.write_bytes(bytes(data))
        assert {n.split("/")[0] for n in _zipfile_reads(out)} == {"b\u251c\u255dndle"}
        assert set(_unzip_extracts(unzip, out, tmp_path)) == set(files)
        _refused(out, "archive-ambiguous-name")

    @pytest.mark.parametrize("system", [2, 5, 16, 30])
    def test_a_symlink_by_its_mode_for_any_system(
        self, system: int, unzip: str, tmp_path: Path
    ) -> None:
        """aggregates.json with a symlink's mode, made by a system other than Unix (VMS, Atari,
        BeOS, AtheOS): zipfile reads a file, unzip makes a symlink; verify names the symlink."""
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in GENUINE.items():
                info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                mode = stat.S_IFLNK | 0o777 if name == AGG else stat.S_IFREG | 0o644
                info.create_system, info.external_attr = system, mode << 16
                archive.writestr(info, data)
        path = tmp_path / "x.zip"
        path.write_bytes(out.getvalue())
        assert _zipfile_reads(path) == GENUINE
        assert str(_unzip_extracts(unzip, path, tmp_path)[AGG]).startswith("symlink to")
        findings = verify(path)
        assert "symlink" in {f.code for f in findings}
        assert AGG.removeprefix(f"{TOP}/") in {f.file for f in findings if f.code == "symlink"}

    def test_a_member_needing_a_later_version(self, unzip: str, tmp_path: Path) -> None:
        """aggregates.json's index entry needing zip 6.2 to be extracted: unzip (4.6 at most)
        skips the member, zipfile (6.3 at most) reads it."""
        data = _zip_bytes(GENUINE)
        _, central = _records(data, AGG)
        struct.pack_into("<H", data, central + 6, 62)
        out = tmp_path / "x.zip"
        out.write_bytes(bytes(data))
        assert _zipfile_reads(out) == GENUINE
        assert AGG not in _unzip_extracts(unzip, out, tmp_path)
        _refused(out, "archive-ambiguous-header")

    def test_a_zip64_end_record_disagreeing(self, unzip: str, tmp_path: Path) -> None:
        """A zip64 end record giving the whole index, the 32-bit one all but its first entry:
        zipfile reads the zip64 one, unzip the 32-bit one."""
        data = _zip_bytes(GENUINE)
        end, offset, size = _end(data)
        second = data.index(b"PK\x01\x02", offset + 4)
        entries = len(GENUINE)
        record = struct.pack(
            "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, size, offset
        )
        locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, end, 1)
        tail = struct.pack(
            "<4s4H2LH",
            b"PK\x05\x06",
            0,
            0,
            entries - 1,
            entries - 1,
            offset + size - second,
            second,
            0,
        )
        out = tmp_path / "x.zip"
        out.write_bytes(bytes(data[:end]) + record + locator + tail)
        assert _zipfile_reads(out) == GENUINE
        assert len(_unzip_extracts(unzip, out, tmp_path)) == entries - 1
        _refused(out, "archive-ambiguous-layout")


# ------------------------------------------------------------------- what no reader may differ


def _zip_case(
    edit: Callable[[bytearray], bytes | bytearray], stored: bool = False
) -> Callable[[Path], None]:
    """A case: the genuine bundle zipped, then ``edit``-ed."""

    def write(out: Path) -> None:
        data = _zip_bytes(GENUINE, zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
        out.write_bytes(bytes(edit(data)))

    return write


def _tar_case(*parts: bytes | list[bytes]) -> Callable[[Path], None]:
    """A case: the tar of ``parts``."""

    def write(out: Path) -> None:
        _write(out, *parts)

    return write


def _trailing(data: bytearray) -> bytes:
    return bytes(data) + b"trailing bytes"


def _gap(data: bytearray) -> bytes:
    """A member's local header and bytes left in place, its index entry taken out."""
    hidden = f"{TOP}/data/hidden.json"
    whole = _zip_bytes(GENUINE | {hidden: FORGED})
    _, offset, size = _end(whole)
    _, central = _records(whole, hidden)
    n, m, k = struct.unpack_from("<3H", whole, central + 28)
    length = 46 + n + m + k
    index = whole[offset:central] + whole[central + length : offset + size]
    entries = len(GENUINE)
    tail = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, len(index), offset, 0)
    return bytes(whole[:offset]) + bytes(index) + tail


def _count(data: bytearray) -> bytearray:
    end, _, _ = _end(data)
    struct.pack_into("<2H", data, end + 8, len(GENUINE) - 1, len(GENUINE) - 1)
    return data


def _descriptor(data: bytearray) -> bytes:
    """A zip written as to a pipe (each member with a data descriptor), aggregates.json's
    descriptor giving another CRC-32."""

    class Pipe(io.RawIOBase):
        def __init__(self) -> None:
            self.written = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b: bytes) -> int:  # type: ignore[override]
            self.written += b
            return len(b)

    pipe = Pipe()
    with zipfile.ZipFile(pipe, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in GENUINE.items():
            archive.writestr(name, content)
    written = pipe.written
    local, _ = _records(written, AGG)
    descriptor = written.index(b"PK\x07\x08", _local_data(written, local))
    struct.pack_into("<L", written, descriptor + 4, 0xDEADBEEF)
    return bytes(written)


def _flag(bits: int) -> Callable[[bytearray], bytearray]:
    def edit(data: bytearray) -> bytearray:
        local, central = _records(data, AGG)
        for at in (local + 6, central + 8):
            struct.pack_into("<H", data, at, struct.unpack_from("<H", data, at)[0] | bits)
        return data

    return edit


def _inner(data: bytearray) -> bytes:
    """A stored member whose bytes are a whole local header and member, and an index entry
    pointing into them."""
    inner = _zip_bytes({f"{TOP}/data/inner.json": FORGED}, zipfile.ZIP_STORED)
    _, inner_offset, _ = _end(inner)
    carrier = f"{TOP}/data/carrier.bin"
    whole = _zip_bytes(GENUINE | {carrier: bytes(inner[:inner_offset])}, zipfile.ZIP_STORED)
    local, _ = _records(whole, carrier)
    _, first = _records(inner, f"{TOP}/data/inner.json")
    entry = bytearray(inner[first : _end(inner)[0]])
    struct.pack_into("<L", entry, 42, _local_data(whole, local))
    end, offset, size = _end(whole)
    count_ = len(GENUINE) + 2
    tail = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, count_, count_, size + len(entry), offset, 0
    )
    return bytes(whole[:end]) + bytes(entry) + tail


def _directory_by_mode(data: bytearray) -> bytearray:
    _, central = _records(data, AGG)
    struct.pack_into("<L", data, central + 38, (stat.S_IFDIR | 0o755) << 16)
    return data


def _stored_sizes(data: bytearray) -> bytearray:
    _set_both(data, AGG, 18, 20, "<L", len(GENUINE[AGG]) - 1)
    return data


def _crc(data: bytearray) -> bytearray:
    _set_both(data, AGG, 14, 16, "<L", 0xDEADBEEF)
    return data


def _nul_name(data: bytearray) -> bytearray:
    local, central = _records(data, AGG)
    for at in (local + 30, central + 46):
        data[at + len(AGG) - 1] = 0
    return data


def _bad_utf8(data: bytearray) -> bytearray:
    _flag(0x800)(data)
    local, central = _records(data, AGG)
    for at in (local + 30, central + 46):
        data[at + len(AGG) - 1] = 0xFF
    return data


def _extra(fields: bytes) -> Callable[[bytearray], bytes]:
    """aggregates.json's index entry given the extra field ``fields``."""

    def edit(data: bytearray) -> bytes:
        _, central = _records(data, AGG)
        n, m = struct.unpack_from("<2H", data, central + 28)
        assert m == 0
        struct.pack_into("<H", data, central + 30, len(fields))
        at = central + 46 + n
        edited = data[:at] + fields + data[at:]
        end, _, size = _end(edited)
        struct.pack_into("<L", edited, end + 12, size + len(fields))
        return bytes(edited)

    return edit


def _locator(data: bytearray) -> bytes:
    """A zip64 end record and a locator that points elsewhere than that record."""
    end, offset, size = _end(data)
    entries = len(GENUINE)
    record = struct.pack(
        "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, size, offset
    )
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, end - 8, 1)
    return bytes(data[:end]) + record + locator + bytes(data[end:])


def _marker(data: bytearray) -> bytearray:
    end, _, _ = _end(data)
    struct.pack_into("<L", data, end + 12, 0xFFFFFFFF)
    return data


def _between(data: bytearray) -> bytes:
    end, _, _ = _end(data)
    return bytes(data[:end]) + b"between" + bytes(data[end:])


def _index_entry(data: bytearray) -> bytearray:
    _, central = _records(data, AGG)
    data[central : central + 4] = b"PK\x09\x09"
    return data


def _tar_with(member: bytes) -> list[bytes]:
    return [*_tar_of(GENUINE), member, END]


def _header_edit(at: int, value: bytes, name: str = AGG) -> bytes:
    header = _header(name, len(GENUINE[name]))
    header[at : at + len(value)] = value
    return _sealed(header) + _padded(GENUINE[name])


def _tar_instead(member: bytes) -> list[bytes]:
    return [*_tar_of(GENUINE, {AGG: member}), END]


#: Archives that the stock tools may read as Python does, but that another reader could read
#: otherwise (one that walks the local headers, one that knows no pax, one that stops or goes on
#: elsewhere), or that no reader reads one way: each with the code verify names it by.
STRICT: dict[str, tuple[Callable[[Path], None], str]] = {
    "zip-trailing-bytes": (_zip_case(_trailing), "archive-ambiguous-after-end"),
    "zip-gap-between-members": (_zip_case(_gap), "archive-ambiguous-layout"),
    "zip-entry-count": (_zip_case(_count), "archive-ambiguous-layout"),
    "zip-locator-elsewhere": (_zip_case(_locator), "archive-ambiguous-layout"),
    "zip-marker-without-zip64": (_zip_case(_marker), "archive-ambiguous-layout"),
    "zip-bytes-before-the-end-record": (_zip_case(_between), "archive-ambiguous-layout"),
    "zip-index-entry-signature": (_zip_case(_index_entry), "archive-ambiguous-layout"),
    "zip-data-descriptor": (_zip_case(_descriptor), "archive-ambiguous-local-header"),
    "zip-crc": (_zip_case(_crc), "archive-ambiguous-stream"),
    "zip-stored-sizes": (_zip_case(_stored_sizes, stored=True), "archive-ambiguous-stream"),
    "zip-directory-by-mode": (_zip_case(_directory_by_mode), "archive-ambiguous-header"),
    "zip-extra-cut": (_zip_case(_extra(b"\x01\x02\x03")), "archive-ambiguous-header"),
    "zip-extra-twice": (
        _zip_case(_extra(b"\xfe\xca\x00\x00" * 2)),
        "archive-ambiguous-header",
    ),
    "zip64-extra-unasked": (
        _zip_case(_extra(struct.pack("<HHQ", 1, 8, 5))),
        "archive-ambiguous-header",
    ),
    "zip-nul-in-name": (_zip_case(_nul_name), "archive-ambiguous-name"),
    "zip-flagged-utf8-that-is-not": (_zip_case(_bad_utf8), "archive-ambiguous-name"),
    "tar-pax-size": (
        _tar_case(_tar_instead(_pax({b"size": b"1"}) + _tar_member(AGG, GENUINE[AGG]))),
        "archive-ambiguous-header",
    ),
    "tar-global-path": (
        _tar_case(_pax({b"path": AGG.encode()}, tarfile.XGLTYPE), _tar_of(GENUINE), END),
        "archive-ambiguous-header",
    ),
    "tar-pax-record-cut": (
        _tar_case(_tar_instead(_raw_pax(b"99 comment=x\n") + _tar_member(AGG, GENUINE[AGG]))),
        "archive-ambiguous-header",
    ),
    "tar-two-pax-headers": (
        _tar_case(
            _tar_instead(
                _pax({b"comment": b"a"}) + _pax({b"comment": b"b"}) + _tar_member(AGG, GENUINE[AGG])
            )
        ),
        "archive-ambiguous-header",
    ),
    "tar-pax-header-at-the-end": (
        _tar_case(_tar_of(GENUINE), _pax({b"comment": b"x"}), END),
        "archive-ambiguous-header",
    ),
    "tar-solaris-header": (
        _tar_case(_tar_instead(_pax({b"path": AGG.encode()}, b"X") + _tar_member("x", b""))),
        "archive-ambiguous-header",
    ),
    "tar-unknown-magic": (
        _tar_case(_tar_instead(_header_edit(257, b"ustar\x00 \x00"))),
        "archive-ambiguous-header",
    ),
    "tar-mode-with-a-sign": (
        _tar_case(_tar_instead(_header_edit(100, b"+000644\x00"))),
        "archive-ambiguous-header",
    ),
    "tar-device-number": (
        _tar_case(_tar_instead(_header_edit(329, b"xyz\x00"))),
        "archive-ambiguous-header",
    ),
    "tar-hdrcharset": (
        _tar_case(_tar_instead(_pax({b"hdrcharset": b"BINARY"}) + _tar_member(AGG, GENUINE[AGG]))),
        "archive-ambiguous-header",
    ),
    "tar-directory-with-data": (
        _tar_case(
            _tar_of(GENUINE),
            _sealed(_header(f"{TOP}/data/d", len(_tar_member(AGG, FORGED)), tarfile.DIRTYPE)),
            _tar_member(AGG, FORGED),
            END,
        ),
        "archive-ambiguous-header",
    ),
    "tar-data-past-the-end": (
        _tar_case(_tar_of(GENUINE), _sealed(_header(f"{TOP}/data/x.json", 4096))),
        "archive-unreadable",
    ),
}


class TestStrict:
    """What a reader could read otherwise, or not at all, is refused as the stock tools'
    differences are (``zip-*`` cases through the zip reader, ``tar-*`` the tar reader)."""

    @pytest.mark.parametrize("name", sorted(STRICT))
    def test_refused(self, name: str, tmp_path: Path) -> None:
        """The case is named by exactly its code, nothing of the archive read."""
        write, code = STRICT[name]
        out = tmp_path / f"x.{name[:3]}"
        write(out)
        _refused(out, code)

    def test_a_header_inside_another_members_bytes(self, tmp_path: Path) -> None:
        """An index entry pointing at a local header inside another member's stored bytes:
        both members are named as overlapping, neither read."""
        out = tmp_path / "x.zip"
        _zip_case(_inner, stored=True)(out)
        overlapping = {f.file for f in verify(out) if f.code == "archive-overlap"}
        assert overlapping == {"data/carrier.bin", "data/inner.json"}

    def test_a_contiguous_file(self, tmp_path: Path) -> None:
        """A contiguous file (type 7, read as a regular file with its data by tarfile and GNU
        tar alike) is named as a special file, not read, and the rest is read."""
        out = _write(tmp_path / "x.tar", _tar_instead(_header_edit(156, b"7")))
        findings = verify(out)
        assert ("special-file", "data/aggregates.json") in {(f.code, f.file) for f in findings}
        assert "digest-mismatch" not in {f.code for f in findings}

    @pytest.mark.parametrize("bits", [0x0001, 0x0040, 0x2000, 0x0010])
    def test_encrypted_or_unknown_flags(self, bits: int, tmp_path: Path) -> None:
        """A member flagged encrypted (or for a feature verify does not read) is not read."""
        out = tmp_path / "x.zip"
        _zip_case(_flag(bits))(out)
        assert "archive-member-method" in {f.code for f in verify(out)}


# ---------------------------------------------------------------------------------- mutated

SCALE = 10 if os.environ.get("REPRO_STRESS") == "1" else 1


@pytest.fixture(scope="module")
def stock_archives(
    parent: Path, gnu_tar: str, info_zip: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, bytes]:
    """The genuine bundle as GNU tar (pax format: pax headers too) and Info-ZIP zip write it."""
    out = tmp_path_factory.mktemp("stock-archives")
    subprocess.run(
        [gnu_tar, "--format=posix", "-C", str(parent), "-cf", str(out / "x.tar"), TOP], check=True
    )
    subprocess.run([info_zip, "-q", "-r", str(out / "x.zip"), TOP], cwd=parent, check=True)
    return {form: (out / f"x.{form}").read_bytes() for form in ("tar", "zip")}


def _headers(form: str, data: bytes) -> list[int]:
    """Where the archive's headers begin: a tar's header blocks (a pax header's and its
    member's), a zip's local headers and its index."""
    if form == "tar":
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            members = archive.getmembers()
        return sorted({m.offset for m in members} | {m.offset_data - 512 for m in members})
    _, offset, _ = _end(data)
    return [local for local, _ in _entries(data).values()] + [offset]


def _structure(form: str, data: bytes) -> list[int]:
    """The bytes of the archive's headers and records, where a change is most telling."""
    starts = _headers(form, data)
    if form == "tar":
        return [at + i for at in starts for i in range(512)]
    return [at + i for at in starts[:-1] for i in range(30)] + list(range(starts[-1], len(data)))


@pytest.mark.stress
class TestMutated:
    """A genuine archive with a few bytes changed: verify names what it finds, or says the file
    is no archive, and raises nothing else; and what it still reads clean, GNU tar (with and
    without --ignore-zeros) or unzip extracts as the genuine bundle."""

    @pytest.mark.slow
    @pytest.mark.parametrize("form", ["tar", "zip"])
    @settings(max_examples=20 * SCALE, deadline=None)
    @given(choices=st.data())
    def test_read_as_extracted_or_refused(
        self,
        form: str,
        choices: st.DataObject,
        stock_archives: dict[str, bytes],
        gnu_tar: str,
        unzip: str,
    ) -> None:
        """Each change is named, or changes nothing an extractor writes."""
        data = bytearray(stock_archives[form])
        structure = _structure(form, bytes(data))
        for _ in range(choices.draw(st.integers(1, 3), "changes")):
            at = choices.draw(st.sampled_from(structure) | st.integers(0, len(data) - 1), "at")
            data[at] = choices.draw(st.integers(0, 255), "byte")
        if form == "tar" and choices.draw(st.booleans(), "checksums made to match"):
            for at in _headers(form, stock_archives[form]):
                data[at : at + 512] = _sealed(data[at : at + 512])
        if choices.draw(st.booleans(), "cut"):
            data = data[: choices.draw(st.integers(0, len(data)), "length")]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"x.{form}"
            path.write_bytes(bytes(data))
            try:
                findings = verify(path)
            except BadInput:
                return
            if findings:
                return
            if form == "zip":
                assert _unzip_extracts(unzip, path, Path(tmp)) == GENUINE
            else:
                for options in ((), ("--ignore-zeros",)):
                    assert _gnu_tar_extracts(gnu_tar, path, Path(tmp), *options) == GENUINE
