"""verify reads the runs one record at a time and tallies them one partition at a time: the same
findings as before, in the same order, in memory that grows with neither the steps of a run nor
the number of partitions."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus_findings import (
    EXTRA,
    FINDINGS,
    base_files,
    case_findings,
    case_names,
    older_findings,
)
from fresh_verifier import FreshVerifier
from guarantees import record
from repro._derive.tally import Attempt, merge, tally
from repro._json import canonical
from repro.models import Partition, RunRecord
from repro.verify import BundleReader, Finding, Limits, verify
from repro.verify._content import sealing
from repro.verify._reader import lines as reading_lines
from repro.verify._reader import parsing
from synthetic import synthetic_bundle
from test_corpus import Base, _materialise, _parse

BEFORE: dict[str, list[list[str]]] = json.loads(FINDINGS.read_text("utf-8"))


@pytest.fixture(scope="module")
def base() -> Base:
    """The committed base bundle, parsed."""
    return _parse(base_files())


def _base_copy(base: Base, root: Path) -> Path:
    _materialise(base.files, root)
    return root


class TestSameFindingsAsBefore:
    """On the committed base bundle, every case of the tamper corpus, and every further case in
    tests/corpus_findings.py, gives exactly the findings, in the same order, that verify gave
    when they were recorded (tests/data/corpus-findings.json; see tests/corpus_findings.py)."""

    def test_every_case_was_recorded(self) -> None:
        """The recorded findings cover exactly the cases compared."""
        assert sorted(BEFORE) == sorted(case_names())

    def test_base_verifies(self, base: Base, tmp_path: Path) -> None:
        """The committed base bundle verifies with no finding but that the files bundles gained
        since it was made are missing."""
        findings = verify(_base_copy(base, tmp_path / "bundle"))
        assert older_findings(findings) == []
        assert {f.what for f in findings} == {"expected bundle file is missing"}

    @pytest.mark.parametrize("name", case_names())
    def test_case(self, name: str, base: Base) -> None:
        """The case's findings are the recorded ones. The case runs where they were recorded
        (corpus_findings.main: the system's temporary directory, then the case's name), not in
        pytest's tmp_path: a finding cuts a long value short, and a case that writes its own
        absolute path into the bag gives findings that depend on that path's length, which is
        longer under pytest-xdist (a directory per worker) or a long ``--basetemp``."""
        with tempfile.TemporaryDirectory() as tmp:
            found = case_findings(name, base, Path(tmp) / name)
        record("cases compared with the recorded findings", 1)
        record("cases whose findings differ from the recorded", int(found != BEFORE[name]))
        assert found == BEFORE[name]


class TestWholePlanTally:
    """The partitions' tallies are merged when every record is in its own partition's file with
    its slot's attempt ID and every partition is the sealed one; otherwise the whole plan is
    read again and tallied at once."""

    #: The further cases that put a record or a partition out of its place.
    OUT_OF_PLACE = (
        "move-record",
        "copy-record",
        "unknown-slot",
        "foreign-attempt-id",
        "slot-of-other-partition",
        "partition-resealed",
        "partitions-swapped",
        "entries-to-other-condition",
    )

    @pytest.fixture
    def whole_plan_reads(self, monkeypatch: pytest.MonkeyPatch) -> list[int]:
        """How often verify tallied the whole plan at once."""
        calls: list[int] = []
        real = sealing.whole_plan_tally

        def spy(*args: Any) -> Any:
            calls.append(1)
            return real(*args)

        monkeypatch.setattr(sealing, "whole_plan_tally", spy)
        return calls

    def test_not_for_a_sealed_bundle(
        self, base: Base, tmp_path: Path, whole_plan_reads: list[int]
    ) -> None:
        """A bundle as study wrote it is tallied one partition at a time."""
        assert older_findings(verify(_base_copy(base, tmp_path / "bundle"))) == []
        assert whole_plan_reads == []

    @pytest.mark.parametrize("name", sorted(EXTRA))
    def test_only_for_what_is_out_of_place(
        self, name: str, base: Base, tmp_path: Path, whole_plan_reads: list[int]
    ) -> None:
        """Exactly the cases that move a record or change a partition read the whole plan
        again (reordered or repeated records, or a line that does not parse, do not)."""
        case_findings(name, base, tmp_path)
        assert bool(whole_plan_reads) == (name in self.OUT_OF_PLACE)

    def test_merged_tallies_are_the_whole_tally(self, base: Base) -> None:
        """For the sealed bundle, the tallies of its partitions merge into the tally of all its
        entries and attempts together."""
        contracts = {c: "0" * 64 for c in base.ledger.contracts}
        attempts = [Attempt.of(r) for r in base.records]
        per_partition = [
            tally([p], [a for a in attempts if a.condition == p.condition], 2, contracts)
            for p in base.partitions
        ]
        assert merge(per_partition) == tally(base.partitions, attempts, 2, contracts)


#: Every run line of the committed base bundle.
BASE_LINES = [
    line
    for name, data in sorted(base_files().items())
    if name.endswith(".jsonl")
    for line in data.splitlines(keepends=True)
]


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@st.composite
def _run_lines(draw: st.DrawFn) -> bytes:
    """A run line of the base bundle, unchanged or changed: a byte flipped, a value replaced
    (and written canonically or with spaces), a key dropped or added, or raw text spliced in."""
    line = draw(st.sampled_from(BASE_LINES))
    how = draw(st.sampled_from(["same", "flip", "value", "spaced", "drop", "add", "splice"]))
    if how == "same":
        return line
    if how == "flip":
        at = draw(st.integers(0, len(line) - 1))
        return line[:at] + bytes([line[at] ^ draw(st.integers(1, 255))]) + line[at + 1 :]
    if how == "splice":
        at = draw(st.integers(0, len(line) - 1))
        text = draw(
            st.sampled_from(
                [b"1e400", b"NaN", b'"\\ud800"', b"18446744073709551615", b" ", b"\r", b"{}"]
            )
        )
        return line[:at] + text + line[at:]
    record_ = json.loads(line)
    key = draw(st.sampled_from(sorted(record_)))
    if how == "drop":
        del record_[key]
    elif how == "add":
        record_[draw(st.text(max_size=6))] = draw(_json_values)
    else:
        record_[key] = draw(_json_values)
    if how == "spaced":
        return json.dumps(record_, sort_keys=True).encode() + b"\n"
    try:
        return canonical.dumps(record_)
    except (ValueError, TypeError):  # no canonical form: NaN, or an integer past 64 bits
        return json.dumps(record_).encode() + b"\n"


class TestQuickWay:
    """A run line accepted the quick way (orjson, byte comparison, type checks) is one the strict
    way (strict JSON, schema, model, canonical form) accepts as the same record without a
    finding."""

    @pytest.mark.slow
    @settings(max_examples=400, deadline=None)
    @given(data=st.data())
    def test_quick_acceptance_is_strict_acceptance(self, data: st.DataObject) -> None:
        """Whatever the line, a record the quick way gives is the strict way's, finding-free."""
        line = data.draw(_run_lines())
        quick = parsing.canonical_record(line)
        findings: list[Finding] = []
        strict = parsing.parse_line(
            findings.append, Limits(), "data/runs/c00.jsonl", 1, line, "run-record", RunRecord
        )
        if quick is not None:
            assert (strict, findings) == (quick, [])

    def test_unchanged_lines_are_quick(self) -> None:
        """Every line a study wrote is accepted the quick way."""
        assert all(parsing.canonical_record(line) is not None for line in BASE_LINES)

    @pytest.mark.parametrize(
        ("old", "new"),
        [
            (b'"attempt":1,', b'"attempt":9223372036854775808,'),
            (b'"attempt":1,', b'"attempt":18446744073709551615,'),
            (b'"attempt":1,', b'"attempt":1.0,'),
            (b'"cause":null', b'"cause":"\\ud800"'),
            (b'"attempt":1,', b'"attempt":1,"attempt":1,'),
        ],
        ids=["past-63-bits", "past-64-bits", "float-for-int", "lone-surrogate", "duplicate-key"],
    )
    def test_what_orjson_reads_otherwise(self, old: bytes, new: bytes) -> None:
        """Lines orjson reads differently from the strict reader go the strict way."""
        line = BASE_LINES[0].replace(old, new, 1)
        assert line != BASE_LINES[0]
        assert parsing.canonical_record(line) is None

    def test_depth_limit_below_a_record(self, base: Base, tmp_path: Path) -> None:
        """Under a JSON nesting limit of 1, every run line goes the strict way, which refuses
        it, naming the limit."""
        root = _base_copy(base, tmp_path / "bundle")
        findings: list[Finding] = []
        name = "data/runs/c00.jsonl"
        reader = BundleReader({name: root / name}, findings, Limits(max_json_depth=1))
        records = reader.run_records(name)
        assert records is not None
        assert list(records) == [None, None]
        assert [(f.what, f.found.split(": ", 1)[1]) for f in findings] == [
            (f"strict JSON parse, line {n}", "nesting deeper than 1 levels @ $.step_rewards")
            for n in (1, 2)
        ]


