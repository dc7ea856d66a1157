"""Runs made elsewhere: the recorded adapter reads each slot's run from a score table the
protocol pins by sha256, executes nothing, loses a slot with no row (never imputes it), refuses
a row it cannot map, and the tiers say the runs were recorded, not executed; verify holds the
ledger to what the protocol says of the records."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from conftest import ROOT, run_study
from forge import edit_protocol, forge, rederive, reseal
from repro._json import canonical
from repro.errors import BadInput
from repro.verify import open_verified, verify

ALGORITHMS = ("dqn", "rainbow")
GAMES = ("pong", "breakout")
RUNS = 3


def _rows() -> list[dict[str, Any]]:
    """A made-up score table (not anyone's published results): per algorithm, game and run."""
    return [
        {"game": g, "participant": a, "replicate": r, "score": 10.0 * i + j + r / 4}
        for i, a in enumerate(ALGORITHMS)
        for j, g in enumerate(GAMES)
        for r in range(RUNS)
    ]


def _protocol(data: bytes, fmt: str = "json", carried: bool | None = None) -> dict[str, Any]:
    """A protocol of the table ``data`` (``carried``: the ``in_bundle`` option, unset when
    None)."""
    protocol: dict[str, Any] = {
        "schema": "repro.protocol/1",
        "id": "recorded-table",
        "title": "Scores recorded elsewhere",
        "adapter": {
            "name": "recorded",
            "options": {
                "records": f"scores.{fmt}",
                "records_sha256": hashlib.sha256(data).hexdigest(),
                "recorded_by": "a made-up table for tests",
                "format": fmt,
            },
        },
        "matrix": [{"name": "game", "levels": list(GAMES)}],
        "participants": [{"id": a, "kind": "recorded", "params": {}} for a in ALGORITHMS],
        "runs_per_condition": RUNS,
        "seeding": {"mode": "per-run", "seed": 1},
        "measure": {"name": "outcome_value", "description": "the recorded score", "key": "score"},
        "estimand": "sum-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
    }
    if carried is not None:
        protocol["adapter"]["options"]["in_bundle"] = carried
    return protocol


def _setup(
    tmp_path: Path, rows: list[dict[str, Any]], fmt: str = "json", carried: bool | None = None
) -> Path:
    """The table written as ``scores.<fmt>`` beside a protocol pinning it; the protocol's path."""
    if fmt == "json":
        data = json.dumps(rows).encode()
    else:
        header = list(rows[0])
        lines = [",".join(header)] + [",".join(str(r[k]) for k in header) for r in rows]
        data = ("\n".join(lines) + "\n").encode()
    (tmp_path / f"scores.{fmt}").write_bytes(data)
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(_protocol(data, fmt, carried)))
    return path


