"""repro._files.write_atomically, the one way repro writes a file whole or not at all (each
bundle file, a signature, a packed bundle): a temporary ``.NAME.partial`` beside the target,
flushed and fsynced, then put in place by a rename or a hard link."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro._files import partial_name, write_atomically


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


class _Boom(Exception):
    pass


def test_temporary_name_is_beside_the_target(tmp_path: Path) -> None:
    """The temporary name is ``.NAME.partial`` in the target's own directory, the name verify
    knows an unfinished file by."""
    assert partial_name(tmp_path / "d" / "x.json") == tmp_path / "d" / ".x.json.partial"


@settings(max_examples=25, deadline=None)
@given(chunks=st.lists(st.binary(max_size=1 << 12), max_size=8))
def test_content_is_complete(tmp_path_factory: pytest.TempPathFactory, chunks: list[bytes]) -> None:
    """Every byte written, in order, is in the file once the block ends, and the temporary
    name is gone, under either way of putting it in place."""
    for place in (os.replace, os.link):
        directory = tmp_path_factory.mktemp("content")
        target = directory / "out.bin"
        with write_atomically(target, place=place) as fh:
            for chunk in chunks:
                fh.write(chunk)
        assert target.read_bytes() == b"".join(chunks)
        assert _names(directory) == ["out.bin"]


def test_nothing_at_the_target_until_the_block_ends(tmp_path: Path) -> None:
    """While the block runs, the bytes are under the temporary name only."""
    target = tmp_path / "out.bin"
    with write_atomically(target) as fh:
        fh.write(b"half")
        assert not os.path.lexists(target)
        assert _names(tmp_path) == [".out.bin.partial"]
    assert target.read_bytes() == b"half"


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o077, 0o777])
def test_mode_is_0600_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    """By default the file is exactly 0600, neither widened by a permissive umask nor narrowed
    by a strict one."""
    target = tmp_path / "out.bin"
    with _umask(mask), write_atomically(target) as fh:
        fh.write(b"x")
    assert target.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("mask", "expected"), [(0o000, 0o644), (0o022, 0o644), (0o077, 0o600)])
def test_a_shared_file_takes_the_umask(tmp_path: Path, mask: int, expected: int) -> None:
    """With ``exact_mode=False`` (a packed bundle, 0644) the umask narrows the mode as it
    does for any file the user creates."""
    target = tmp_path / "out.zip"
    with _umask(mask), write_atomically(target, mode=0o644, exact_mode=False) as fh:
        fh.write(b"x")
    assert target.stat().st_mode & 0o777 == expected


def test_link_refuses_an_existing_target(tmp_path: Path) -> None:
    """Placed by a hard link, a target that exists is refused (FileExistsError), left as it
    was, and no temporary file is left."""
    target = tmp_path / "out.bin"
    target.write_bytes(b"theirs")
    with pytest.raises(FileExistsError), write_atomically(target, place=os.link) as fh:
        fh.write(b"mine")
    assert target.read_bytes() == b"theirs"
    assert _names(tmp_path) == ["out.bin"]


def test_an_existing_temporary_name_is_refused_and_kept(tmp_path: Path) -> None:
    """A file already at the temporary name is not this call's: the open is refused
    (FileExistsError) before the block runs, and that file is neither written nor removed."""
    target = tmp_path / "out.bin"
    partial_name(target).write_bytes(b"another writer's")
    ran = False
    with pytest.raises(FileExistsError), write_atomically(target) as fh:
        ran = True
        fh.write(b"mine")
    assert not ran
    assert partial_name(target).read_bytes() == b"another writer's"
    assert _names(tmp_path) == [".out.bin.partial"]


@pytest.mark.parametrize("place", [os.replace, os.link])
def test_an_error_in_the_block_leaves_no_file(
    tmp_path: Path, place: Callable[[Path, Path], None]
) -> None:
    """An exception in the block propagates, nothing is put in place, and the temporary
    file is removed."""
    target = tmp_path / "out.bin"
    with pytest.raises(_Boom), write_atomically(target, place=place) as fh:
        fh.write(b"half")
        raise _Boom
    assert _names(tmp_path) == []


def test_an_error_placing_leaves_no_file(tmp_path: Path) -> None:
    """A placing that fails (here, a rename onto a directory) propagates its OSError and
    leaves no temporary file."""
    target = tmp_path / "out.bin"
    target.mkdir()
    with pytest.raises(OSError), write_atomically(target) as fh:
        fh.write(b"whole")
    assert _names(tmp_path) == ["out.bin"]
    assert _names(target) == []


def test_keep_partial_leaves_the_unfinished_file(tmp_path: Path) -> None:
    """With ``keep_partial`` (a study's files), a failed block leaves what was written under
    the temporary name, the mark of an unfinished file, and nothing at the target."""
    target = tmp_path / "runs.jsonl"
    with pytest.raises(_Boom), write_atomically(target, keep_partial=True) as fh:
        fh.write(b"line 1\n")
        raise _Boom
    assert _names(tmp_path) == [".runs.jsonl.partial"]
    assert partial_name(target).read_bytes() == b"line 1\n"


def test_a_custom_place_is_called_once_with_the_whole_file(tmp_path: Path) -> None:
    """A custom ``place`` (the bundle writer's ``commit``) is called once, after the file is
    closed and complete, with the temporary name and the target."""
    target = tmp_path / "out.bin"
    calls: list[tuple[Path, Path, bytes]] = []

    def place(tmp: Path, path: Path) -> None:
        calls.append((tmp, path, tmp.read_bytes()))
        os.replace(tmp, path)

    with write_atomically(target, place=place) as fh:
        fh.write(b"whole")
        assert calls == []
    assert calls == [(partial_name(target), target, b"whole")]
    assert target.read_bytes() == b"whole"