_HEX = "0123456789abcdef"
#: The integers a canonical run line holds that the quick way reads (it leaves larger ones, which
#: orjson reads otherwise, to the strict way).
_MAX_QUICK_INT = 2**53 - 1
#: Any JSON value without an integer the quick way leaves to the strict way.
_quick_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-_MAX_QUICK_INT, _MAX_QUICK_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@st.composite
def _records(draw: st.DrawFn, max_int: int = canonical.MAX_INT) -> dict[str, Any]:
    """A run record as plain data, with values of every kind its model accepts (integers up to
    ``max_int`` in magnitude)."""
    ints = st.integers(-max_int, max_int)
    floats = st.floats(allow_nan=False, allow_infinity=False)
    texts = st.text(max_size=12)
    digests = st.none() | st.text(_HEX, min_size=64, max_size=64)
    return {
        "attempt_id": draw(texts),
        "slot": draw(texts),
        "condition": draw(texts),
        "attempt": draw(ints),
        "predecessor": draw(st.none() | texts),
        "status": draw(st.sampled_from(["valid", "invalid", "failed", "excluded"])),
        "cause": draw(st.none() | texts),
        "measure": draw(st.none() | floats),
        "steps": draw(st.none() | ints),
        "step_rewards": draw(st.none() | st.lists(floats, max_size=8)),
        "trace_sha256": draw(digests),
        "contract_sha256": draw(digests),
    }


