"""The strict reader of bundle files, in three parts: the byte source (:mod:`.source`: each file
read once in blocks to be hashed and scanned, held or read again where it is parsed, never past
the limits), the strict parser (:mod:`.parsing`: bytes to JSON values and models, canonical JSON,
schema, model) and the lines reader (:mod:`.lines`: JSON Lines read one line at a time). Every
read problem is a finding."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from repro.verify._findings import Finding
from repro.verify._reader.source import ByteSource, Reads, Seen

if TYPE_CHECKING:
    from repro.models import AttemptTimes, RunRecord

__all__ = ["BundleReader", "ByteSource", "Reads", "Seen"]

# The parser and the lines reader (and the models they structure) are imported where a file is
# parsed, not here: the BagIt stage reads every file through this reader and parses none, and
# `repro verify --bagit-only` imports no model (tests/test_startup.py).

T = TypeVar("T")


#: How deep a run record nests at most: an object holding an array of numbers. Where the limit on
#: JSON nesting is lower, only the strict reader can name the refusal.
_RUN_RECORD_DEPTH = 2


class BundleReader(ByteSource):
    """Reads bundle files strictly: canonical JSON, schema, model. ``files`` maps each bundle
    name to its path below the bundle root, or is a packed bundle's :class:`Source`. Files are
    read without following a symlink, and never past the ``limits``; every read problem is a
    finding.

    Each file's first read hashes and scans it; the tag files and the fixed payload files are
    held from then on, every other file is read again, checked against its first read, where it
    is parsed. Run records are parsed one line at a time.
    """

    def json(self, name: str, kind: str, cls: type[T]) -> T | None:
        """The model ``cls`` in the file, which must be canonical JSON valid against the schema
        ``kind``; None (with findings) when it is not."""
        return self.model(name, kind, cls)[0]

    def model(self, name: str, kind: str, cls: type[T]) -> tuple[T | None, str | None]:
        """:meth:`json`, and the sha256 of the model's canonical bytes (which are the file's
        when it is canonical)."""
        # Lazy: the parser brings the models, which the BagIt stage has no use for.
        from repro.verify._reader.parsing import parse_model

        data = self.raw(name)
        if data is None:
            return None, None
        return parse_model(self.note, self.limits, name, data, kind, cls)

    def run_records(self, name: str) -> Iterator[RunRecord | None] | None:
        """The run records of a JSON Lines file (see :meth:`json_lines`); canonical lines are
        read the quick way (:func:`~.parsing.canonical_record`) where the nesting limit allows
        it."""
        # Lazy: as in :meth:`model`.
        from repro.models import RunRecord
        from repro.verify._reader.parsing import canonical_record

        quick = canonical_record if self.limits.max_json_depth >= _RUN_RECORD_DEPTH else None
        return self.json_lines(name, "run-record", RunRecord, quick)

    def times_lines(self, name: str) -> Iterator[AttemptTimes | None] | None:
        """The lines of a times/<partition>.jsonl file (see :meth:`json_lines`)."""
        # Lazy: as in :meth:`model`.
        from repro.models import AttemptTimes
        from repro.verify._reader.parsing import canonical_times

        return self.json_lines(name, "attempt-times", AttemptTimes, canonical_times)

    def times_ids(self, name: str) -> Iterator[str | None] | None:
        """The attempt IDs of a times/<partition>.jsonl file read again, a line at a time, as
        :meth:`times_lines` gives them, the lines :func:`~.parsing.times_id` reads the quick
        way."""
        # Lazy: as in :meth:`model`.
        from repro.models import AttemptTimes
        from repro.verify._reader.parsing import times_id

        lines = self.json_lines(name, "attempt-times", AttemptTimes, cast(Any, times_id))
        if lines is None:
            return None
        return (v if v is None or isinstance(v, str) else v.attempt_id for v in lines)

    def json_lines(
        self, name: str, kind: str, cls: type[T], quick: Callable[[bytes], T | None] | None
    ) -> Iterator[T | None] | None:
        """The values of a JSON Lines file, parsed one line at a time as they are read: each
        value, or None for a line that is not one (with findings). ``quick`` gives a line's
        value when the line is its value's canonical form (None otherwise: the strict way then
        names what is wrong). None (with a finding) when the file cannot be read or does not
        end with a newline."""
        # Lazy: as in :meth:`model`.
        from repro.verify._reader.lines import line_values

        seen = self._first(name)
        if seen is None:
            return None
        if not seen.final_newline:
            self.note(
                Finding(
                    "jsonl-no-final-newline",
                    name,
                    "JSON Lines file does not end with a newline",
                    "final newline",
                    "none",
                )
            )
            return None
        return line_values(self.note, self.limits, name, self._again(name), kind, cls, quick)
