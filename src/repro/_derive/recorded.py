"""The recorded adapter's mapping rule, one pure function of the records file's bytes and the
protocol, shared by the study (:mod:`repro.adapters._recorded`, which reads each slot's run from
it) and ``repro verify`` (which reads a bundle's carried copy again and names a run record that
is not its slot's row, :func:`recorded_problem`).

A records file is a score table: a JSON array of objects, a CSV file with a header, a file in
rliable's layout, or an inspect_ai evaluation log in JSON. A protocol names one file
(``records``), or one per participant (``{participant: file}``), each pinned by its sha256
(``records_sha256``, of the same shape). Each row names one slot of the plan: one column per
matrix factor (the level), ``participant`` (the participant's id; a participant's own file
gives it) and ``replicate`` (0 up to ``runs_per_condition`` - 1);
the row is the run's outcome, and the measure is the number at ``measure.key`` of it. A row that
names no slot, lacks a column, or repeats a slot is refused at its place in the file.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

from repro import _layout as layout
from repro._json import canonical
from repro._json.canonical import json_path
from repro._plan.sealing import conditions_of, slot_id
from repro._protocol.pins import named_files
from repro.errors import BadInput
from repro.models import Protocol, RunRecord

__all__ = [
    "FORMATS",
    "MAX_RECORDS_BYTES",
    "NOT_RECORDED",
    "carried_files",
    "map_rows",
    "mapped_rows",
    "recorded_problem",
    "recorded_rows",
    "rows_of",
]

#: The formats a records file may have.
FORMATS = ("json", "csv", "rliable", "inspect")
#: inspect's letter scores as numbers (``inspect_ai.scorer.value_to_float``'s defaults).
_INSPECT_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
#: The largest records file a study reads, in bytes: verify's default for a file it holds whole
#: (:attr:`repro.verify.Limits.max_held_file_bytes`), so that a bundle carrying the file is read
#: again under verify's defaults.
MAX_RECORDS_BYTES = 32 << 20
#: The cause of an attempt whose slot has no row: the run is lost, never imputed.
NOT_RECORDED = "not-recorded"
#: The columns every row has beside one per factor and the measure's.
PARTICIPANT, REPLICATE = "participant", "replicate"


def _rliable_rows(value: Any, protocol: Protocol, name: str) -> list[dict[str, Any]]:
    """The rows of a file in rliable's layout: each algorithm's (runs x tasks) matrix, one row
    per score, naming the protocol's one factor (the tasks)."""
    if len(protocol.matrix) != 1:
        raise BadInput.at(
            "$.matrix", "the rliable layout needs one matrix factor, the tasks", "not-allowed"
        )
    factor, key = protocol.matrix[0].name, str(protocol.measure.key)
    if not (isinstance(value, dict) and set(value) == {"tasks", "scores"}):
        raise BadInput.at("$", "expected an object of tasks and scores", "wrong-type", name)
    tasks, scores = value["tasks"], value["scores"]
    if not isinstance(tasks, list) or not isinstance(scores, dict):
        raise BadInput.at("$", "expected tasks a list, scores an object", "wrong-type", name)
    rows = []
    for participant, matrix in scores.items():
        where = json_path("$.scores", participant)
        if not isinstance(matrix, list):
            raise BadInput.at(where, "expected a list of runs", "wrong-type", name)
        for run, values in enumerate(matrix):
            if not (isinstance(values, list) and len(values) == len(tasks)):
                raise BadInput.at(
                    f"{where}[{run}]",
                    f"expected one score per task ({len(tasks)})",
                    "not-allowed",
                    name,
                )
            rows += [
                {factor: task, PARTICIPANT: participant, REPLICATE: run, key: score}
                for task, score in zip(tasks, values, strict=True)
            ]
    return rows