@pytest.fixture(scope="module")
def recorded_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study of the whole made-up table, once."""
    base = tmp_path_factory.mktemp("recorded")
    return run_study(_setup(base, _rows()), base / "bundle")


class TestATable:
    """Every row becomes its slot's run, and the bundle says what it is."""

    def test_each_row_is_its_slot_s_run(self, recorded_bundle: Path) -> None:
        """The study verifies; each condition's mean is its rows' mean; every slot is valid."""
        assert verify(recorded_bundle) == []
        b = open_verified(recorded_bundle)
        rows = _rows()
        for aggregate in b.aggregates.conditions:
            scores = [
                r["score"]
                for r in rows
                if r["participant"] == aggregate.participant
                and r["game"] == aggregate.factors["game"]
            ]
            assert aggregate.valid == RUNS
            assert aggregate.mean == pytest.approx(sum(scores) / len(scores), abs=1e-12)

    def test_the_tiers_say_the_runs_were_recorded(self, recorded_bundle: Path) -> None:
        """execution-control is weakened, naming who recorded the runs and the file by its
        sha256; state observation and outcome evaluation are weakened too."""
        b = open_verified(recorded_bundle)
        tiers = {t.name: t for t in b.tiers.tiers}
        sha = hashlib.sha256((recorded_bundle.parent / "scores.json").read_bytes()).hexdigest()
        reason = tiers["execution-control"].reason
        assert tiers["execution-control"].verdict == "weakened"
        assert reason is not None and reason.startswith("runs were not executed under this seal")
        assert "a made-up table for tests" in reason and sha in reason
        assert tiers["state-observation"].verdict == "weakened"
        assert tiers["outcome-evaluation"].verdict == "weakened"
        (records,) = b.ledger.sources
        assert (records.role, records.name, records.sha256) == ("records", "scores.json", sha)

    def test_the_report_says_the_runs_were_recorded(self, recorded_bundle: Path) -> None:
        """The report says, before its claim, that the runs were read, not executed, by whom
        and from which file, and that its figures recompute them; and it does not claim that
        they were made as their recorder says."""
        b = open_verified(recorded_bundle)
        report = (recorded_bundle / "data/validation-report.md").read_text()
        note = b.ledger.adapter.recorded_from
        assert note is not None
        head = report.split("## Claim", 1)[0]
        assert note[:1].upper() + note[1:] in head
        assert "recomputation of the recorded runs" in head
        not_claimed = report.split("## Not claimed", 1)[1]
        assert "not executed under this seal" in not_claimed.split("##", 1)[0]

    def test_show_and_the_page_say_the_runs_were_recorded(
        self, recorded_bundle: Path, tmp_path: Path
    ) -> None:
        """repro show says it under the bundle's identity, at 80 columns, and the HTML page
        below its heading, as the report does (one sentence, recorded_reading's)."""
        import html

        from typer.testing import CliRunner

        from repro._cli import app
        from repro._derive.facts import recorded_reading

        note = open_verified(recorded_bundle).ledger.adapter.recorded_from
        assert note is not None
        said = recorded_reading(note)
        page = tmp_path / "page.html"
        shown = CliRunner().invoke(
            app,
            ["show", str(recorded_bundle), "--html", str(page)],
            env={"COLUMNS": "80"},
        )
        assert shown.exit_code == 0, shown.output
        assert said.split()[:6] == shown.stdout.split("\n", 3)[2].split()[:6]
        assert " ".join(said.split()) in " ".join(shown.stdout.split())
        text = page.read_text("utf-8")
        assert f"<p id=recorded>{html.escape(said, quote=False)}</p>" in text
        assert text.index("id=recorded") < text.index("<h2>Claim</h2>")

    def test_a_csv_table_gives_the_same_runs(self, recorded_bundle: Path, tmp_path: Path) -> None:
        """The same table as CSV: the same aggregates."""
        root = run_study(_setup(tmp_path, _rows(), "csv"), tmp_path / "bundle")
        assert verify(root) == []
        mine = open_verified(root).aggregates
        theirs = open_verified(recorded_bundle).aggregates
        assert [c.mean for c in mine.conditions] == [c.mean for c in theirs.conditions]
        assert mine.estimand == theirs.estimand


