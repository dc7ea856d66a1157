"""Forgeries by someone with repro at hand: the recorded files edited, every derived file
re-derived with repro's own code and both manifests regenerated (``forge.forge``). Only a rule
that verify applies again to the recorded bytes can catch them; each test names the rule
(docs/guarantees.md, "Rules verify applies again", lists them all)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import PAIRED, PUBLISHED, SMALL, run_study, study_once
from forge import forge, forge_plan, rederive, reseal
from guarantees import record
from repro._json.canonical import dumps as canonical_bytes
from repro._json.canonical import sha256_hex
from repro._plan.sealing import derive_seed
from repro.verify import Finding, verify

#: CartPole under a random policy, with a maximum the longer episodes pass: some runs are
#: invalid (measure-above-maximum), and a single attempt each, so those slots end failed.
BOUNDED: dict[str, Any] = {
    **SMALL,
    "id": "bounded",
    "matrix": [{"name": "env_id", "levels": ["CartPole-v1"]}],
    "participants": [{"id": "random", "kind": "random", "params": {}}],
    "runs_per_condition": 16,
    "measure": {
        "name": "episode_return",
        "description": "sum of step rewards",
        "maximum": 20.0,
    },
    "retry": {"max_attempts": 1},
}


@pytest.fixture(scope="module")
def bounded_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of :data:`BOUNDED`, made once; copy it before changing it."""
    return study_once(tmp_path_factory, "bounded", BOUNDED)


def _copy(bundle: Path, tmp_path: Path) -> Path:
    root = tmp_path / "forged"
    shutil.copytree(bundle, root)
    return root


def _written(tmp_path: Path, protocol: dict[str, Any]) -> Path:
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    return path


def _codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings}


def _caught(root: Path, code: str) -> list[Finding]:
    """verify's findings on a forged bundle, which must include one of ``code``."""
    findings = verify(root)
    record("forgeries tried", 1)
    record("forgeries named by the rule they break", int(code in _codes(findings)))
    assert code in _codes(findings), [f.as_dict() for f in findings]
    return findings


def _first(
    records: list[dict[str, Any]], where: Callable[[dict[str, Any]], bool]
) -> dict[str, Any] | None:
    return next((r for r in records if where(r)), None)


