"""The seams between the steps of the flow: one bundle layout, one way to read a verified bundle,
findings as data, one table from exception to exit code; and every module of the package in a
layer of the import contract that ``lint-imports`` checks (which imports cross the layers is
the linter's to check, not these tests')."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import PUBLISHED, ROOT, study_once
from repro import _layout as layout
from repro import errors
from repro._cli import app
from repro._derive.tally import runs
from repro._json.serde import structure
from repro.errors import (
    BadInput,
    ClusterFailed,
    FieldError,
    NotVerified,
    Refused,
    ReproError,
    RunFailed,
    StudyStopped,
    exit_code,
)
from repro.models import FrozenProtocol, Partition, Seal
from repro.verify import open_verified, verify


def _payload(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in (root / "data").rglob("*")
        if p.is_file() and p.name != Path(layout.CRATE).name
    }


class TestLayout:
    """repro._layout names exactly the files a study writes."""

    def test_payload_files_are_what_a_study_writes(self, small_bundle: Path) -> None:
        """The payload a study wrote, crate aside, is layout.payload_files of its protocol and
        seal; every tag file is at the top."""
        fp = structure(
            json.loads((small_bundle / layout.PROTOCOL).read_bytes()), FrozenProtocol, what="p"
        )
        seal = structure(json.loads((small_bundle / layout.SEAL).read_bytes()), Seal, what="s")
        expected = layout.payload_files(fp, [ref.id for ref in seal.partitions])
        assert sorted(_payload(small_bundle)) == expected
        assert all((small_bundle / name).is_file() for name in layout.TAG_FILES)
        assert (small_bundle / layout.CRATE).is_file()

    def test_stream_partitions_have_checkpoints(self) -> None:
        """Only stream seeding adds a checkpoint to a partition's files."""
        assert layout.partition_files("c00", stream=False) == [
            "data/plans/c00.json",
            "data/runs/c00.jsonl",
            "data/times/c00.jsonl",
        ]
        assert layout.partition_files("c00", stream=True)[-1] == "data/runs/c00.checkpoint.json"

    def test_derivation_inputs(self) -> None:
        """The derivations read the protocol, the plan, the runs, the ledger and the
        environment; never the derived files, the times or the tag files."""
        inputs = [layout.PROTOCOL, layout.SEAL, "data/plans/c00.json", "data/runs/c00.jsonl"]
        inputs += [layout.LEDGER, layout.ENVIRONMENT]
        others = [layout.AGGREGATES, layout.TIERS, layout.SCORES, layout.REPORT, layout.CRATE]
        others += ["data/times/c00.jsonl", *layout.TAG_FILES]
        assert all(layout.is_derivation_input(n) for n in inputs)
        assert not any(layout.is_derivation_input(n) for n in others)

    @pytest.mark.slow
    def test_which_slots_run(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        """A slot excluded before sealing is the one slot whose attempts do not run: it has
        no line in its times file, every other attempt has one."""
        bundle = study_once(tmp_path_factory, "small-published", PUBLISHED)
        for plan in sorted((bundle / "data/plans").glob("c*.json")):
            part = structure(json.loads(plan.read_bytes()), Partition, what="p")
            ran = {e.slot for e in part.entries if runs(e)}
            timed = {
                json.loads(line)["attempt_id"].rsplit("-a", 1)[0]
                for line in (bundle / layout.times_file(part.id)).read_text().splitlines()
            }
            assert timed == ran, part.id
        assert not runs(
            next(
                e
                for p in sorted((bundle / "data/plans").glob("c*.json"))
                for e in structure(json.loads(p.read_bytes()), Partition, what="p").entries
                if e.slot == "c01-r0002"
            )
        )


class TestOpenVerified:
    """show, publish, compare and replay read a bundle only through open_verified."""

    def test_returns_what_verify_parsed(self, small_bundle: Path) -> None:
        """A bundle that verifies is handed back parsed, its records read by verify's reader,
        and its identity is the sha256 of the tag manifest verify read."""
        bundle = open_verified(small_bundle)
        assert bundle.protocol.protocol.id == "small"
        records = list(bundle.all_records())
        assert len(records) == sum(c.scheduled for c in bundle.aggregates.conditions)
        assert [p.id for p in bundle.partitions()] == [r.id for r in bundle.seal.partitions]
        from repro.verify import bundle_sha256

        assert bundle.bundle_sha256 == bundle_sha256(small_bundle)

    def test_refuses_a_bundle_that_does_not_verify(self, bundle_copy: Path) -> None:
        """A tampered bundle raises NotVerified with every finding verify makes."""
        path = bundle_copy / "data/runs/c00.jsonl"
        path.write_bytes(path.read_bytes().replace(b'"valid"', b'"failed"', 1))
        with pytest.raises(NotVerified) as raised:
            open_verified(bundle_copy)
        assert list(raised.value.findings) == verify(bundle_copy)

    def test_a_runs_file_changed_after_verify_is_named(self, bundle_copy: Path) -> None:
        """A runs file edited after verify read it is not used: reading its records raises
        NotVerified naming the change."""
        bundle = open_verified(bundle_copy)
        path = bundle_copy / "data/runs/c00.jsonl"
        path.write_bytes(path.read_bytes().replace(b'"valid"', b'"failed"', 1))
        with pytest.raises(NotVerified) as raised:
            list(bundle.records("c00"))
        assert {f.code for f in raised.value.findings} == {"changed-while-read"}

    def test_a_runs_file_swapped_for_a_symlink_is_not_followed(
        self, bundle_copy: Path, tmp_path: Path
    ) -> None:
        """A runs file replaced by a link to a copy outside the bundle after verify read it is
        not followed (replay and compare read records this way)."""
        bundle = open_verified(bundle_copy)
        path = bundle_copy / "data/runs/c00.jsonl"
        outside = tmp_path / "outside.jsonl"
        outside.write_bytes(path.read_bytes())
        path.unlink()
        os.symlink(outside, path)
        with pytest.raises(NotVerified) as raised:
            list(bundle.records("c00"))
        assert {f.code for f in raised.value.findings} == {"cannot-read-again"}


class TestFindingsAsData:
    """A finding carries a code and a structured location, in --json too."""

    def test_a_refused_line_has_its_line_and_path(self, bundle_copy: Path) -> None:
        """A run line whose value the schema refuses is located by line and JSON path."""
        path = bundle_copy / "data/runs/c01.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        lines[2] = lines[2].replace(b'"attempt":1', b'"attempt":"one"', 1)
        path.write_bytes(b"".join(lines))
        schema = [f for f in verify(bundle_copy) if f.code == "schema"]
        assert schema, "the edit is not refused by the schema"
        assert (schema[0].location.line, schema[0].location.path) == (3, "$.attempt")

    def test_json_has_the_location(self, bundle_copy: Path) -> None:
        """repro verify --json gives each finding's location as data: a join problem names
        the attempt it concerns."""
        path = bundle_copy / "data/runs/c00.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join([*lines, lines[0]]))
        done = CliRunner().invoke(app, ["verify", "--json", str(bundle_copy)])
        assert done.exit_code == errors.EXIT_VERIFY_FAILED
        findings = json.loads(done.stdout)["findings"]
        joins = [f for f in findings if f["code"] == "join-duplicate-attempt-id"]
        assert [f["location"] for f in joins] == [
            {"line": None, "path": None, "item": json.loads(lines[0])["attempt_id"]}
        ]


class TestExitCodes:
    """One table maps the exception family to exit codes."""

    def test_every_error_is_a_repro_error(self) -> None:
        """NotVerified, Refused and the models' FieldError are part of the family, under
        ReproError."""
        for cls in (
            BadInput,
            FieldError,
            NotVerified,
            Refused,
            ClusterFailed,
            StudyStopped,
            RunFailed,
        ):
            assert issubclass(cls, ReproError), cls

    @pytest.mark.parametrize(
        ("error", "code"),
        [
            (BadInput("x"), errors.EXIT_BAD_INPUT),
            (NotVerified([]), errors.EXIT_VERIFY_FAILED),
            (Refused(["x"]), errors.EXIT_VERIFY_FAILED),
            (ClusterFailed("x"), errors.EXIT_STUDY_STOPPED),
            (StudyStopped("x", errors.EXIT_STUDY_STOPPED), errors.EXIT_STUDY_STOPPED),
            (StudyStopped("x", 128 + 15), 128 + 15),
        ],
    )
    def test_the_table(self, error: ReproError, code: int) -> None:
        """Each error the command line meets ends with its exit code."""
        assert exit_code(error) == code

    def test_a_subclass_takes_its_base_code(self) -> None:
        """An error class not in the table takes the code of the nearest class that is."""

        class Special(BadInput):
            pass

        assert exit_code(Special("x")) == errors.EXIT_BAD_INPUT

    def test_an_error_that_never_reaches_the_cli_has_no_code(self) -> None:
        """A run's own failure is recorded, never an exit: asking its code is a bug."""
        with pytest.raises(TypeError):
            exit_code(RunFailed("x"))


class TestImportLayers:
    """The layers contract of pyproject.toml's [tool.importlinter] covers the whole package."""

    def test_every_module_is_in_one_layer(self) -> None:
        """Each module and subpackage at the top of src/repro (the package's own module aside)
        is named in exactly one layer, so that a new one cannot import upward unchecked; and no
        layer names what is not there."""
        config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
        (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
        assert contract["containers"] == ["repro"]
        named = [n.strip() for layer in contract["layers"] for n in layer.split("|")]
        package = ROOT / "src" / "repro"
        modules = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
        modules |= {p.parent.name for p in package.glob("*/__init__.py")}
        assert sorted(named) == sorted(modules)