class TestLostAndRefused:
    """A missing row is a lost slot; a row that cannot be mapped refuses the study."""

    def test_a_missing_row_is_a_lost_slot(self, tmp_path: Path) -> None:
        """One row fewer: its slot fails with cause not-recorded, nothing is imputed, and the
        bundle verifies."""
        rows = [
            r
            for r in _rows()
            if (r["participant"], r["game"], r["replicate"]) != ("dqn", "pong", 2)
        ]
        root = run_study(_setup(tmp_path, rows), tmp_path / "bundle")
        assert verify(root) == []
        b = open_verified(root)
        assert [(x.outcome, x.cause) for x in b.ledger.losses] == [("failed", "not-recorded")]
        counts = {(c.participant, c.factors["game"]): c.valid for c in b.aggregates.conditions}
        assert counts[("dqn", "pong")] == RUNS - 1

    @pytest.mark.parametrize(
        ("change", "code"),
        [
            (lambda rows: [*rows, dict(rows[0])], "duplicate"),
            (lambda rows: [*rows, dict(rows[0], replicate=RUNS)], "unknown-name"),
            (lambda rows: [*rows, dict(rows[0], game="tetris")], "unknown-name"),
            (lambda rows: [{k: v for k, v in r.items() if k != "score"} for r in rows], None),
        ],
        ids=["duplicate", "replicate-out-of-range", "unknown-level", "no-measure-column"],
    )
    def test_an_unmappable_table_is_refused(
        self,
        tmp_path: Path,
        change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
        code: str | None,
    ) -> None:
        """A row that repeats a slot, names none, or lacks a column: BadInput at its place in
        the file, before anything is written."""
        path = _setup(tmp_path, change(_rows()))
        with pytest.raises(BadInput) as refused:
            run_study(path, tmp_path / "bundle")
        (problem,) = refused.value.problems
        assert problem.code == (code or "missing-field")
        assert problem.path.startswith("$[")
        assert not (tmp_path / "bundle").exists()

    def test_another_file_is_refused(self, tmp_path: Path) -> None:
        """A records file whose sha256 is not the pinned one: refused at
        $.adapter.options.records_sha256, nothing written."""
        path = _setup(tmp_path, _rows())
        (tmp_path / "scores.json").write_text(json.dumps(_rows()[:-1]))
        with pytest.raises(BadInput) as refused:
            run_study(path, tmp_path / "bundle")
        assert [p.path for p in refused.value.problems] == ["$.adapter.options.records_sha256"]
        assert not (tmp_path / "bundle").exists()


class TestCarried:
    """The bundle carries the table unless the protocol says not to."""

    def test_the_bundle_carries_the_table_by_default(self, recorded_bundle: Path) -> None:
        """With no in_bundle option, the table's bytes are data/plans/records.json, listed in
        the manifest and the crate, and the bundle verifies."""
        carried = recorded_bundle / "data/plans/records.json"
        assert carried.read_bytes() == (recorded_bundle.parent / "scores.json").read_bytes()
        assert "data/plans/records.json" in (recorded_bundle / "manifest-sha256.txt").read_text()
        crate = json.loads((recorded_bundle / "data/ro-crate-metadata.json").read_bytes())
        assert any(e.get("@id") == "plans/records.json" for e in crate["@graph"])

    @pytest.mark.parametrize("fmt", ["csv", "json"])
    def test_in_bundle_false_carries_nothing(self, tmp_path: Path, fmt: str) -> None:
        """in_bundle false: no records file in the bundle, which verifies on the pin alone; a
        CSV table is carried as records.csv."""
        root = run_study(_setup(tmp_path, _rows(), fmt, carried=False), tmp_path / "bundle")
        assert verify(root) == []
        assert not list((root / "data/plans").glob("records.*"))
        (tmp_path / "again").mkdir()
        again = run_study(_setup(tmp_path / "again", _rows(), fmt), tmp_path / "carried")
        assert verify(again) == []
        assert (again / f"data/plans/records.{fmt}").is_file()

    def test_a_non_boolean_in_bundle_is_refused(self, tmp_path: Path) -> None:
        """in_bundle "yes": refused at its path, nothing written."""
        path = _setup(tmp_path, _rows())
        protocol = json.loads(path.read_text())
        protocol["adapter"]["options"]["in_bundle"] = "yes"
        path.write_text(json.dumps(protocol))
        with pytest.raises(BadInput) as refused:
            run_study(path, tmp_path / "bundle")
        assert [p.path for p in refused.value.problems] == ["$.adapter.options.in_bundle"]
        assert not (tmp_path / "bundle").exists()


def _raise_first_score(records: list[dict[str, Any]]) -> None:
    """In the first runs file only (c00's), the first run's score (its outcome and measure)
    raised by 100."""
    if records[0]["condition"] == "c00":
        records[0]["outcome"]["score"] += 100.0
        records[0]["measure"] += 100.0