@st.composite
def _mutated(
    draw: st.DrawFn, values: st.SearchStrategy[Any], max_int: int = canonical.MAX_INT
) -> dict[str, Any]:
    """A generated run record changed to hold what its model may refuse: any of ``values``
    under a key or added as a step reward, a key too many, too few or renamed, a boolean or a
    float for
    an integer, an integer for a float, an unknown status or a malformed digest."""
    record_ = draw(_records(max_int))
    keys = sorted(record_)
    how = draw(
        st.sampled_from(
            [
                "value",
                "extra-key",
                "missing-key",
                "renamed-key",
                "bool-for-int",
                "float-for-int",
                "int-for-float",
                "reward",
                "status",
                "digest",
            ]
        )
    )
    if how == "value":
        record_[draw(st.sampled_from(keys))] = draw(values)
    elif how == "extra-key":
        record_[draw(st.text(max_size=12))] = draw(values)
    elif how == "missing-key":
        del record_[draw(st.sampled_from(keys))]
    elif how == "renamed-key":
        record_[draw(st.text(max_size=12))] = record_.pop(draw(st.sampled_from(keys)))
    elif how == "bool-for-int":
        record_[draw(st.sampled_from(["attempt", "steps"]))] = draw(st.booleans())
    elif how == "float-for-int":
        record_[draw(st.sampled_from(["attempt", "steps"]))] = draw(
            st.floats(allow_nan=False, allow_infinity=False)
        )
    elif how == "int-for-float":
        value = draw(st.integers(-max_int, max_int))
        rewards = record_["step_rewards"]
        if rewards and draw(st.booleans()):
            rewards[draw(st.integers(0, len(rewards) - 1))] = value
        else:
            record_["measure"] = value
    elif how == "reward":
        rewards = list(record_["step_rewards"] or [])
        rewards.insert(draw(st.integers(0, len(rewards))), draw(values))
        record_["step_rewards"] = rewards
    elif how == "status":
        record_["status"] = draw(st.text(max_size=10) | values)
    else:
        digest = draw(st.text(max_size=70) | st.text(_HEX.upper(), min_size=64, max_size=64))
        record_[draw(st.sampled_from(["trace_sha256", "contract_sha256"]))] = digest
    return record_


