"""The recorded adapter: runs made elsewhere, read from a file the protocol pins by sha256.

A study of this adapter executes nothing. Each slot's record comes from one row of a score
table (a JSON array of objects, or a CSV file with a header) whose sha256 the protocol states:
the row whose columns name the slot's condition (one column per matrix factor, holding the
level; ``participant``, the participant's id) and its replicate (``replicate``, 0 up to
``runs_per_condition`` - 1). The row is the run's outcome, and the measure is the number at
``measure.key`` of it (``outcome_value``), taken by repro as for any outcome, in the study and
again in verify. Options:

- ``records``: the file, relative to the protocol file's folder (or ``--option records=PATH``,
  the user's own path, whose name the bundle then does not tell);
- ``records_sha256``: its sha256, which the file must have (in the protocol: a study of runs
  made elsewhere is a study of those bytes);
- ``recorded_by``: who made the runs, and how (words a reader sees in the tiers);
- ``format``: ``json`` (the default), ``csv`` (every cell a string, the measure's column read
  as a number; a level that is not a string matches its canonical JSON text) or ``rliable``
  (rliable's layout: ``{"tasks": [TASK, ...], "scores": {PARTICIPANT: [[run 0's score on each
  task], [run 1's], ...]}}``, for a protocol whose one matrix factor holds the tasks: each score
  is the row ``{FACTOR: task, "participant": ..., "replicate": run, KEY: score}``);
- ``in_bundle``: true (the default) to carry the records file in the bundle
  (``data/plans/records.json``, or ``records.csv``), where ``repro verify`` reads it again and
  holds every run record against its slot's row; false when the bundle may not carry it (its
  licence, its size): verify then has the file's sha256 alone, and cannot tell a run record
  changed after the study from its row.

The mapping rule is :mod:`repro._derive.recorded`'s, which verify applies again. A row that
names no slot of the plan, two rows for one slot, or a row without a column the rule needs
is refused when the study is frozen, at its place in the file (nothing is written). A slot
with no row is lost: its attempt fails with cause ``not-recorded``, and nothing stands in for
it. The tiers say what this is (:func:`repro._derive.tiers.execution_control`): execution
control is weakened with :func:`recorded_note` (the runs were not executed under this seal),
as are state observation (nothing was observed) and outcome evaluation (the measures are as
recorded).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro._derive.facts import recorded_note
from repro._derive.recorded import (
    FORMATS,
    MAX_RECORDS_BYTES,
    NOT_RECORDED,
    carried_files,
    mapped_rows,
)
from repro._json.canonical import json_path
from repro._protocol.pins import named_files, records_owner, records_role
from repro.adapters._base import Evidence, Frozen, file_source, protocol_path, reexecuting
from repro.errors import BadInput, RunFailed
from repro.models import SHA256_HEX, AdapterFacts, Condition, PlanEntry, Protocol

__all__ = ["FORMATS", "MAX_RECORDS_BYTES", "RecordedAdapter"]

#: The options the adapter takes, and those ``--option`` may give.
_OPTIONS = frozenset({"records", "records_sha256", "recorded_by", "format", "in_bundle"})
_COMMAND_LINE = frozenset({"records"})
#: The recorded adapter's version: the version of its mapping rule.
VERSION = "1"


def _sha(value: Any) -> bool:
    return isinstance(value, str) and SHA256_HEX.fullmatch(value) is not None


def _options(protocol: Protocol, options: Mapping[str, str]) -> dict[str, Any]:
    """The protocol's options with ``--option``'s over them, each checked."""
    where = "$.adapter.options"
    for key in protocol.adapter.options:
        if key not in _OPTIONS:
            raise BadInput.at(
                json_path(where, key),
                f"the recorded adapter takes no option {key!r} ({', '.join(sorted(_OPTIONS))})",
                "unknown-field",
            )
    for key in options:
        if key not in _COMMAND_LINE:
            raise BadInput(f"--option {key}: the recorded adapter takes records")
    merged: dict[str, Any] = {"format": "json", **protocol.adapter.options, **options}
    value = merged.get("recorded_by")
    if not (isinstance(value, str) and value.strip()):
        raise BadInput.at(
            json_path(where, "recorded_by"),
            "the recorded adapter needs recorded_by (a non-empty string)",
            "missing-field" if value is None else "wrong-type",
        )
    _check_records(protocol, merged, "records" in options)
    if not isinstance(merged.get("in_bundle", False), bool):
        raise BadInput.at(json_path(where, "in_bundle"), "expected true or false", "wrong-type")
    if merged["format"] not in FORMATS:
        raise BadInput.at(
            json_path(where, "format"), f"expected one of {', '.join(FORMATS)}", "not-allowed"
        )
    return merged


def _check_records(protocol: Protocol, merged: Mapping[str, Any], given: bool) -> None:
    """``records``: a non-empty string, or an object giving each participant its file;
    ``records_sha256`` of the same shape, when given (64 lower-case hex digits each)."""
    where = "$.adapter.options"
    records, pins = merged.get("records"), merged.get("records_sha256")
    ids = [p.id for p in protocol.participants]
    if given and isinstance(protocol.adapter.options.get("records"), dict):
        raise BadInput(
            "--option records replaces the protocol's one records file; this protocol names "
            "one for each participant"
        )
    if isinstance(records, dict):
        if sorted(records) != sorted(ids) or not all(
            isinstance(v, str) and v.strip() for v in records.values()
        ):
            raise BadInput.at(
                json_path(where, "records"),
                f"expected one file name for each participant ({', '.join(ids)})",
                "not-allowed",
            )
        if pins is not None and not (
            isinstance(pins, dict) and sorted(pins) == sorted(ids) and all(map(_sha, pins.values()))
        ):
            raise BadInput.at(
                json_path(where, "records_sha256"),
                "expected each participant's file's sha256 (64 lower-case hex digits)",
                "not-allowed",
            )
        return
    if not (isinstance(records, str) and records.strip()):
        raise BadInput.at(
            json_path(where, "records"),
            "the recorded adapter needs records (a file name, or one for each participant)",
            "missing-field" if records is None else "wrong-type",
        )
    if pins is not None and not _sha(pins):
        raise BadInput.at(
            json_path(where, "records_sha256"), "expected 64 lower-case hex digits", "not-allowed"
        )


def _read(
    protocol: Protocol, options: Mapping[str, str], carried: Mapping[str, bytes]
) -> list[tuple[str | None, str, bytes]]:
    """Each records file (its participant, or None for the one file; its name in the ledger;
    its bytes), at its pinned sha256: read from the file the protocol names, or, while a bundle
    that carries them is re-executed, from the bundle (``carried``, by sha256:
    :meth:`RecordedAdapter.carried_from`)."""
    out = []
    for participant, file, pinned in named_files(protocol):
        where = json_path("$.adapter.options", "records")
        pin = json_path("$.adapter.options", "records_sha256")
        if participant is not None:
            where, pin = json_path(where, participant), json_path(pin, participant)
        given = "records" in options
        if reexecuting() and not given and isinstance(pinned, str) and pinned in carried:
            data, name = carried[pinned], Path(file).name
        else:
            path = Path(options["records"]) if given else protocol_path(file, where)
            name = "records" if given else path.name
            data = _file_bytes(path, file, where)
        found = hashlib.sha256(data).hexdigest()
        if pinned is None:
            raise BadInput.at(
                pin,
                f"the recorded adapter needs the records file's sha256, which pins the runs: "
                f"this file's is {found}",
                "missing-field",
            )
        if found != pinned:
            raise BadInput.at(
                pin,
                f"the records file's sha256 is {found}, not the one the protocol pins",
                "inconsistent",
            )
        out.append((participant, name, data))
    return out


def _file_bytes(path: Path, file: str, where: str) -> bytes:
    """The bytes of the records file at ``path`` (``file`` as the protocol names it, at JSON
    path ``where``), at most :data:`MAX_RECORDS_BYTES`."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_RECORDS_BYTES + 1)
    except OSError as exc:
        raise BadInput.at(where, f"cannot read {file!r} ({exc.strerror})", "not-found") from None
    if len(data) > MAX_RECORDS_BYTES:
        raise BadInput.at(where, f"larger than {MAX_RECORDS_BYTES} bytes", "over-limit")
    return data