def _drop_first_run(records: list[dict[str, Any]]) -> None:
    """In the first runs file only, the first run turned into a lost slot, as if its row had
    been missing: failed, cause not-recorded, no evidence."""
    if records[0]["condition"] == "c00":
        del records[0]["outcome"]
        records[0].update(status="failed", cause="not-recorded", measure=None)
        records[0].update(contract_sha256=None)


class TestForged:
    """verify holds the runs to the carried table, and the ledger to what the protocol says of
    the records."""

    @pytest.mark.parametrize("edit", [_raise_first_score, _drop_first_run], ids=["raised", "lost"])
    def test_a_run_that_is_not_its_row_is_named(
        self,
        recorded_bundle: Path,
        tmp_path: Path,
        edit: Callable[[list[dict[str, Any]]], None],
    ) -> None:
        """A recorded score raised, or an unwelcome run declared lost, with every derived file
        re-derived and the manifests resealed: verify reads the carried table again and names
        the record (recorded-differs) in its runs file, and nothing else."""
        root = tmp_path / "bundle"
        shutil.copytree(recorded_bundle, root)
        forge(root, edit)
        findings = verify(root)
        assert {f.code for f in findings} == {"recorded-differs"}, findings
        (finding,) = findings
        assert finding.file.startswith("data/runs/") and finding.location is not None

    def test_a_table_changed_to_match_is_named(self, recorded_bundle: Path, tmp_path: Path) -> None:
        """The forged score written into the carried table too (manifests resealed, the
        protocol's pin left): verify names the table as not the pinned one (records-pin)."""
        root = tmp_path / "bundle"
        shutil.copytree(recorded_bundle, root)
        forge(root, _raise_first_score)
        carried = root / "data/plans/records.json"
        rows = json.loads(carried.read_bytes())
        rows[0]["score"] += 100.0
        carried.write_bytes(json.dumps(rows).encode())
        reseal(root)
        assert {f.code for f in verify(root)} == {"records-pin"}

    def test_a_table_that_does_not_map_is_named(
        self, recorded_bundle: Path, tmp_path: Path
    ) -> None:
        """A carried table with a duplicate row, pinned by a protocol rewritten to its digest:
        verify names it (records-unreadable) rather than holding runs against it."""
        root = tmp_path / "bundle"
        shutil.copytree(recorded_bundle, root)
        carried = root / "data/plans/records.json"
        rows = json.loads(carried.read_bytes())
        data = json.dumps([*rows, rows[0]]).encode()
        carried.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        edit_protocol(root, lambda p: p["adapter"]["options"].update(records_sha256=digest))
        codes = {f.code for f in verify(root)}
        assert "records-unreadable" in codes and "recorded-differs" not in codes, codes

    @pytest.mark.parametrize("edit", ["drop-recorded-from", "other-recorded-by"])
    def test_a_ledger_that_hides_the_record_is_named(
        self, recorded_bundle: Path, tmp_path: Path, edit: str
    ) -> None:
        """A ledger whose adapter no longer says the runs were recorded (so that execution
        control would pass), or says another recorder, re-derived and resealed throughout:
        verify names the ledger's facts."""
        root = tmp_path / "bundle"
        shutil.copytree(recorded_bundle, root)
        path = root / "data/source-ledger.json"
        ledger = json.loads(path.read_bytes())
        if edit == "drop-recorded-from":
            del ledger["adapter"]["recorded_from"]
        else:
            ledger["adapter"]["recorded_from"] = ledger["adapter"]["recorded_from"].replace(
                "a made-up table", "an upstream run"
            )
        path.write_bytes(canonical.dumps(ledger))
        rederive(root)
        codes = {f.code for f in verify(root)}
        assert "ledger-facts" in codes, codes