@st.composite
def _written(draw: st.DrawFn, record_: dict[str, Any]) -> bytes:
    """``record_`` written as a line: canonically, with its keys in any order, with spaces, or
    with non-ASCII escaped."""
    style = draw(st.sampled_from(["canonical", "unsorted", "spaced", "ascii"]))
    if style == "unsorted":
        record_ = {k: record_[k] for k in draw(st.permutations(sorted(record_)))}
    try:
        if style == "canonical":
            return canonical.dumps(record_)
        return (
            json.dumps(
                record_,
                sort_keys=style != "unsorted",
                separators=(", ", ": ") if style == "spaced" else (",", ":"),
                ensure_ascii=style == "ascii",
            ).encode()
            + b"\n"
        )
    except TypeError:  # no canonical form: an integer past 64 bits
        return json.dumps(record_).encode() + b"\n"


def _strict(line: bytes) -> tuple[Any, list[Finding]]:
    findings: list[Finding] = []
    return parsing.parse_line(
        findings.append, Limits(), "data/runs/c00.jsonl", 1, line, "run-record", RunRecord
    ), findings


class TestQuickWayGenerated:
    """The quick way checks a parsed run line without the converter. On generated records, and
    on records changed to hold what the model refuses (a value of the wrong type, a key too many
    or too few, a boolean for an integer, an integer for a float, an unknown status, a malformed
    digest), it gives the strict way's record or none: never one the strict way refuses or
    names. On canonical lines it gives exactly the records the strict way accepts unnamed."""

    @pytest.mark.slow
    @settings(max_examples=500, deadline=None)
    @given(data=st.data())
    def test_quick_acceptance_is_strict_acceptance(self, data: st.DataObject) -> None:
        """Whatever the record and however it is written, a record the quick way gives is the
        strict way's, finding-free."""
        record_ = data.draw(st.one_of(_records(), _mutated(_json_values)))
        line = data.draw(_written(record_))
        quick = parsing.canonical_record(line)
        if quick is not None:
            assert _strict(line) == (quick, [])

    @pytest.mark.slow
    @settings(max_examples=800, deadline=None)
    @given(record_=_mutated(_quick_json_values, _MAX_QUICK_INT))
    def test_canonical_changed_records(self, record_: dict[str, Any]) -> None:
        """A changed record written canonically (integers within 53 bits) is read the quick way
        exactly when the strict way accepts it without a finding, as the same record."""
        line = canonical.dumps(record_)
        strict, findings = _strict(line)
        assert parsing.canonical_record(line) == (None if findings else strict)

    def test_every_kind_of_value_under_every_key(self) -> None:
        """Each key of a record that verifies, holding each kind of JSON value in turn and
        written canonically, is read the quick way exactly when the strict way accepts it
        without a finding, as the same record."""
        base = json.loads(BASE_LINES[0])
        kinds = [None, True, False, 0, 7, -1, 0.0, 2.5, "", "valid", "c00", "f" * 64, [], [1.5]]
        kinds += [[1], [True], [None], ["x"], [[1.5]], {}, {"a": 1.5}]
        for key in sorted(base):
            for value in kinds:
                line = canonical.dumps({**base, key: value})
                strict, findings = _strict(line)
                quick = parsing.canonical_record(line)
                assert quick == (None if findings else strict), (key, value)

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(record_=_records(_MAX_QUICK_INT))
    def test_canonical_lines_are_quick(self, record_: dict[str, Any]) -> None:
        """Every record the model accepts, written canonically with integers within 53 bits, is
        read the quick way, as the strict way reads it."""
        line = canonical.dumps(record_)
        strict, findings = _strict(line)
        assert findings == []
        assert parsing.canonical_record(line) == strict


_FRAGMENTS = st.sampled_from(
    [
        b"\n",
        b"\r",
        b"\r\n",
        b" ",
        b"/home/alice/x",
        b"/tmp/",
        b"Traceback (most recent call last)",
        b'File "/x.py", line 3',
        b"ghp_" + b"a1B2" * 9,
        b"password=hunter22",
        b'"token":"abc123def"',
        b"C:\\\\Users\\\\x",
        b"file:///etc/x",
        b"AKIAABCDEFGHIJKLMNOP",
        b"plain words",
        b"0123456789",
    ]
)