class TestTheForgerSTools:
    """The forger's re-derivation is repro's own: on an untouched bundle it changes nothing."""

    def test_rederiving_an_untouched_bundle_keeps_it_verifying(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """Re-deriving every derived file and both manifests of a real bundle gives a bundle
        that verifies, with the same derived bytes."""
        root = _copy(small_bundle, tmp_path)
        rederive(root)
        assert verify(root) == []
        for name in ("aggregates.json", "tiers.json", "source-ledger.json", "validation-report.md"):
            assert (root / "data" / name).read_bytes() == (
                small_bundle / "data" / name
            ).read_bytes()


class TestValidityRules:
    """A record's status, cause and measure are judged again from the evidence it keeps
    (``repro._derive.validity.record_problem``)."""

    @pytest.mark.slow
    def test_a_measure_past_the_maximum_flipped_to_valid(
        self, bounded_bundle: Path, tmp_path: Path
    ) -> None:
        """An invalid run (measure above the protocol's maximum) made valid, with aggregates,
        tiers, ledger and report re-derived: named by the validity rules."""
        root = _copy(bounded_bundle, tmp_path)
        flipped: list[str] = []

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["cause"] == "measure-above-maximum")
            if r is not None and not flipped:
                r["status"], r["cause"] = "valid", None
                flipped.append(r["attempt_id"])

        forge(root, edit)
        assert flipped, "the study has a run above the maximum"
        findings = _caught(root, "validity-rules")
        assert any(flipped[0] in f.what for f in findings if f.code == "validity-rules")

    def test_an_outcome_value_that_is_not_the_outcome_s(
        self, scored_bundle: Path, tmp_path: Path
    ) -> None:
        """A command run's measure (100.0) that is not the number at ``measure.key`` of the
        outcome it keeps, scores and gates re-derived: named by the validity rules."""
        root = _copy(scored_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "valid")
            if r is not None:
                r["measure"] = 100.0

        forge(root, edit)
        _caught(root, "validity-rules")

    def test_steps_that_are_not_the_number_of_step_rewards(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """A valid run with ``steps: 999`` and fewer step rewards: named."""
        root = _copy(small_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "valid")
            if r is not None:
                r["steps"] = 999

        forge(root, edit)
        _caught(root, "validity-rules")

    def test_step_rewards_dropped_from_a_step_rewards_adapter_s_run(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """A valid Gymnasium run whose step rewards are removed and whose measure is changed
        (the ledger says this adapter's runs end in step rewards): named, not merely a weakened
        tier."""
        root = _copy(small_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "valid")
            if r is not None:
                r["step_rewards"], r["measure"] = None, 500.0

        forge(root, edit)
        _caught(root, "validity-rules")

    def test_a_failed_attempt_given_evidence(self, bounded_bundle: Path, tmp_path: Path) -> None:
        """A failed attempt that keeps a measure, steps and a trace digest: named."""
        root = _copy(bounded_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "invalid")
            if r is not None:
                r["status"], r["cause"] = "failed", "worker-died:SIGKILL"

        forge(root, edit)
        _caught(root, "validity-rules")


class TestRecordOrder:
    """A partition's records are in sealed order."""

    def test_records_stored_out_of_sealed_order(self, small_bundle: Path, tmp_path: Path) -> None:
        """Two slots' records swapped in place in their runs file, and their lines in the times
        file with them (so the two still join), everything re-derived: named (``runs-order``)."""
        root = _copy(small_bundle, tmp_path)
        times = root / "data/times/c00.jsonl"
        lines = times.read_bytes().splitlines(keepends=True)
        lines[0], lines[1] = lines[1], lines[0]
        times.write_bytes(b"".join(lines))

        def edit(records: list[dict[str, Any]]) -> None:
            if records and records[0]["condition"] == "c00":
                records[0], records[1] = records[1], records[0]

        forge(root, edit)
        findings = _caught(root, "runs-order")
        assert "times-mismatch" not in _codes(findings)


class TestMoreRules:
    """The rest of the rules a study applies to an attempt, each forged with everything
    re-derived."""

    @pytest.mark.slow
    def test_more_step_rewards_than_a_record_may_hold(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """A valid run given 1,000,001 step rewards (its steps and measure to match): a study
        refuses such evidence (``evidence-too-many-step-rewards``), so verify names the record."""
        root = _copy(small_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "valid" and r["condition"] == "c00")
            if r is not None:
                r["step_rewards"] = [1.0] * 1_000_001
                r["steps"], r["measure"] = 1_000_001, 1_000_001.0

        forge(root, edit)
        _caught(root, "validity-rules")

    def test_rewards_kept_for_a_run_whose_rewards_were_not_finite(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """A valid run relabelled ``non-finite-step-reward`` (invalid) but keeping its rewards
        and measure, which such a record cannot hold: named."""
        root = _copy(small_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "valid")
            if r is not None:
                r["status"], r["cause"] = "invalid", "non-finite-step-reward"

        forge(root, edit)
        _caught(root, "validity-rules")

    def test_a_cause_that_is_a_message(self, bounded_bundle: Path, tmp_path: Path) -> None:
        """An invalid run whose cause is replaced by a message (no short code): named."""
        root = _copy(bounded_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "invalid")
            if r is not None:
                r["status"], r["cause"] = "failed", "it broke! see the log"
                for key in ("measure", "steps", "step_rewards", "trace_sha256", "contract_sha256"):
                    r[key] = None

        forge(root, edit)
        _caught(root, "validity-rules")

    def test_an_exclusion_given_another_reason(
        self, published_bundle: Path, tmp_path: Path
    ) -> None:
        """The one record of a slot the protocol excluded before sealing, given another reason
        than the protocol's: named by the plan join."""
        root = _copy(published_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "excluded")
            if r is not None:
                r["cause"] = "excluded before sealing: it looked bad"

        forge(root, edit)
        _caught(root, "join-excluded-slot-cause")

    def test_an_excluded_slot_given_evidence(self, published_bundle: Path, tmp_path: Path) -> None:
        """The record of a slot excluded before sealing, given a measure and steps: named."""
        root = _copy(published_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "excluded")
            if r is not None:
                r["measure"], r["steps"] = 10.0, 10

        forge(root, edit)
        _caught(root, "validity-rules")

    def test_a_contract_digest_changed(self, small_bundle: Path, tmp_path: Path) -> None:
        """A run that records other contract facts than its condition's: named."""
        root = _copy(small_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "valid")
            if r is not None:
                r["contract_sha256"] = "0" * 64

        forge(root, edit)
        _caught(root, "contract-digest")

    def test_a_disclosing_outcome_put_back(self, scored_bundle: Path, tmp_path: Path) -> None:
        """An outcome given a host path (the tiers re-derived, so they say the bundle
        discloses): the disclosure itself is named, whatever the tiers say."""
        root = _copy(scored_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "valid")
            if r is not None:
                r["outcome"]["notes"] = "read /home/alice/review.txt"

        forge(root, edit)
        _caught(root, "disclosure")

    def test_lost_opens_past_the_bound(self, small_bundle: Path, tmp_path: Path) -> None:
        """An attempt's times claiming more lost session opens than a study retries: the
        times line is refused by its model (repro's own code cannot re-derive the crate from a
        line it refuses; the manifests are regenerated)."""
        root = _copy(small_bundle, tmp_path)
        path = root / "data/times/c00.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        first = json.loads(lines[0])
        first["lost_opens"] = ["worker-died:SIGKILL"] * 4
        lines[0] = (json.dumps(first, sort_keys=True, separators=(",", ":")) + "\n").encode()
        path.write_bytes(b"".join(lines))
        reseal(root)
        _caught(root, "model")


class TestRecordShape:
    """A record's fields have the types and ranges its model states, as the study's evidence
    check gave them."""

    def test_a_field_of_the_wrong_type(self, small_bundle: Path, tmp_path: Path) -> None:
        """A valid run whose steps are a string (repro's code cannot re-derive from it; the
        manifests are regenerated): named by the run-record schema."""
        root = _copy(small_bundle, tmp_path)
        path = root / "data/runs/c00.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        first = json.loads(lines[0])
        first["steps"] = str(first["steps"])
        lines[0] = (json.dumps(first, sort_keys=True, separators=(",", ":")) + "\n").encode()
        path.write_bytes(b"".join(lines))
        reseal(root)
        _caught(root, "schema")


class TestSlotAndPartitionRules:
    """The rules on a slot's attempts and on a partition, forged with everything re-derived."""

    def test_an_attempt_after_the_valid_one(self, small_bundle: Path, tmp_path: Path) -> None:
        """A second attempt appended after a slot's valid first one (a study stops at the first
        valid attempt): named by the plan join."""
        root = _copy(small_bundle, tmp_path)

        def edit(records: list[dict[str, Any]]) -> None:
            r = _first(records, lambda r: r["status"] == "valid" and r["attempt"] == 1)
            if r is not None:
                extra = {
                    **r,
                    "attempt": 2,
                    "attempt_id": r["attempt_id"][:-1] + "2",
                    "predecessor": r["attempt_id"],
                }
                records.insert(records.index(r) + 1, extra)

        forge(root, edit)
        _caught(root, "join-attempt-after-terminal")

    @pytest.mark.slow
    def test_the_first_checkpoint_of_a_stream_study(self, tmp_path: Path) -> None:
        """In stream seeding, the first partition's checkpoint replaced by another generator
        state (the crate and the rest re-derived): named, as it is not the seed's state."""
        protocol = {**SMALL, "seeding": {"mode": "stream", "seed": 5}, "runs_per_condition": 2}
        path = tmp_path / "p.json"
        path.write_text(json.dumps(protocol), "utf-8")
        root = run_study(path, tmp_path / "stream")
        checkpoint = root / "data/runs/c00.checkpoint.json"
        other = json.loads((root / "data/runs/c01.checkpoint.json").read_text("utf-8"))
        other["partition"] = "c00"
        checkpoint.write_bytes(canonical_bytes(other))
        rederive(root)
        _caught(root, "checkpoint-seed")

    @pytest.mark.slow
    def test_paired_seeds_unpaired(self, tmp_path: Path) -> None:
        """A study under common random numbers (``seeding.common: ["participant"]``) whose
        second participant's sealed seeds were replaced by derive_seed's own seeds of its slots
        (the seal's digests, the derived files and both manifests regenerated): named, as verify
        re-derives each slot's seed from the protocol and finds the plan is not its plan."""
        root = run_study(_written(tmp_path, PAIRED), tmp_path / "paired")
        assert verify(root) == []

        def edit(partition: str, entries: list[dict[str, Any]]) -> None:
            if partition == "c01":
                for entry in entries:
                    entry["seed"] = derive_seed(7, entry["slot"])

        forge_plan(root, edit)
        findings = _caught(root, "rederived-differs")
        assert {f.file for f in findings if f.code == "rederived-differs"} == {
            "data/plans/c01.json",
            "data/plans/seal.json",
        }
        assert any(".seed" in f.what for f in findings if f.file == "data/plans/c01.json")

    def test_seeds_paired_without_common(self, small_bundle: Path, tmp_path: Path) -> None:
        """A study without ``seeding.common`` whose second condition was sealed the first
        condition's seeds (pairing the two participants, undeclared): named by the plan's
        re-derivation."""
        root = _copy(small_bundle, tmp_path)
        seeds: dict[int, int] = {}

        def edit(partition: str, entries: list[dict[str, Any]]) -> None:
            for entry in entries:
                if partition == "c00":
                    seeds[entry["replicate"]] = entry["seed"]
                elif partition == "c01":
                    entry["seed"] = seeds[entry["replicate"]]

        forge_plan(root, edit)
        findings = _caught(root, "rederived-differs")
        assert any(f.file == "data/plans/c01.json" for f in findings)


class TestDerivedFiles:
    """A derived file edited by itself, everything else left as the study wrote it and both
    manifests regenerated: re-derived and compared."""

    def test_the_ledger_s_losses(self, published_bundle: Path, tmp_path: Path) -> None:
        """A loss removed from the source ledger: named."""
        root = _copy(published_bundle, tmp_path)
        path = root / "data/source-ledger.json"
        ledger = json.loads(path.read_text("utf-8"))
        assert ledger["losses"], "the published bundle has a declared exclusion"
        ledger["losses"] = ledger["losses"][1:]
        path.write_bytes(canonical_bytes(ledger))
        reseal(root)
        _caught(root, "rederived-differs")

    def test_the_report(self, small_bundle: Path, tmp_path: Path) -> None:
        """A sentence added to the validation report: named."""
        root = _copy(small_bundle, tmp_path)
        path = root / "data/validation-report.md"
        path.write_text(path.read_text("utf-8") + "\nAll claims verified by hand.\n", "utf-8")
        reseal(root)
        _caught(root, "report-differs")

    def test_the_report_rendered_unescaped(self, small_bundle: Path, tmp_path: Path) -> None:
        """The report re-rendered with its bundle's strings written as they are (the first
        format's rendering, repro's own), its version marker kept: named, since a report of
        that version escapes them."""
        root = _copy(small_bundle, tmp_path)
        path = root / "data/validation-report.md"
        escaped = path.read_text("utf-8")
        marker, _ = escaped.split("\n", 1)
        rederive(root, report_version=1)
        unescaped = path.read_text("utf-8")
        assert marker == "<!-- repro.report/2 -->" and unescaped != escaped.split("\n", 1)[1]
        path.write_text(f"{marker}\n{unescaped}", "utf-8")
        reseal(root)
        _caught(root, "report-differs")

    def test_a_report_of_an_unknown_version(self, small_bundle: Path, tmp_path: Path) -> None:
        """A report whose marker names a version verify does not know: named as such, and not
        compared."""
        root = _copy(small_bundle, tmp_path)
        path = root / "data/validation-report.md"
        text = path.read_text("utf-8").replace("repro.report/2", "repro.report/9", 1)
        path.write_text(text, "utf-8")
        reseal(root)
        codes = _codes(_caught(root, "report-version"))
        assert "report-differs" not in codes

    def test_a_report_rewritten_in_the_first_format_verifies(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """What repro does not claim: a report rewritten whole in the first format (no marker,
        its strings as they are), as an earlier repro wrote every report, verifies, as every
        bundle written before the marker must. It says what its bundle's files say, figure for
        figure; only its strings are not escaped."""
        root = _copy(small_bundle, tmp_path)
        rederive(root, report_version=1)
        assert not (root / "data/validation-report.md").read_text("utf-8").startswith("<!--")
        assert verify(root) == []


#: The published protocol under the family-wise criterion: its estimand's intervals still
#: exclude each other's point estimates at the family-wise level, so its class is failed.
FAMILYWISE_PUBLISHED: dict[str, Any] = {
    **PUBLISHED,
    "id": "small-familywise",
    "criteria": {"bounded": "familywise-interval-containment"},
}


@pytest.fixture(scope="module")
def familywise_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of :data:`FAMILYWISE_PUBLISHED`, made once; copy it before changing it."""
    return study_once(tmp_path_factory, "familywise", FAMILYWISE_PUBLISHED)


def _edit_tiers(root: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = root / "data/tiers.json"
    tiers = json.loads(path.read_bytes())
    edit(tiers)
    path.write_bytes(canonical_bytes(tiers))


def _switch_to_familywise(root: Path) -> None:
    """Write the family-wise criterion into the bundle's protocol, its digest recomputed."""
    path = root / "data/protocol.json"
    frozen = json.loads(path.read_bytes())
    frozen["protocol"]["criteria"]["bounded"] = "familywise-interval-containment"
    frozen["sha256"] = sha256_hex(canonical_bytes(frozen["protocol"]))
    path.write_bytes(canonical_bytes(frozen))


class TestReproductionCriterion:
    """The reproduction class is re-derived under the criterion the sealed protocol names
    (``repro._derive.reproduction.reproduction``); the criterion is part of what the seal
    digests."""

    @pytest.mark.slow
    def test_a_familywise_verdict_upgraded(self, familywise_bundle: Path, tmp_path: Path) -> None:
        """A failed family-wise class made bounded in tiers.json, with more checks claimed (so
        wider intervals) and every check passing: the verdict and the levels are named."""
        root = _copy(familywise_bundle, tmp_path)
        stored = json.loads((root / "data/tiers.json").read_bytes())["reproduction"]
        assert stored["verdict"] == "failed" and stored["familywise"]["checks"] == 5

        def edit(tiers: dict[str, Any]) -> None:
            rep = tiers["reproduction"]
            rep["verdict"] = "bounded"
            rep["familywise"] = {"checks": 50, "observed_level": 0.999, "published_level": 0.999}
            for figure in rep["figures"]:
                for key in (
                    "observed_interval_contains_published",
                    "published_interval_contains_observed",
                ):
                    if figure[key] is not None:
                        figure[key] = True

        _edit_tiers(root, edit)
        reseal(root)
        findings = _caught(root, "rederived-differs")
        paths = {f.location.path for f in findings if f.code == "rederived-differs"}
        assert "$.reproduction.verdict" in paths
        assert "$.reproduction.familywise.checks" in paths

    def test_a_familywise_verdict_with_its_levels_dropped(
        self, familywise_bundle: Path, tmp_path: Path
    ) -> None:
        """A family-wise class passed off as the default rule's (its levels and rescaled
        intervals removed from tiers.json): named."""
        root = _copy(familywise_bundle, tmp_path)

        def edit(tiers: dict[str, Any]) -> None:
            rep = tiers["reproduction"]
            del rep["familywise"]
            for figure in rep["figures"]:
                figure.pop("familywise_observed_interval", None)
                figure.pop("familywise_published_halfwidth", None)

        _edit_tiers(root, edit)
        reseal(root)
        findings = _caught(root, "rederived-differs")
        paths = {f.location.path for f in findings if f.code == "rederived-differs"}
        assert "$.reproduction.familywise" in paths

    def test_the_criterion_switched_after_the_runs(
        self, published_bundle: Path, tmp_path: Path
    ) -> None:
        """The family-wise criterion written into a default bundle's protocol after its runs,
        with the protocol's digest recomputed and every derived file re-derived under it (a
        class chosen after seeing the runs): the seal, written before the runs, names another
        protocol."""
        root = _copy(published_bundle, tmp_path)
        _switch_to_familywise(root)
        rederive(root)
        assert b"familywise" in (root / "data/tiers.json").read_bytes()
        findings = _caught(root, "seal-protocol-digest")
        assert "protocol-digest" not in _codes(findings)

    @pytest.mark.slow
    def test_the_criterion_put_beside_a_bootstrap_interval(self, tmp_path: Path) -> None:
        """The family-wise criterion written into the protocol of a bundle whose intervals are
        bootstraps (which the criterion cannot recompute at another level), the digest
        recomputed: verify applies the protocol's consistency rules again and names it, and
        re-derives nothing."""
        protocol = {
            **PUBLISHED,
            "id": "small-bootstrap",
            "interval": {"method": "bootstrap", "level": 0.95, "resamples": 100},
        }
        root = run_study(_written(tmp_path, protocol), tmp_path / "bundle")
        _switch_to_familywise(root)
        reseal(root)
        findings = _caught(root, "protocol-inconsistent")
        assert any("$.interval.method" in f.found for f in findings)