def test_a_missing_pin_says_the_file_s_sha256(tmp_path: Path) -> None:
    """A protocol without records_sha256 is refused at that path, and the message gives the
    file's sha256 to pin."""
    path = _setup(tmp_path, _rows())
    protocol = json.loads(path.read_text())
    del protocol["adapter"]["options"]["records_sha256"]
    path.write_text(json.dumps(protocol))
    with pytest.raises(BadInput) as refused:
        run_study(path, tmp_path / "bundle")
    (problem,) = refused.value.problems
    assert (problem.path, problem.code) == ("$.adapter.options.records_sha256", "missing-field")
    sha = hashlib.sha256((tmp_path / "scores.json").read_bytes()).hexdigest()
    assert sha in problem.message
    assert not (tmp_path / "bundle").exists()


@pytest.mark.slow
def test_replay_reads_the_row_again(recorded_bundle: Path, tmp_path: Path) -> None:
    """repro replay reads the slot's row again, at the pinned sha256, and finds it
    byte-identical: from the table the bundle carries, or with --sources from the folder that
    holds it. A bundle that does not carry its table refuses to replay without --sources."""
    from typer.testing import CliRunner

    from repro._cli import app

    runner = CliRunner()
    folder = str(recorded_bundle.parent)
    for extra in (["--sources", folder], []):
        done = runner.invoke(app, ["replay", str(recorded_bundle), "c01-r0002", *extra])
        assert done.exit_code == 0, done.output
        assert "byte-identical" in done.stdout
    audited = runner.invoke(app, ["audit", str(recorded_bundle), "--all"])
    assert audited.exit_code == 0, audited.output
    uncarried = run_study(_setup(tmp_path, _rows(), carried=False), tmp_path / "bundle")
    refused = runner.invoke(app, ["replay", str(uncarried), "c01-r0002"])
    assert refused.exit_code == 2, refused.output


def test_replay_names_a_field_one_record_leaves_out() -> None:
    """A replayed attempt that failed where the bundle's ran (so one record has an outcome and
    the other none) is named field by field, the missing one as null, not a crash."""
    from repro._execute.replay import _differences
    from repro.models import RunRecord

    ran = RunRecord(
        attempt_id="c00-r0000-a1",
        slot="c00-r0000",
        condition="c00",
        attempt=1,
        predecessor=None,
        status="valid",
        cause=None,
        measure=1.0,
        steps=None,
        step_rewards=None,
        trace_sha256=None,
        contract_sha256="0" * 64,
        outcome={"score": 1.0},
    )
    failed = attrs.evolve(
        ran, status="failed", cause="not-recorded", measure=None, contract_sha256=None, outcome=None
    )
    said = _differences("c00-r0000", [ran], [failed])
    assert any(
        line.startswith("c00-r0000-a1: outcome is {") and "null on replay" in line for line in said
    )
    assert any(line.startswith("c00-r0000-a1: status is") for line in said)


RLIABLE_EXAMPLE = ROOT / "protocols" / "recorded-rliable.json"


@pytest.mark.slow
class TestRliableLayout:
    """protocols/recorded-rliable.json: a made-up table in rliable's own layout, read by the
    recorded adapter, against rliable 1.2.0 on the same table."""

    def test_every_figure_is_rliables_on_the_table(self, tmp_path: Path) -> None:
        """The bundle verifies and says its runs were recorded; rliable's own functions, given
        the table as it is in the file (normalised by the protocol's ranges, as rliable's users
        normalise by random and human scores), give every interval of rl-aggregates.json
        exactly (the rliable sampler, after np.random.seed(seed)), the point estimates to
        1e-12 (NumPy's pairwise sums against math.fsum) and the profiles exactly."""
        import numpy as np

        from test_rl_bundle import _stored, figures_are_rliables

        root = run_study(RLIABLE_EXAMPLE, tmp_path / "bundle")
        assert verify(root) == []
        tiers = {t.name: t for t in open_verified(root).tiers.tiers}
        assert tiers["execution-control"].verdict == "weakened"
        protocol = json.loads(RLIABLE_EXAMPLE.read_bytes())
        table = json.loads((RLIABLE_EXAMPLE.parent / "records" / "atari-scores.json").read_bytes())
        ranges = {n["task"]: (n["low"], n["high"]) for n in protocol["rl"]["normalization"]}
        scores = {
            algorithm: np.array(
                [
                    [
                        (x - ranges[t][0]) / (ranges[t][1] - ranges[t][0])
                        for t, x in zip(table["tasks"], run, strict=True)
                    ]
                    for run in runs
                ],
                dtype=np.float64,
            )
            for algorithm, runs in table["scores"].items()
        }
        figures_are_rliables(_stored(root), scores)
        assert len(_stored(root)["improvements"]) == 2

    def test_a_ragged_matrix_is_refused(self, tmp_path: Path) -> None:
        """A run with a score missing for a task: refused at its place in the file."""
        table = json.loads((RLIABLE_EXAMPLE.parent / "records" / "atari-scores.json").read_bytes())
        table["scores"]["c51"][3].pop()
        data = json.dumps(table).encode()
        (tmp_path / "records").mkdir()
        (tmp_path / "records" / "atari-scores.json").write_bytes(data)
        protocol = json.loads(RLIABLE_EXAMPLE.read_bytes())
        protocol["adapter"]["options"]["records_sha256"] = hashlib.sha256(data).hexdigest()
        path = tmp_path / "protocol.json"
        path.write_text(json.dumps(protocol))
        with pytest.raises(BadInput) as refused:
            run_study(path, tmp_path / "bundle")
        assert [p.path for p in refused.value.problems] == ["$.scores.c51[3]"]