def _partition_model(
    data: bytes, quick: bool, limits: Limits | None = None
) -> tuple[Any, str | None, list[Finding]]:
    """What the reader makes of ``data`` as a partition file: the model, the sha256 of its
    canonical bytes and the findings, read the quick way where it can be, or only strictly."""
    findings: list[Finding] = []
    reader = BundleReader({}, findings, limits or Limits())
    reader.raw = lambda name: data  # type: ignore[method-assign]
    kept = dict(parsing.QUICK_MODELS)
    if not quick:
        parsing.QUICK_MODELS.clear()
    try:
        value, digest = reader.model("data/plans/c00.json", "partition", Partition)
    finally:
        parsing.QUICK_MODELS.update(kept)
    return value, digest, findings


@st.composite
def _partition_files(draw: st.DrawFn) -> bytes:
    """A partition file as a study writes it, or changed: a value replaced (by any JSON value,
    a boolean, a float or a large integer for an integer), a key dropped, added or doubled, the
    schema changed, the entries not an array, written with spaces, unsorted or with non-ASCII
    escaped, or raw text spliced in."""
    ints = st.integers(-(2**65), 2**65)
    texts = st.text(max_size=6)
    entries = [
        {
            "slot": draw(texts),
            "condition": draw(texts),
            "replicate": draw(st.integers(0, 10**6)),
            "order": draw(st.integers(0, 10**6)),
            "seed": draw(st.none() | st.integers(0, 2**63 - 1)),
            "excluded": draw(st.none() | texts),
        }
        for _ in range(draw(st.integers(0, 4)))
    ]
    part: dict[str, Any] = {
        "schema": "repro.partition/1",
        "id": draw(texts),
        "condition": draw(texts),
        "entries": entries,
    }
    how = draw(
        st.sampled_from(["same", "value", "typed", "drop", "add", "schema", "array", "splice"])
    )
    target = draw(st.sampled_from(entries)) if entries and draw(st.booleans()) else part
    key = draw(st.sampled_from(sorted(target)))
    if how == "value":
        target[key] = draw(_json_values)
    elif how == "typed":
        target[key] = draw(st.booleans() | st.floats(allow_nan=False) | ints)
    elif how == "drop":
        del target[key]
    elif how == "add":
        target[draw(texts)] = draw(_json_values)
    elif how == "schema":
        part["schema"] = draw(st.sampled_from(["repro.partition/2", "", 1]))
    elif how == "array":
        part["entries"] = draw(_json_values)
    style = draw(st.sampled_from(["canonical", "spaced", "unsorted", "ascii"]))
    try:
        if style == "canonical":
            data = canonical.dumps(part)
        else:
            if style == "unsorted":
                part = {k: part[k] for k in draw(st.permutations(sorted(part)))}
            data = (
                json.dumps(
                    part,
                    sort_keys=style != "unsorted",
                    separators=(", ", ": ") if style == "spaced" else (",", ":"),
                    ensure_ascii=style == "ascii",
                ).encode()
                + b"\n"
            )
    except (TypeError, ValueError):  # no canonical form: an integer past 64 bits
        data = json.dumps(part).encode() + b"\n"
    if how == "splice":
        at = draw(st.integers(0, len(data)))
        text = draw(
            st.sampled_from(
                [b"1e400", b"NaN", b'"\\ud800"', b"18446744073709551615", b" ", b"\xff", b"{}"]
            )
        )
        data = data[:at] + text + data[at:]
    if how == "same" and entries and draw(st.booleans()):  # a key twice, as the file holds it
        data = data.replace(b'"order":', b'"order":0,"order":', 1)
    return data


