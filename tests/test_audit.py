"""repro audit: a sample of a verified bundle's slots, drawn from its identity, re-executed and
compared byte for byte; in stream mode each stretch chained to the next kept state."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import SMALL, study_once
from forge import forge, reseal
from repro._cli.app import app
from repro._derive.audit import audit_sample, excluded_fraction
from repro._plan.streams import generator_state
from repro.verify import verify

runner = CliRunner()

#: SMALL in stream seeding with a kept state every 3 slots: 4 partitions of 8 slots, each kept
#: before its slots 0, 3 and 6.
STREAM: dict[str, Any] = {
    **SMALL,
    "id": "small-stream",
    "seeding": {"mode": "stream", "seed": 7, "checkpoint_every": 3},
}


@pytest.fixture(scope="module")
def per_run_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small per-run protocol's bundle."""
    return study_once(tmp_path_factory, "audit-per-run", SMALL)


@pytest.fixture(scope="module")
def stream_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small protocol's bundle in stream seeding, a state kept every 3 slots."""
    return study_once(tmp_path_factory, "audit-stream", STREAM)


def _audit(bundle: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["audit", str(bundle), "--json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def _copy(bundle: Path, tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(bundle, root)
    return root


class TestSample:
    """The sample is a function of the bundle's identity alone."""

    @pytest.mark.slow
    @given(
        digest=st.text("0123456789abcdef", min_size=64, max_size=64),
        size=st.integers(1, 60),
        n=st.integers(1, 80),
    )
    def test_a_sample_is_distinct_sorted_and_repeatable(
        self, digest: str, size: int, n: int
    ) -> None:
        """Any identity draws min(n, population) distinct slots of the population, in sealed
        order, and draws the same ones again."""
        population = [f"c00-r{i:04d}" for i in range(size)]
        drawn = audit_sample(digest, population, n)
        assert len(drawn) == min(n, size) == len(set(drawn))
        assert drawn == sorted(drawn, key=population.index)
        assert drawn == audit_sample(digest, population, n)

    def test_another_identity_draws_another_sample(self) -> None:
        """Identities that differ in one hex digit draw other samples (of 10 of 1000 slots)."""
        population = [f"c00-r{i:04d}" for i in range(1000)]
        samples = {tuple(audit_sample(f"{i:x}" + "0" * 63, population, 10)) for i in range(16)}
        assert len(samples) == 16

    @pytest.mark.parametrize(("n", "bound"), [(1, 0.95), (59, 0.0495076), (299, 0.0099)])
    def test_the_bound_of_a_clean_sample(self, n: int, bound: float) -> None:
        """A clean sample of n excludes at 95% every fraction f with (1 - f)^n <= 5%: f >= 4.95%
        for n = 59, about 1% for n = 299."""
        f = excluded_fraction(n)
        assert f == pytest.approx(bound, abs=1e-4)
        assert (1 - f) ** n == pytest.approx(0.05)


@pytest.mark.slow
class TestCleanAudits:
    """An audit of an honest bundle matches, and says what it re-executed."""

    def test_a_per_run_sample_matches(self, per_run_bundle: Path) -> None:
        """--sample 5 of the 32 slots re-executes exactly the 5 slots the bundle's sha256 draws,
        each alone, all byte-identical, and states the bound; a second audit draws the same."""
        code, found = _audit(per_run_bundle, "--sample", "5")
        assert code == 0
        population = [f"c{c:02d}-r{r:04d}" for c in range(4) for r in range(8)]
        assert found["sampled"] == audit_sample(found["bundle_sha256"], population, 5)
        assert [s["slot"] for s in found["slots"]] == found["sampled"]
        assert (found["identical"], found["population"], found["chained"]) == (True, 32, [])
        assert found["excluded_fraction"] == pytest.approx(excluded_fraction(5))
        assert _audit(per_run_bundle, "--sample", "5")[1]["sampled"] == found["sampled"]

    def test_a_stream_sample_replays_stretches_and_chains_them(self, stream_bundle: Path) -> None:
        """In stream mode each drawn slot's stretch (at most 3 slots) is re-executed from its
        kept state and chained to the next; no stretch is re-executed twice."""
        code, found = _audit(stream_bundle, "--sample", "4")
        assert code == 0 and found["identical"]
        assert set(found["sampled"]) <= {s["slot"] for s in found["slots"]}
        assert len(found["slots"]) <= 3 * 4
        assert len({s["slot"] for s in found["slots"]}) == len(found["slots"])
        assert all(link["matched"] for link in found["chained"])

    def test_all_replays_every_slot_and_chains_every_kept_state(self, stream_bundle: Path) -> None:
        """--all re-executes the 32 slots and chains 11 kept states: 3 stretches per partition,
        each chained to the next kept state, but the last partition's last."""
        code, found = _audit(stream_bundle, "--all")
        assert (code, found["identical"], len(found["slots"])) == (0, True, 32)
        assert len(found["chained"]) == 11 and found["excluded_fraction"] is None

    def test_the_text_says_what_a_clean_audit_means(self, per_run_bundle: Path) -> None:
        """Without --json the audit names the draw, the re-executed slots and the bound."""
        result = runner.invoke(app, ["audit", str(per_run_bundle), "--sample", "3"])
        assert result.exit_code == 0, result.output
        assert "3 of the 32 slot(s) that ran" in result.stdout
        assert f"{excluded_fraction(3):.2%} or more" in result.stdout

    @pytest.mark.parametrize(
        "args", [[], ["--sample", "3", "--all"], ["--sample", "0"], ["--sample", "-2"]]
    )
    def test_a_bad_request_is_refused(self, per_run_bundle: Path, args: list[str]) -> None:
        """Neither or both of --sample and --all, or a sample below 1: exit 2."""
        assert runner.invoke(app, ["audit", str(per_run_bundle), *args]).exit_code == 2


def _fabricate(slots: set[str]) -> Callable[[list[dict[str, Any]]], None]:
    """Each of ``slots`` gets one more reward of 1 (its measure and steps kept consistent)."""

    def edit(records: list[dict[str, Any]]) -> None:
        for r in records:
            if r["slot"] in slots and r["status"] == "valid":
                r["step_rewards"] = [*r["step_rewards"], 1.0]
                r["steps"] += 1
                r["measure"] = float(sum(r["step_rewards"]))

    return edit


def _swap(a: str, b: str) -> Callable[[list[dict[str, Any]]], None]:
    """Slots ``a`` and ``b`` (of one condition) trade their evidence."""
    fields = ("step_rewards", "steps", "measure", "trace_sha256")

    def edit(records: list[dict[str, Any]]) -> None:
        by_slot = {r["slot"]: r for r in records}
        if a in by_slot and b in by_slot:
            for f in fields:
                by_slot[a][f], by_slot[b][f] = by_slot[b][f], by_slot[a][f]

    return edit


def _trace(slots: set[str]) -> Callable[[list[dict[str, Any]]], None]:
    """Each of ``slots`` gets a fabricated trace digest."""

    def edit(records: list[dict[str, Any]]) -> None:
        for r in records:
            if r["slot"] in slots:
                r["trace_sha256"] = "0" * 64

    return edit


FORGERIES = {
    "fabricated-returns": (_fabricate({"c00-r0001", "c03-r0007"}), {"c00-r0001", "c03-r0007"}),
    "swapped-evidence": (_swap("c00-r0002", "c00-r0005"), {"c00-r0002", "c00-r0005"}),
    "fabricated-trace": (_trace({"c01-r0004"}), {"c01-r0004"}),
}


@pytest.mark.slow
class TestForgeries:
    """What verify cannot see (evidence re-derived and resealed by a forger) an audit of every
    slot finds, slot by slot."""

    @pytest.mark.parametrize("name", sorted(FORGERIES))
    @pytest.mark.parametrize("mode", ["per-run", "stream"])
    def test_all_finds_every_forged_slot(
        self,
        per_run_bundle: Path,
        stream_bundle: Path,
        tmp_path: Path,
        name: str,
        mode: str,
    ) -> None:
        """The forged bundle verifies, and audit --all names exactly the forged slots."""
        edit, forged = FORGERIES[name]
        root = _copy(per_run_bundle if mode == "per-run" else stream_bundle, tmp_path)
        forge(root, edit)
        assert verify(root) == []
        code, found = _audit(root, "--all")
        assert code == 1 and not found["identical"]
        assert {s["slot"] for s in found["slots"] if s["differences"]} == forged

    def test_a_forged_checkpoint_is_found_by_chaining(
        self, stream_bundle: Path, tmp_path: Path
    ) -> None:
        """A forger who runs a stretch from a state of their choosing (here another seed's) and
        puts that state and its runs in place of the honest ones leaves runs that replay
        identically from the forged state, but the stretch before it no longer ends in it, nor
        does it end in the next kept state: both links are named, and verify saw nothing."""
        other = dict(STREAM, seeding={"mode": "stream", "seed": 8, "checkpoint_every": 3})
        donor = study_once_path(tmp_path / "donor", other)
        root = _copy(stream_bundle, tmp_path)
        name = "data/runs/c00.checkpoint.json"
        theirs = json.loads((donor / name).read_bytes())
        ours = json.loads((root / name).read_bytes())
        ours["later"][0] = theirs["later"][0]  # the state before c00-r0003
        (root / name).write_text(json.dumps(ours, sort_keys=True, separators=(",", ":")) + "\n")
        donated = {
            json.loads(line)["slot"]: line
            for line in (donor / "data/runs/c00.jsonl").read_text().splitlines()
        }
        stretch = {"c00-r0003", "c00-r0004", "c00-r0005"}

        def edit(records: list[dict[str, Any]]) -> None:
            for i, r in enumerate(records):
                if r["slot"] in stretch:
                    records[i] = json.loads(donated[r["slot"]])

        forge(root, edit)
        assert verify(root) == []
        code, found = _audit(root, "--all")
        assert code == 1
        assert not [s for s in found["slots"] if s["differences"]]
        broken = [(c["partition"], c["before"]) for c in found["chained"] if not c["matched"]]
        assert broken == [("c00", "c00-r0003"), ("c00", "c00-r0006")]

    def test_a_kept_state_moved_is_named_by_verify(
        self, stream_bundle: Path, tmp_path: Path
    ) -> None:
        """A checkpoint whose later states are not before the slots its spacing names, or whose
        spacing is not the protocol's, is a finding of verify itself."""
        root = _copy(stream_bundle, tmp_path)
        name = "data/runs/c01.checkpoint.json"
        data = json.loads((root / name).read_bytes())
        data["later"][0]["slot"] = "c01-r0004"
        (root / name).write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
        reseal(root)
        assert [f.code for f in verify(root)] == ["checkpoint-slots"]
        data["later"][0]["slot"], data["every"] = "c01-r0003", 4
        (root / name).write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
        reseal(root)
        assert [f.code for f in verify(root)] == ["checkpoint-spacing"]

    def test_the_first_state_is_still_the_seeds(self, stream_bundle: Path) -> None:
        """The first partition's first kept state is random.seed(7)'s, as before."""
        data = json.loads((stream_bundle / "data/runs/c00.checkpoint.json").read_bytes())
        state = generator_state(("seed", 7))
        assert data["python_random"]["words"] == list(state.words)
        assert data["schema"] == "repro.checkpoint/2" and data["every"] == 3
        assert [s["slot"] for s in data["later"]] == ["c00-r0003", "c00-r0006"]
        assert random.Random(7).getstate()[1] == tuple(data["python_random"]["words"])


def study_once_path(base: Path, protocol: dict[str, Any]) -> Path:
    """A real bundle of ``protocol`` under ``base``."""
    from conftest import run_study

    base.mkdir(parents=True)
    path = base / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    return run_study(path, base / "bundle")


@pytest.mark.slow
class TestSignedAudits:
    """repro audit --sign: the result travels with the bundle, and verify checks its sample."""

    def _keys(self, tmp_path: Path) -> tuple[Path, Path]:
        from test_signatures import openssh_key

        return openssh_key(tmp_path / "reviewer")

    def test_a_signed_clean_audit_is_verified_and_reported(
        self, stream_bundle: Path, tmp_path: Path
    ) -> None:
        """The audit's statement sits beside the bag; verify with the reviewer's key checks it
        and reports what it re-executed; stock bagit still validates the bag."""
        import bagit

        root = _copy(stream_bundle, tmp_path)
        key, public = self._keys(tmp_path)
        result = runner.invoke(app, ["audit", str(root), "--sample", "4", "--sign", str(key)])
        assert result.exit_code == 0, result.output
        assert len(list((root / "signatures").glob("*.audit.dsse.json"))) == 1
        checked = runner.invoke(app, ["verify", str(root), "--json", "--trusted-key", str(public)])
        assert checked.exit_code == 0, checked.output
        (status,) = json.loads(checked.stdout)["signatures"]
        assert (status["kind"], status["status"]) == ("audit", "verified")
        assert status["summary"].startswith("4 of 32 slot(s) drawn")
        assert status["summary"].endswith("identical")
        bagit.Bag(str(root)).validate()

    def test_an_audit_of_a_sample_the_author_chose_is_named(
        self, per_run_bundle: Path, tmp_path: Path
    ) -> None:
        """A statement whose sample is not the one the bundle's sha256 draws (here: the first
        five slots, as an author who picks them would) is signature-predicate."""
        from repro._bundle.signatures import sign_statement, statement
        from repro._execute.audit import Audit, audit_predicate

        root = _copy(per_run_bundle, tmp_path)
        key, public = self._keys(tmp_path)
        digest = json.loads(
            runner.invoke(app, ["audit", str(root), "--sample", "5", "--json"]).stdout
        )["bundle_sha256"]
        chosen = tuple(f"c00-r{i:04d}" for i in range(5))
        picked = Audit(digest, 32, 5, chosen, (), ())
        predicate = audit_predicate(picked, "0.1.0")
        sign_statement(root, statement("audit", digest, predicate), key, "audit")
        codes = [f.code for f in verify_with(root, public)]
        assert codes == ["signature-predicate"]

    def test_a_trusted_audit_that_found_a_forgery_is_a_finding(
        self, per_run_bundle: Path, tmp_path: Path
    ) -> None:
        """A forged bundle a trusted reviewer audited (and signed the failure of) verifies no
        more under the reviewer's key: audit-differs."""
        root = _copy(per_run_bundle, tmp_path)
        forge(root, _fabricate({"c02-r0003"}))
        key, public = self._keys(tmp_path)
        result = runner.invoke(app, ["audit", str(root), "--all", "--sign", str(key)])
        assert result.exit_code == 1
        assert "DIFF c02-r0003-a1" in result.stderr
        assert [f.code for f in verify_with(root, public)] == ["audit-differs"]
        assert verify(root) == []  # without the key, the bundle alone still verifies


#: Figures of a clean audit's statement, each changed as a statement that contradicts its own
#: counts or the bundle would carry it: the key, and its new value (or how to make it from the
#: statement's own predicate).
RESTATED: dict[str, Callable[[dict[str, Any]], None]] = {
    "bound-inflated": lambda p: p.update(excluded_fraction=p["excluded_fraction"] / 10),
    "bound-of-the-whole": lambda p: p.update(excluded_fraction=None),
    "level-raised": lambda p: p.update(level=0.99),
    "identical-with-a-difference": lambda p: p.update(differing=1),
    "difference-named-not-counted": lambda p: p.update(differing_slots=[p["_first"]]),
    "a-slot-never-re-executed": lambda p: p.update(
        identical=False, differing=1, differing_slots=[p["_other"]]
    ),
    "fewer-re-executed": lambda p: p.update(reexecuted_slots=p["reexecuted_slots"] - 1),
    "more-chained": lambda p: p.update(chained=p["chained"] + 1),
    "attempts-not-the-bundle's": lambda p: p.update(attempts=p["attempts"] + 1),
    "broken-more-than-chained": lambda p: p.update(
        identical=False, broken=p["chained"] + 1, broken_links=[]
    ),
}


@pytest.fixture(scope="module")
def audited(
    stream_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Path]:
    """The stream bundle with a signed clean audit of 4 slots, and the reviewer's keys."""
    from test_signatures import openssh_key

    tmp = tmp_path_factory.mktemp("audited")
    root = _copy(stream_bundle, tmp)
    key, public = openssh_key(tmp / "reviewer")
    result = runner.invoke(app, ["audit", str(root), "--sample", "4", "--sign", str(key)])
    assert result.exit_code == 0, result.output
    return root, key, public


class TestStatementsDerivedAgain:
    """Every figure an audit statement carries is derived again from its own facts and the
    bundle, whoever signed it: a statement whose counts contradict each other, or whose bound
    is inflated, is signature-predicate with the auditor's key trusted, and without any key."""

    @pytest.mark.slow
    def test_the_genuine_statement(self, audited: tuple[Path, Path, Path]) -> None:
        """The audit's own statement gives no finding, with the key or without."""
        root, _, public = audited
        assert verify_with(root, public) == []
        assert verify(root) == []

    @pytest.mark.parametrize("case", list(RESTATED))
    def test_a_restated_figure(
        self, audited: tuple[Path, Path, Path], tmp_path: Path, case: str
    ) -> None:
        """The statement re-signed by the reviewer with one figure changed is named."""
        from repro._bundle.signatures import parse_envelope, sign_statement
        from repro.verify._limits import Limits

        root, key, public = audited
        root = _copy(root, tmp_path)
        (path,) = (root / "signatures").glob("*.audit.dsse.json")
        signed = parse_envelope(
            f"signatures/{path.name}",
            path.read_bytes(),
            max_signatures=Limits().max_envelope_signatures,
        )
        statement = signed.statement
        predicate = dict(statement["predicate"])
        assert predicate["identical"] is True and predicate["excluded_fraction"] is not None
        predicate["_first"], predicate["_other"] = _slots_of(root, predicate)
        RESTATED[case](predicate)
        del predicate["_first"], predicate["_other"]
        path.unlink()
        sign_statement(root, {**statement, "predicate": predicate}, key, "audit")
        assert [f.code for f in verify_with(root, public)] == ["signature-predicate"]
        assert [f.code for f in verify(root)] == ["signature-predicate"]


def _slots_of(root: Path, predicate: dict[str, Any]) -> tuple[str, str]:
    """The first slot the audit re-executed, and the first it did not."""
    from repro._derive.audit import audit_plan, audit_population, audit_sample
    from repro.verify import open_verified

    bundle = open_verified(root)
    population = audit_population(bundle.protocol.protocol)
    drawn = audit_sample(bundle.bundle_sha256, population, predicate["sample"])
    plan = audit_plan(list(bundle.partitions()), drawn, lambda p: bundle.checkpoint(p).every)
    return plan.slots[0], next(s for s in population if s not in plan.slots)


def verify_with(root: Path, *public: Path) -> list[Any]:
    """verify's findings with ``public`` trusted."""
    from repro._bundle.signatures import load_public_key
    from repro.verify import verification

    return verification(root, [load_public_key(p) for p in public]).findings


@pytest.mark.slow
class TestEndToEnd:
    """The issue's round trip on the quick-start protocol: study, sign, audit --sample 59
    --sign, verify with both keys; stock bagit accepts the bag throughout."""

    def test_quick_start_signed_and_audited(self, tmp_path: Path) -> None:
        """The author signs, a reviewer audits 59 slots drawn from the bundle's sha256 and
        signs that; verify with both keys trusted passes and reports the audit."""
        import bagit

        from conftest import run_study
        from test_signatures import openssh_key

        protocol = Path(__file__).parent.parent / "protocols" / "gymnasium-classic-control.json"
        root = run_study(protocol, tmp_path / "bundle")
        author = openssh_key(tmp_path / "author")
        reviewer = openssh_key(tmp_path / "reviewer")
        assert runner.invoke(app, ["sign", str(root), "--key", str(author[0])]).exit_code == 0
        audited = runner.invoke(
            app, ["audit", str(root), "--sample", "59", "--sign", str(reviewer[0]), "--json"]
        )
        assert audited.exit_code == 0, audited.output
        found = json.loads(audited.stdout)
        assert (found["population"], len(found["sampled"]), found["attempts"]) == (200, 59, 59)
        keys = ["--trusted-key", str(author[1]), "--trusted-key", str(reviewer[1])]
        checked = runner.invoke(app, ["verify", str(root), "--json", *keys])
        assert checked.exit_code == 0, checked.output
        kinds = sorted((s["kind"], s["status"]) for s in json.loads(checked.stdout)["signatures"])
        assert kinds == [
            ("audit", "verified"),
            ("bundle", "verified"),
            ("provenance", "verified"),
            ("test-result", "verified"),
        ]
        bagit.Bag(str(root)).validate()


@pytest.mark.slow
class TestEarlierBundles:
    """A bundle whose checkpoints keep the first state only (``repro.checkpoint/1``, as every
    stream bundle made before ``checkpoint/2``) verifies, replays and is audited as before."""

    def test_a_first_state_only_bundle(self, stream_bundle: Path, tmp_path: Path) -> None:
        """Each checkpoint rewritten as repro.checkpoint/1: verify passes, replay of a
        partition's last slot re-executes the partition from its start, and an audit of every
        slot matches, chained only at each partition's end."""
        root = _copy(stream_bundle, tmp_path)
        for path in sorted((root / "data/runs").glob("*.checkpoint.json")):
            data = json.loads(path.read_bytes())
            data = {k: data[k] for k in ("partition", "python_random")}
            data["schema"] = "repro.checkpoint/1"
            path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
        reseal(root)
        assert verify(root) == []
        replayed = runner.invoke(app, ["replay", str(root), "c02-r0007"])
        assert replayed.exit_code == 0, replayed.output
        assert "replayed 8 slot(s) of c02 from its checkpoint; 1 attempt(s); byte-identical" in (
            replayed.stdout
        )
        code, found = _audit(root, "--all")
        assert (code, found["identical"], len(found["slots"])) == (0, True, 32)
        assert [c["before"] for c in found["chained"]] == ["c01-r0000", "c02-r0000", "c03-r0000"]

    def test_a_first_state_only_schema_keeps_no_later_state(
        self, stream_bundle: Path, tmp_path: Path
    ) -> None:
        """A checkpoint that says it is a repro.checkpoint/1 but keeps a spacing and later
        states is a finding of verify (that schema keeps the partition's first state only)."""
        root = _copy(stream_bundle, tmp_path)
        name = "data/runs/c01.checkpoint.json"
        data = json.loads((root / name).read_bytes())
        assert data["later"], "the stream bundle keeps later states"
        data["schema"] = "repro.checkpoint/1"
        (root / name).write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
        reseal(root)
        assert [f.code for f in verify(root)] == ["checkpoint-spacing"]