INSPECT_EXAMPLE = ROOT / "protocols" / "recorded-inspect.json"


@pytest.fixture(scope="module")
def inspect_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study of protocols/recorded-inspect.json, once."""
    return run_study(INSPECT_EXAMPLE, tmp_path_factory.mktemp("inspect") / "bundle")


@pytest.mark.slow
class TestInspectLogs:
    """Two inspect_ai logs, one per participant, read as recorded runs: each run is its
    sample's epoch, scored as inspect scores it, and the paired contrast is McNemar's exact test
    on the samples both models answered."""

    def test_each_run_is_its_sample_s_score(self, inspect_bundle: Path) -> None:
        """Every run's measure is inspect's own value_to_float of its sample's score, read by
        inspect's own log reader; the bundle carries both logs byte for byte."""
        pytest.importorskip("inspect_ai")
        from inspect_ai.log import read_eval_log
        from inspect_ai.scorer import value_to_float

        assert verify(inspect_bundle) == []
        b = open_verified(inspect_bundle)
        conditions = {(c.participant, c.factors["sample"]): c.id for c in b.seal.conditions}
        measures = {}
        for path in sorted((inspect_bundle / "data/runs").glob("*.jsonl")):
            for line in path.read_bytes().splitlines():
                record = json.loads(line)
                measures[record["slot"]] = record["measure"]
        to_float = value_to_float()
        for participant in ("careful", "hasty"):
            log_file = ROOT / "protocols" / "records" / f"inspect-{participant}.json"
            carried = inspect_bundle / f"data/plans/records.{participant}.json"
            assert carried.read_bytes() == log_file.read_bytes()
            log = read_eval_log(str(log_file))
            assert log.samples is not None and len(log.samples) == 15
            for sample in log.samples:
                slot = f"{conditions[(participant, sample.id)]}-r{sample.epoch - 1:04d}"
                assert sample.scores is not None
                assert measures[slot] == to_float(sample.scores["match"].value)

    def test_the_paired_contrast_is_mcnemar_s_on_the_logs(self, inspect_bundle: Path) -> None:
        """The contrast pairs the two models' runs by sample and epoch: its discordant counts
        are those of the two logs read by inspect, and its p-value is the exact one-sided
        binomial test of them (scipy's binomtest)."""
        pytest.importorskip("inspect_ai")
        from inspect_ai.log import read_eval_log
        from scipy.stats import binomtest

        right = {}
        for participant in ("careful", "hasty"):
            log = read_eval_log(str(ROOT / "protocols" / "records" / f"inspect-{participant}.json"))
            assert log.samples is not None
            right[participant] = {
                (s.id, s.epoch): s.scores is not None and s.scores["match"].value == "C"
                for s in log.samples
            }
        pairs = list(right["careful"])
        a_only = sum(right["careful"][p] and not right["hasty"][p] for p in pairs)
        b_only = sum(right["hasty"][p] and not right["careful"][p] for p in pairs)
        (contrast,) = open_verified(inspect_bundle).contrasts.contrasts  # type: ignore[union-attr]
        assert contrast.test == "mcnemar-exact" and contrast.pairs == len(pairs) == 15
        assert contrast.counts is not None
        assert (contrast.counts["a_only"], contrast.counts["b_only"]) == (a_only, b_only)
        expected = binomtest(a_only, a_only + b_only, 0.5, alternative="greater").pvalue
        assert contrast.p_value == pytest.approx(expected, rel=1e-12)

    def test_a_forged_score_is_named(self, inspect_bundle: Path, tmp_path: Path) -> None:
        """A hasty run turned right (outcome and measure), every derived file re-derived: verify
        reads the carried logs again and names it."""
        root = tmp_path / "bundle"
        shutil.copytree(inspect_bundle, root)

        def turn_right(records: list[dict[str, Any]]) -> None:
            for record in records:
                if record["measure"] == 0.0 and record["condition"] == "c01":
                    record["outcome"].update(score=1.0, value="C")
                    record["measure"] = 1.0
                    return

        forge(root, turn_right)
        assert {f.code for f in verify(root)} == {"recorded-differs"}