def _score(value: Any) -> Any:
    """An inspect score's value as a number, as inspect reads one (its letters, a boolean, a
    number); anything else as it is (the measure then refuses it)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, str):
        return _INSPECT_VALUES.get(value, value)
    return value


def _inspect_rows(value: Any, protocol: Protocol, name: str) -> list[dict[str, Any]]:
    """The rows of an inspect_ai log (JSON): one per sample evaluated without an error, naming
    the sample's ID in the protocol's sample factor (the scoring's scenario factor, else
    ``sample``) and its epoch less one as the replicate; the measure is the one scorer's value
    as a number, beside the value itself and the sample's scenario version, if it has one."""
    factor = protocol.scoring.scenario_factor if protocol.scoring is not None else "sample"
    key = str(protocol.measure.key)
    if not (isinstance(value, dict) and isinstance(value.get("samples"), list)):
        raise BadInput.at(
            "$.samples", "expected an inspect log with its samples", "wrong-type", name
        )
    rows = []
    for i, sample in enumerate(value["samples"]):
        where = f"$.samples[{i}]"
        if isinstance(sample, dict) and sample.get("error") is not None:
            continue  # an errored sample has no score: its slot is lost
        if not isinstance(sample, dict) or not isinstance(sample.get("scores"), dict):
            raise BadInput.at(where, "expected a sample with its scores", "wrong-type", name)
        scores = list(sample["scores"].values())
        if len(scores) != 1 or not isinstance(scores[0], dict):
            raise BadInput.at(
                json_path(where, "scores"), "expected one scorer's score", "not-allowed", name
            )
        epoch = sample.get("epoch")
        if not (type(epoch) is int and 1 <= epoch <= protocol.runs_per_condition):
            raise BadInput.at(
                json_path(where, "epoch"),
                f"expected an epoch 1 to {protocol.runs_per_condition} (runs_per_condition)",
                "not-allowed",
                name,
            )
        row = {
            factor: sample.get("id"),
            REPLICATE: epoch - 1,
            key: _score(scores[0].get("value")),
            "value": scores[0].get("value"),
        }
        metadata = sample.get("metadata")
        if isinstance(metadata, dict) and "scenario_version" in metadata:
            row["scenario_version"] = metadata["scenario_version"]
        rows.append(row)
    return rows