class TestQuickPartitions:
    """A partition file is read the quick way (the standard parser, the canonical bytes
    compared, the types checked) only where the strict way (the strict parser, the schema, the
    model, the canonical form) gives the same partition, digest and findings: none."""

    @pytest.mark.slow
    @settings(max_examples=500, deadline=None)
    @given(data=_partition_files())
    def test_quick_is_strict(self, data: bytes) -> None:
        """Whatever the bytes, the reader's answer is the strict way's."""
        quick = parsing.canonical_partition(data)
        strict = _partition_model(data, quick=False)
        assert _partition_model(data, quick=True) == strict
        if quick is not None:
            assert strict == (quick, canonical.sha256_hex(data), [])

    def test_every_kind_of_value_under_every_key(self) -> None:
        """Each key of a partition and of its entries, holding each kind of JSON value in turn
        and written canonically, is read the quick way exactly when the strict way accepts it
        without a finding, as the same partition; so is one a study writes."""
        entry = {
            "condition": "c00",
            "excluded": None,
            "order": 3,
            "replicate": 3,
            "seed": 7,
            "slot": "c00-r0003",
        }
        part = {"condition": "c00", "entries": [entry], "id": "c00", "schema": "repro.partition/1"}
        # (Integers past 53 bits, which orjson writes otherwise, go the strict way.)
        kinds = [None, True, False, 0, 7, -1, 2**53 - 1, 0.0, 2.5, "", "c00", [], [1], {}]
        for where in ("partition", "entry"):
            for key in sorted(part if where == "partition" else entry):
                for value in kinds:
                    changed = (
                        {**part, key: value}
                        if where == "partition"
                        else {
                            **part,
                            "entries": [{**entry, key: value}],
                        }
                    )
                    try:
                        data = canonical.dumps(changed)
                    except (TypeError, ValueError):
                        continue
                    value_, _, findings = _partition_model(data, quick=False)
                    expected = None if findings else value_
                    assert parsing.canonical_partition(data) == expected, (where, key, value)

    def test_limits_leave_it_to_the_strict_way(self) -> None:
        """Under a nesting limit below a partition's, or a byte limit below its size, the
        strict way refuses the file and names why; the quick way does not read it."""
        entry = {"condition": "c", "excluded": None, "order": 0, "replicate": 0, "seed": None}
        entries = [{**entry, "slot": "c-r0000"}]
        part = {"condition": "c", "entries": entries, "id": "c", "schema": "repro.partition/1"}
        data = canonical.dumps(part)
        for limits in (Limits(max_json_depth=2), Limits(max_file_bytes=len(data) - 1)):
            got = _partition_model(data, quick=True, limits=limits)
            assert got == _partition_model(data, quick=False, limits=limits)
            assert got[0] is None and [f.code for f in got[2]] == ["json-parse"]


class TestChunkedReading:
    """Reading a file in blocks cut after newlines gives the file's lines, wherever the blocks
    end, and a line past the limit as its length, without holding it."""

    @pytest.mark.slow
    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(_FRAGMENTS, max_size=40),
        st.lists(st.integers(1, 40), min_size=1),
        st.integers(1, 60),
    )
    def test_lines(self, fragments: list[bytes], sizes: list[int], limit: int) -> None:
        """With a limit no line reaches, chunks join to the data, are cut only after newlines
        and hold the lines ``bytes.splitlines`` finds; with any limit, every line longer than
        it (by its newline-cut length) comes as that length, and every other as it is."""
        data = b"".join(fragments)
        blocks, at = [], 0
        while at < len(data):
            size = sizes[len(blocks) % len(sizes)]
            blocks.append(data[at : at + size])
            at += size
        chunks = list(reading_lines.bounded_chunks(blocks, 1 << 30))
        assert all(isinstance(chunk, bytes) for chunk in chunks)
        joined = [chunk for chunk in chunks if isinstance(chunk, bytes)]
        assert b"".join(joined) == data
        assert all(chunk.endswith(b"\n") for chunk in joined[:-1])
        lines = [line for chunk in joined for line in chunk.splitlines(keepends=True)]
        assert lines == data.splitlines(keepends=True)

        # Cut at newlines only, each line comes whole, or (past the limit) as its length.
        def newline_lines(chunk: bytes) -> list[bytes]:
            return [line for line in re.split(b"(?<=\n)", chunk) if line]

        seen: list[bytes | int] = []
        for chunk in reading_lines.bounded_chunks(blocks, limit):
            seen += [chunk] if isinstance(chunk, int) else newline_lines(chunk)
        expected = newline_lines(data)
        assert len(seen) == len(expected)
        for got, line in zip(seen, expected, strict=True):
            assert got == line or (got == len(line) and len(line) > limit)