def _log(samples: list[dict[str, Any]]) -> bytes:
    return json.dumps({"version": 2, "status": "success", "samples": samples}).encode()


class TestInspectRows:
    """How an inspect log's samples become rows."""

    def _protocol(self, participants: tuple[str, ...] = ("m",)) -> Any:
        from repro._protocol.load import parse_protocol

        value = _protocol(b"", "json")
        value["adapter"]["options"].update(format="inspect")
        value["matrix"] = [{"name": "sample", "levels": ["a", "b"]}]
        value["participants"] = [{"id": p, "kind": "recorded", "params": {}} for p in participants]
        value["runs_per_condition"] = 2
        return parse_protocol(json.dumps(value).encode())

    def test_an_errored_sample_is_a_lost_slot_and_letters_are_numbers(self) -> None:
        """C, I, P and N read as inspect reads them; a sample with an error gives no row."""
        from repro._derive.recorded import mapped_rows

        samples = [
            {"id": "a", "epoch": 1, "scores": {"s": {"value": "C"}}},
            {"id": "a", "epoch": 2, "scores": {"s": {"value": "P"}}},
            {"id": "b", "epoch": 1, "scores": {"s": {"value": "I"}}},
            {"id": "b", "epoch": 2, "error": {"message": "boom"}, "scores": None},
        ]
        rows = mapped_rows(self._protocol(), [("m", "m.json", _log(samples))])
        scores = {(c, r): row["score"] for c, held in rows.items() for r, row in held.items()}
        assert scores == {("c00", 0): 1.0, ("c00", 1): 0.5, ("c01", 0): 0.0}

    def test_a_log_of_no_one_with_two_participants_is_refused(self) -> None:
        """One inspect log for two participants: refused at $.adapter.options.records."""
        from repro._derive.recorded import mapped_rows

        samples = [{"id": "a", "epoch": 1, "scores": {"s": {"value": "C"}}}]
        with pytest.raises(BadInput) as refused:
            mapped_rows(self._protocol(("m", "n")), [(None, "x.json", _log(samples))])
        assert refused.value.problems[0].path == "$.adapter.options.records"

    def test_an_epoch_past_the_runs_is_refused_at_its_sample(self) -> None:
        """A fourth epoch of a protocol of two runs per condition: refused at the sample's
        epoch in the log, not at a row's place."""
        from repro._derive.recorded import mapped_rows

        samples = [
            {"id": "a", "epoch": 1, "scores": {"s": {"value": "C"}}},
            {"id": "a", "epoch": 3, "scores": {"s": {"value": "C"}}},
        ]
        with pytest.raises(BadInput) as refused:
            mapped_rows(self._protocol(), [("m", "m.json", _log(samples))])
        assert refused.value.problems[0].path == "$.samples[1].epoch"

    def test_two_scorers_are_refused(self) -> None:
        """A sample scored by two scorers: which one is the measure is not said, so refused."""
        from repro._derive.recorded import mapped_rows

        samples = [{"id": "a", "epoch": 1, "scores": {"s": {"value": 1}, "t": {"value": 0}}}]
        with pytest.raises(BadInput) as refused:
            mapped_rows(self._protocol(), [("m", "m.json", _log(samples))])
        assert refused.value.problems[0].path == "$.samples[0].scores"


