"""The lines reader of bundle files: a JSON Lines file's bytes, read in blocks, cut into its
lines without holding one past the limit, each line's value parsed as it comes (by
:mod:`repro.verify._reader.parsing`), every refusal a finding."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from repro.models import MAX_RECORD_VALUES
from repro.verify._findings import Finding, Location
from repro.verify._limits import Limits
from repro.verify._reader.parsing import parse_line

T = TypeVar("T")


def bounded_chunks(blocks: Iterable[bytes], limit: int) -> Iterator[bytes | int]:
    """The bytes of ``blocks`` cut after newlines: every chunk but the last ends with one, and
    none holds part of a line whose rest is in another. A line that grows past ``limit`` bytes
    is not held: its length comes instead of it, as an ``int``, once it has ended."""
    pending: list[bytes] = []
    held = 0
    skipped: int | None = None
    for block in blocks:
        cut = block.rfind(b"\n") + 1
        if not cut:
            if skipped is not None:
                skipped += len(block)
                continue
            pending.append(block)
            held += len(block)
            if held > limit:
                skipped, pending = held, []
            continue
        if skipped is not None:
            first = block.find(b"\n") + 1
            yield skipped + first
            skipped = None
            if first < cut:
                yield block[first:cut]
        else:
            yield b"".join([*pending, block[:cut]])
        pending = [block[cut:]] if cut < len(block) else []
        held = len(block) - cut
    if skipped is not None:
        yield skipped
    elif pending:
        yield b"".join(pending)


def line_values(
    note: Callable[[Finding], None],
    limits: Limits,
    name: str,
    blocks: Iterable[bytes],
    kind: str,
    cls: type[T],
    quick: Callable[[bytes], T | None] | None,
) -> Iterator[T | None]:
    """Each line's value of the JSON Lines file ``name`` (its bytes ``blocks``), or None for a
    line that is not one (named by ``note``). A line longer than ``limits.max_line_bytes`` is
    named and skipped without being held; after ``limits.max_bad_lines`` refused lines, the rest
    of the file is only read (for the check that it did not change), its lines counted, not
    parsed."""
    limit, cap = limits.max_line_bytes, limits.max_bad_lines
    number = bad = unparsed = 0
    for chunk in bounded_chunks(blocks, limit):
        if bad >= cap:
            unparsed += 1 if isinstance(chunk, int) else len(chunk.splitlines())
            continue
        # Chunks end at newlines, so their lines are the file's lines, also where a lone \r
        # ends one.
        lines: list[bytes | int] = (
            [chunk] if isinstance(chunk, int) else [*chunk.splitlines(keepends=True)]
        )
        for index, line in enumerate(lines):
            number += 1
            value = _value(note, limits, name, number, line, kind, cls, quick)
            bad += value is None
            yield value
            if bad >= cap:
                unparsed += len(lines) - index - 1
                break
    if unparsed:
        note(
            Finding(
                "bad-lines-limit",
                name,
                f"parsing stopped after {cap} refused lines: the limit max_bad_lines",
                f"<= {cap} refused lines",
                f"{unparsed} further line(s) not parsed",
            )
        )


def _value(
    note: Callable[[Finding], None],
    limits: Limits,
    name: str,
    number: int,
    line: bytes | int,
    kind: str,
    cls: type[T],
    quick: Callable[[bytes], T | None] | None,
) -> T | None:
    """One line's value: the quick way, else the strict way; None (named) when it is not
    one, or when it is longer than the limit (``line`` is then its length)."""
    limit = limits.max_line_bytes
    if isinstance(line, int) or len(line) > limit:
        note(
            Finding(
                "line-bytes-limit",
                name,
                f"line {number} longer than the limit max_line_bytes: not read",
                f"<= {limit} bytes",
                f"{line if isinstance(line, int) else len(line)} bytes",
                Location(line=number),
            )
        )
        return None
    # (Values take two bytes at least, so only a long line is worth counting in.)
    if len(line) > 2 * MAX_RECORD_VALUES and line.count(b",") > MAX_RECORD_VALUES:
        # Parsed, so many values would cost far more memory than the line's bytes.
        note(
            Finding(
                "line-values-limit",
                name,
                f"line {number} holds more values than a run record can: not parsed",
                f"<= {MAX_RECORD_VALUES} values",
                f"{line.count(b',') + 1} values or more",
                Location(line=number),
            )
        )
        return None
    value = quick(line) if quick is not None else None
    return value if value is not None else parse_line(note, limits, name, number, line, kind, cls)