class RecordedAdapter:
    """Reads each slot's run from the pinned records file; executes nothing."""

    name = "recorded"
    #: It needs no simulator package.
    simulator_modules: tuple[str, ...] = ()
    #: A run reads a row held in memory: no process-global generator, nothing shared that
    #: changes, nothing to wait on.
    thread_sessions = True

    def __init__(self) -> None:
        self._rows: dict[str, dict[int, dict[str, Any]]] = {}
        #: Each records file's bytes and sha256, by its participant (None: the one file).
        self._data: dict[str | None, bytes] = {}
        self._sha256: dict[str | None, str] = {}
        #: The records files of the bundle being re-executed, by sha256 (:meth:`carried_from`).
        self._carried: dict[str, bytes] = {}

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Check options and participants, read the records file at its pinned sha256 and map
        every row to its slot; pin the file."""
        merged = _options(protocol, options)
        if protocol.measure.name != "outcome_value" or not protocol.measure.key:
            raise BadInput.at(
                "$.measure",
                "a recorded run's measure is a column of its row: outcome_value, with key",
                "not-allowed",
            )
        for i, participant in enumerate(protocol.participants):
            if participant.kind != "recorded" or participant.params:
                raise BadInput.at(
                    f"$.participants[{i}]",
                    "the recorded adapter's participants are kind 'recorded', with no params",
                    "not-allowed",
                )
        files = _read(protocol, options, self._carried)
        self._rows = mapped_rows(protocol, files)
        sources = tuple(file_source(records_role(p), name, data) for p, name, data in files)
        # Each file's bytes and sha256, by its participant (None: the protocol's one file).
        self._data = {p: data for p, _, data in files}
        self._sha256 = {p: str(s.sha256) for (p, _, _), s in zip(files, sources, strict=True)}
        facts = AdapterFacts(
            name=self.name,
            version=VERSION,
            observation_scope="none",
            observation_note="nothing was observed: each run is a row of a file recorded elsewhere",
            measure_inputs="reported",
            recorded_from=recorded_note(
                [(s.name, str(s.sha256)) for s in sources], merged["recorded_by"]
            ),
        )
        return Frozen(facts=facts, sources=sources)

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _RecordedSession:
        """The condition's rows."""
        owner = records_owner(protocol, condition.participant)
        return _RecordedSession(self._rows.get(condition.id, {}), self._sha256.get(owner, ""))

    def carried_from(self, files: Mapping[str, bytes]) -> None:
        """Read the records, while a bundle is re-executed (``repro replay`` and ``repro
        audit`` without ``--sources``), from ``files``, the records files it carries, by bundle
        name, rather than from the files its protocol names: kept by their sha256, so that a
        file is taken only where the protocol pins those very bytes."""
        self._carried = {hashlib.sha256(data).hexdigest(): data for data in files.values()}

    def carried(self, protocol: Protocol) -> list[tuple[str, bytes]]:
        """The records files as a bundle of ``protocol`` carries them: each one's bundle name
        (:func:`repro._derive.recorded.carried_files`) and the bytes read at freeze time; none
        when the protocol carries none."""
        return [(name, self._data[p]) for name, p, _ in carried_files(protocol)]


class _RecordedSession:
    def __init__(self, rows: dict[int, dict[str, Any]], sha256: str) -> None:
        self._rows = rows
        self.contract: dict[str, Any] = {"records_sha256": sha256}

    def run(self, entry: PlanEntry) -> Evidence:
        row = self._rows.get(entry.replicate)
        if row is None:
            raise RunFailed(NOT_RECORDED)
        return Evidence(
            step_rewards=None, reported_measure=None, steps=None, trace_sha256=None, outcome=row
        )

    def close(self) -> None:
        """Nothing stays open."""