class TestPerParticipantFiles:
    """records as an object: each participant's own file, pinned each by its sha256."""

    def test_keys_must_be_the_participants(self, tmp_path: Path) -> None:
        """A records object that misses a participant is refused at $.adapter.options.records,
        nothing written."""
        path = _setup(tmp_path, _rows())
        protocol = json.loads(path.read_text())
        protocol["adapter"]["options"]["records"] = {"dqn": "scores.json"}
        path.write_text(json.dumps(protocol))
        with pytest.raises(BadInput) as refused:
            run_study(path, tmp_path / "bundle")
        assert [p.path for p in refused.value.problems] == ["$.adapter.options.records"]
        assert not (tmp_path / "bundle").exists()

    def test_a_row_naming_another_participant_is_refused(self, tmp_path: Path) -> None:
        """Each participant given the whole table: its rows name the other participant too,
        which is refused at the row's participant."""
        path = _setup(tmp_path, _rows())
        protocol = json.loads(path.read_text())
        sha = protocol["adapter"]["options"]["records_sha256"]
        protocol["adapter"]["options"]["records"] = dict.fromkeys(ALGORITHMS, "scores.json")
        protocol["adapter"]["options"]["records_sha256"] = dict.fromkeys(ALGORITHMS, sha)
        path.write_text(json.dumps(protocol))
        with pytest.raises(BadInput) as refused:
            run_study(path, tmp_path / "bundle")
        (problem,) = refused.value.problems
        assert problem.path.endswith(".participant") and problem.code == "inconsistent"


SKILLS = {
    side: ROOT / "protocols" / f"recorded-skills-{side}.json" for side in ("baseline", "candidate")
}


@pytest.mark.slow
class TestSkillsPair:
    """A skills-evaluation style baseline and candidate, each read from its own captured file
    under one protocol family: repro compare holds the candidate to the baseline by the
    regression rules."""

    def test_compare_names_the_seeded_regression(self, tmp_path: Path) -> None:
        """Both studies verify; compare exits 1 and names the concept the candidate stopped
        covering on csv-clean (and that cell's check and median), nothing on the other cases;
        the baseline against itself exits 0."""
        from typer.testing import CliRunner

        from repro._cli import app

        roots = {side: run_study(path, tmp_path / side) for side, path in SKILLS.items()}
        for root in roots.values():
            assert verify(root) == []
        runner = CliRunner()
        compared = runner.invoke(
            app, ["compare", str(roots["baseline"]), str(roots["candidate"]), "--json"]
        )
        assert compared.exit_code == 1, compared.output
        report = json.loads(compared.stdout)
        assert report["regression"] is True
        found = [f for f in report["scores"]["findings"] if f["kind"] == "regression"]
        assert {(f["condition"], f["aspect"], f["check"], f["concept"]) for f in found} == {
            ("c01", "concept", "concepts", "encoding detection"),
            ("c01", "rate", "passed", None),
            ("c01", "volume", None, None),
        }, found
        same = runner.invoke(
            app, ["compare", str(roots["baseline"]), str(roots["baseline"]), "--json"]
        )
        assert same.exit_code == 0, same.output
        kinds = {f["kind"] for f in json.loads(same.stdout)["scores"]["findings"]}
        assert "regression" not in kinds
