"""The records file a recorded study carries (``adapter.options.in_bundle``): read again from the
bundle, at the sha256 its protocol pins, and mapped to the plan's slots by the rule the study
read it by (:func:`repro._derive.recorded.recorded_rows`), so that each run record can be held
against its slot's row (:class:`~repro.verify._content.records.RecordChecks`)."""

from __future__ import annotations

import hashlib
from typing import Any

from repro import _layout as layout
from repro._derive.recorded import carried_files, recorded_rows
from repro.errors import BadInput
from repro.models import Protocol
from repro.verify._findings import Finding
from repro.verify._limits import Limits
from repro.verify._reader import BundleReader

__all__ = ["carried_rows"]


def carried_rows(
    read: BundleReader, protocol: Protocol, limits: Limits
) -> dict[str, dict[str, Any]] | None:
    """Each slot's row (by slot ID) of the records files the bundle carries, or None when the
    protocol carries none, or when one is missing, past ``max_held_file_bytes``, not at the
    protocol's pin (``records-pin``), or when they do not map by the rule
    (``records-unreadable``): each named, and then no run record is held against them."""
    carried = carried_files(protocol)
    names = [name for name, _, _ in carried]
    files = []
    for name, participant, pinned in carried:
        data = _carried(read, name, pinned, limits)
        if data is None:
            return None
        files.append((participant, name, data))
    if not files:
        return None
    try:
        return recorded_rows(protocol, files)
    except BadInput as exc:
        read.findings.append(
            Finding(
                "records-unreadable",
                names[0] if len(names) == 1 else layout.RECORDS + ".*",
                "the records files do not map to the plan's slots by the recorded rule",
                "every row names one slot once",
                str(exc),
            )
        )
        return None


def _carried(read: BundleReader, name: str, pinned: Any, limits: Limits) -> bytes | None:
    """The carried file ``name``'s bytes, at the sha256 ``pinned``; None (named) when it is not
    so, or cannot be read."""
    size = read.size(name)
    if size is not None and size > limits.max_held_file_bytes:
        read.findings.append(
            Finding(
                "held-file-bytes-limit",
                name,
                "file larger than the limit max_held_file_bytes: not read again",
                f"<= {limits.max_held_file_bytes} bytes",
                f"{size} bytes",
            )
        )
        return None
    data = read.raw(name)
    if data is None:
        return None
    found = hashlib.sha256(data).hexdigest()
    if found != pinned:
        read.findings.append(
            Finding(
                "records-pin",
                name,
                "the records file is not the one the protocol pins "
                "($.adapter.options.records_sha256)",
                str(pinned),
                found,
            )
        )
        return None
    return data
