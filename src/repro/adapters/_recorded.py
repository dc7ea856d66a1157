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
  is the row ``{FACTOR: task, "participant": ..., "replicate": run, KEY: score}``).

A row that names no slot of the plan, two rows for one slot, or a row without a column the
rule needs is refused when the study is frozen, at its place in the file (nothing is written).
A slot with no row is lost: its attempt fails with cause ``not-recorded``, and nothing stands in
for it. The tiers say what this is (:func:`repro._derive.tiers.execution_control`): execution
control is weakened with :func:`recorded_note` (the runs were not executed under this seal),
as are state observation (nothing was observed) and outcome evaluation (the measures are as
recorded).
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from repro._derive.facts import recorded_note
from repro._json import canonical
from repro._json.canonical import json_path
from repro._plan.sealing import conditions_of
from repro._protocol.pins import RECORDS_ROLE
from repro.adapters._base import Evidence, Frozen, file_source, protocol_path
from repro.errors import BadInput, RunFailed
from repro.models import AdapterFacts, Condition, PlanEntry, Protocol, Source

__all__ = ["FORMATS", "MAX_RECORDS_BYTES", "RecordedAdapter"]

#: The formats a records file may have.
FORMATS = ("json", "csv", "rliable")
#: The largest records file read, in bytes.
MAX_RECORDS_BYTES = 64 << 20
#: The options the adapter takes, and those ``--option`` may give.
_OPTIONS = frozenset({"records", "records_sha256", "recorded_by", "format"})
_COMMAND_LINE = frozenset({"records"})
#: The columns every row has beside one per factor and the measure's.
_PARTICIPANT, _REPLICATE = "participant", "replicate"
#: The recorded adapter's version: the version of its mapping rule.
VERSION = "1"


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
    for key in ("records", "recorded_by"):
        value = merged.get(key)
        if not (isinstance(value, str) and value.strip()):
            raise BadInput.at(
                json_path(where, key),
                f"the recorded adapter needs {key} (a non-empty string)",
                "missing-field" if value is None else "wrong-type",
            )
    sha = merged.get("records_sha256")
    if sha is not None and not (
        isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)
    ):
        raise BadInput.at(
            json_path(where, "records_sha256"), "expected 64 lower-case hex digits", "not-allowed"
        )
    if merged["format"] not in FORMATS:
        raise BadInput.at(
            json_path(where, "format"), f"expected one of {', '.join(FORMATS)}", "not-allowed"
        )
    return merged


def _read(merged: Mapping[str, Any], options: Mapping[str, str]) -> tuple[str, bytes]:
    """The records file's name in the bundle and its bytes, at the pinned sha256."""
    where = json_path("$.adapter.options", "records")
    given = "records" in options
    path = Path(merged["records"]) if given else protocol_path(merged["records"], where)
    name = "records" if given else path.name
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_RECORDS_BYTES + 1)
    except OSError as exc:
        raise BadInput.at(
            where, f"cannot read {merged['records']!r} ({exc.strerror})", "not-found"
        ) from None
    if len(data) > MAX_RECORDS_BYTES:
        raise BadInput.at(where, f"larger than {MAX_RECORDS_BYTES} bytes", "over-limit")
    found = hashlib.sha256(data).hexdigest()
    pin = json_path("$.adapter.options", "records_sha256")
    if merged.get("records_sha256") is None:
        raise BadInput.at(
            pin,
            f"the recorded adapter needs the records file's sha256, which pins the runs: "
            f"this file's is {found}",
            "missing-field",
        )
    if found != merged["records_sha256"]:
        raise BadInput.at(
            pin,
            f"the records file's sha256 is {found}, not the one the protocol pins",
            "inconsistent",
        )
    return name, data


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
                {factor: task, _PARTICIPANT: participant, _REPLICATE: run, key: score}
                for task, score in zip(tasks, values, strict=True)
            ]
    return rows


def _rows(data: bytes, fmt: str, protocol: Protocol, name: str) -> list[dict[str, Any]]:
    """The file's rows as objects (a CSV row's measure column read as a number)."""
    key = str(protocol.measure.key)
    if fmt == "rliable":
        value = canonical.loads(data, what=name, max_bytes=MAX_RECORDS_BYTES)
        return _rliable_rows(value, protocol, name)
    if fmt == "json":
        value = canonical.loads(data, what=name, max_bytes=MAX_RECORDS_BYTES)
        if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
            raise BadInput.at("$", "expected a JSON array of objects", "wrong-type", name)
        return value
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


def _cell(level: Any, csv_text: bool) -> Any:
    """What a row holds for ``level``: the level itself, or in CSV its text."""
    if not csv_text or isinstance(level, str):
        return level
    return canonical.dumps(level, newline=False).decode()


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
        for column in (*names, _PARTICIPANT, _REPLICATE, str(protocol.measure.key)):
            if column not in row:
                raise BadInput.at(f"$[{i}]", f"no column {column!r}", "missing-field", name)
        condition = index.get((*(_key(row[n]) for n in names), _key(row[_PARTICIPANT])))
        replicate = _replicate(row[_REPLICATE], csv_text)
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


def _key(value: Any) -> bytes:
    """A cell as a dictionary key: its canonical JSON (1 and 1.0 and true stay apart)."""
    return canonical.dumps(value, newline=False)


def _replicate(value: Any, csv_text: bool) -> int | None:
    if csv_text and isinstance(value, str) and value.isdigit():
        return int(value)
    return value if type(value) is int and value >= 0 else None


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
        self._sha256 = ""

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
        name, data = _read(merged, options)
        rows = _rows(data, merged["format"], protocol, name)
        self._rows = map_rows(protocol, rows, merged["format"] == "csv", name)
        self._sha256 = merged["records_sha256"]
        source: Source = file_source(RECORDS_ROLE, name, data)
        facts = AdapterFacts(
            name=self.name,
            version=VERSION,
            observation_scope="none",
            observation_note="nothing was observed: each run is a row of a file recorded elsewhere",
            measure_inputs="reported",
            recorded_from=recorded_note(name, self._sha256, merged["recorded_by"]),
        )
        return Frozen(facts=facts, sources=(source,))

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _RecordedSession:
        """The condition's rows."""
        return _RecordedSession(self._rows.get(condition.id, {}), self._sha256)


class _RecordedSession:
    def __init__(self, rows: dict[int, dict[str, Any]], sha256: str) -> None:
        self._rows = rows
        self.contract: dict[str, Any] = {"records_sha256": sha256}

    def run(self, entry: PlanEntry) -> Evidence:
        row = self._rows.get(entry.replicate)
        if row is None:
            raise RunFailed("not-recorded")
        return Evidence(
            step_rewards=None, reported_measure=None, steps=None, trace_sha256=None, outcome=row
        )

    def close(self) -> None:
        """Nothing stays open."""