def _csv_rows(data: bytes, key: str, name: str) -> list[dict[str, Any]]:
    """A CSV file's rows, every cell a string but the measure's column, read as a number."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput.at("$", "not UTF-8 text", "not-allowed", name) from None
    rows: list[dict[str, Any]] = []
    for i, row in enumerate(csv.DictReader(io.StringIO(text, newline=""))):
        if None in row or None in row.values():
            raise BadInput.at(
                f"$[{i}]", "a row of another width than the header", "not-allowed", name
            )
        if key in row:
            try:
                row[key] = float(row[key])
            except ValueError:
                raise BadInput.at(
                    json_path(f"$[{i}]", key), "not a number", "wrong-type", name
                ) from None
        rows.append(dict(row))
    return rows


def _rows(data: bytes, fmt: str, protocol: Protocol, name: str) -> list[dict[str, Any]]:
    if len(data) > MAX_RECORDS_BYTES:
        raise BadInput.at("$", f"larger than {MAX_RECORDS_BYTES} bytes", "over-limit", name)
    if fmt == "csv":
        return _csv_rows(data, str(protocol.measure.key), name)
    value = canonical.loads(data, what=name, max_bytes=MAX_RECORDS_BYTES)
    if fmt == "rliable":
        return _rliable_rows(value, protocol, name)
    if fmt == "inspect":
        return _inspect_rows(value, protocol, name)
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise BadInput.at("$", "expected a JSON array of objects", "wrong-type", name)
    return value


def rows_of(
    data: bytes, fmt: str, protocol: Protocol, name: str, participant: str | None = None
) -> list[dict[str, Any]]:
    """The rows of a records file of format ``fmt`` (one of :data:`FORMATS`) as objects, each
    naming ``participant`` when the file is that participant's (a row that names another is
    refused); raises :class:`BadInput` naming ``name`` and the place of the first problem.
    The rows of an inspect log, which names no participant, are the protocol's one
    participant's when the file is no participant's own."""
    rows = _rows(data, fmt, protocol, name)
    if participant is None and fmt == "inspect":
        if len(protocol.participants) != 1:
            raise BadInput.at(
                "$.adapter.options.records",
                "an inspect log is one participant's: give one per participant, "
                '{"<participant>": "<log>.json"}',
                "not-allowed",
            )
        participant = protocol.participants[0].id
    if participant is None:
        return rows
    for i, row in enumerate(rows):
        if row.setdefault(PARTICIPANT, participant) != participant:
            raise BadInput.at(
                json_path(f"$[{i}]", PARTICIPANT),
                f"the file is {participant}'s, but the row names another",
                "inconsistent",
                name,
            )
    return rows


def _cell(level: Any, csv_text: bool) -> Any:
    """What a row holds for ``level``: the level itself, or in CSV its text."""
    if not csv_text or isinstance(level, str):
        return level
    return canonical.dumps(level, newline=False).decode()


def _key(value: Any) -> bytes:
    """A cell as a dictionary key: its canonical JSON (1 and 1.0 and true stay apart)."""
    return canonical.dumps(value, newline=False)


def _replicate(value: Any, csv_text: bool) -> int | None:
    if csv_text and isinstance(value, str) and value.isdigit():
        return int(value)
    return value if type(value) is int and value >= 0 else None


def map_rows(
    protocol: Protocol, rows: Sequence[Mapping[str, Any]], csv_text: bool, name: str
) -> dict[str, dict[int, dict[str, Any]]]:
    """Each condition's rows by replicate, by the rule the module states; raises
    :class:`BadInput` at the first row that names no slot, lacks a column or repeats a slot."""
    conditions = conditions_of(protocol)
    names = [f.name for f in protocol.matrix]
    index = {
        (*(_key(_cell(c.factors[n], csv_text)) for n in names), _key(c.participant)): c.id
        for c in conditions
    }
    out: dict[str, dict[int, dict[str, Any]]] = {c.id: {} for c in conditions}
    for i, row in enumerate(rows):
        for column in (*names, PARTICIPANT, REPLICATE, str(protocol.measure.key)):
            if column not in row:
                raise BadInput.at(f"$[{i}]", f"no column {column!r}", "missing-field", name)
        condition = index.get((*(_key(row[n]) for n in names), _key(row[PARTICIPANT])))
        replicate = _replicate(row[REPLICATE], csv_text)
        if condition is None or replicate is None or replicate >= protocol.runs_per_condition:
            raise BadInput.at(
                f"$[{i}]",
                "names no slot of the plan (no condition has these factor levels and "
                f"participant, or the replicate is not 0 to {protocol.runs_per_condition - 1})",
                "unknown-name",
                name,
            )
        if replicate in out[condition]:
            raise BadInput.at(
                f"$[{i}]",
                f"a second row for {condition} replicate {replicate}",
                "duplicate",
                name,
            )
        out[condition][replicate] = dict(row)
    return out


def mapped_rows(
    protocol: Protocol, files: Sequence[tuple[str | None, str, bytes]]
) -> dict[str, dict[int, dict[str, Any]]]:
    """Each condition's rows by replicate, of the records ``files`` (participant, name in
    messages, bytes) read in the format the protocol's ``adapter.options.format`` names
    (``json`` when it names none); raises :class:`BadInput` as :func:`rows_of` and
    :func:`map_rows` do."""
    fmt = protocol.adapter.options.get("format", "json")
    if fmt not in FORMATS:
        raise BadInput.at("$.adapter.options.format", f"expected one of {FORMATS}", "not-allowed")
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for participant, name, data in files:
        rows = rows_of(data, fmt, protocol, name, participant)
        for condition, held in map_rows(protocol, rows, fmt == "csv", name).items():
            out.setdefault(condition, {}).update(held)
    return out


def carried_files(protocol: Protocol) -> list[tuple[str, str | None, Any]]:
    """Each records file a bundle of ``protocol`` carries: its bundle name
    (:func:`repro._layout.records_files`), its participant (None for the protocol's one file)
    and its pin; none when the protocol carries none."""
    return [
        (name, participant, pinned)
        for name, (participant, _, pinned) in zip(
            layout.records_files(protocol), named_files(protocol), strict=False
        )
    ]


def recorded_rows(
    protocol: Protocol, files: Sequence[tuple[str | None, str, bytes]]
) -> dict[str, dict[str, Any]]:
    """Each slot's row (by slot ID) of the records ``files`` (see :func:`mapped_rows`)."""
    mapped = mapped_rows(protocol, files)
    n = protocol.runs_per_condition
    return {
        slot_id(condition, replicate, n): row
        for condition, rows in mapped.items()
        for replicate, row in rows.items()
    }


def recorded_problem(row: Mapping[str, Any] | None, record: RunRecord) -> str | None:
    """What run ``record`` says of its slot that the slot's ``row`` of the records file (None:
    the slot has none) contradicts, or None: an attempt that ran holds the row as its outcome
    (or, withheld as disclosing, the row's sha256), and one of a slot without a row failed as
    :data:`NOT_RECORDED`. A slot excluded before sealing never ran, whatever the file holds."""
    if record.status == "excluded":
        return None
    if row is None:
        if record.status == "failed" and record.cause == NOT_RECORDED:
            return None
        return f"the slot has no row in the records file, but its attempt is {record.status}"
    if record.status == "failed":
        return f"the slot has a row in the records file, but its attempt failed ({record.cause})"
    data = canonical.dumps(dict(row))
    if record.outcome is not None:
        held = canonical.dumps(record.outcome) == data
    else:
        held = record.outcome_sha256 == hashlib.sha256(data).hexdigest()
    return None if held else "its outcome is not the slot's row"