class TestReadAgain:
    """A file that is read again where it is parsed, and has changed since its first read, is
    named: the digests checked are those of the bytes parsed."""

    @pytest.mark.parametrize("name", ["data/runs/c02.jsonl", "data/plans/c01.json"])
    def test_changed_between_reads(
        self, name: str, base: Base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The file changed (same size) after its first read: named as changed."""
        root = _base_copy(base, tmp_path / "bundle")
        real = BundleReader.read_first

        def first_then_change(self: BundleReader, file: str) -> Any:
            seen = real(self, file)
            if file == name:
                data = (root / name).read_bytes()
                (root / name).write_bytes(data.replace(b'"c0', b'"d0', 1))
            return seen

        monkeypatch.setattr(BundleReader, "read_first", first_then_change)
        changed = [f for f in verify(root) if f.what == "changed while verify read it"]
        # Named at each later read: the changed bytes may lead verify to read the file again.
        assert changed
        first_read = f"sha256 {canonical.sha256_hex(base.files[name])}"
        assert all(f.file == name and f.expected.startswith(first_read) for f in changed)

    def test_swapped_for_a_directory_between_reads(
        self, base: Base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A runs file replaced by a directory after its first read is named, not read."""
        root = _base_copy(base, tmp_path / "bundle")
        name = "data/runs/c03.jsonl"
        real = BundleReader.read_first

        def first_then_swap(self: BundleReader, file: str) -> Any:
            seen = real(self, file)
            if file == name:
                (root / name).unlink()
                (root / name).mkdir()
            return seen

        monkeypatch.setattr(BundleReader, "read_first", first_then_swap)
        findings = verify(root)
        assert (
            Finding(
                "not-regular-file",
                name,
                "not a regular file when read again",
                "a regular file",
                "a directory",
            )
            in findings
        )


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Synthetic bundles of 500 runs per condition: 4 conditions of 20 and of 400 steps, and 32
    conditions of 20 steps."""
    tmp = tmp_path_factory.mktemp("memory")
    shapes = (("short", 4, 20), ("long", 4, 400), ("many", 32, 20))
    return {
        name: synthetic_bundle(tmp / name, conditions, 500, steps)
        for name, conditions, steps in shapes
    }


class TestMemory:
    """What verify holds grows with one partition's slots and a float per valid run, not with
    the steps of a run or the number of partitions. Measured in a fresh process with all its
    jobs in it (tests/fresh_verifier.py): what this process's other threads allocate would be
    traced too, and jobs in worker processes would not be. (benchmarks/verify_memory.py measures
    the resident memory of a verify with its workers.)"""

    def _verified_peak(self, fresh: FreshVerifier, root: Path) -> int:
        answer = fresh.ask(peak=str(root))
        assert answer["findings"] == []
        peak: int = answer["peak"]
        return peak

    @pytest.mark.slow
    def test_steps_per_run(self, bundles: dict[str, Path], fresh_verifier: FreshVerifier) -> None:
        """Twenty times the steps per run (4.6 MB of runs instead of 0.9 MB) adds less than
        256 KiB to the peak."""
        short = self._verified_peak(fresh_verifier, bundles["short"])
        long = self._verified_peak(fresh_verifier, bundles["long"])
        record("peak MB verifying 2,000 runs of 400 steps", round(long / 1e6, 2))
        assert long < short + (256 << 10), (short, long)

    @pytest.mark.slow
    def test_partitions(self, bundles: dict[str, Path], fresh_verifier: FreshVerifier) -> None:
        """Eight times the partitions (16,000 runs instead of 2,000) adds less than 128 bytes
        per added run to the peak (a valid run's measure takes 32), while the runs files take
        some 450 bytes per run, and the peak stays under 40% of the runs files' bytes.
        (Measured in a fresh process, warm, after a full collection: 1.93 MB for 2,000 runs,
        2.72 MB for 16,000, 56 bytes per added run, 38% of the 7.2 MB of runs files. The bound
        was a third while free lists served allocations untraced, which made the peak lower
        and variable: 99 to 102 bytes per run, and the same verify's peak moving by 350 KiB
        run to run.)"""
        few = self._verified_peak(fresh_verifier, bundles["short"])
        many = self._verified_peak(fresh_verifier, bundles["many"])
        runs_bytes = sum(p.stat().st_size for p in (bundles["many"] / "data/runs").iterdir())
        record("peak MB verifying 16,000 runs of 20 steps", round(many / 1e6, 2))
        assert many < few + 128 * 14_000
        assert many < runs_bytes * 0.4
