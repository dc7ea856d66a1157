"""A continued study's account, ``data/continuation.json``, as verify checks it: a bundle that
holds a consistent account verifies, with the continuation tier passing, the report's line, the
crate's part and ``repro show``'s line; an account forged against any one rule of
:func:`repro._derive.continuation.continuation_problems` is named ``continuation-account``, and
nothing else, though every derived file was re-derived with repro's own code (``forge.rederive``)
and both manifests regenerated.

The continued bundles are made from the small bundle: its partitions are all there, so any of
them may be said to have been carried, the others to have run."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from browser import run_chromium
from conftest import SMALL, study_once
from forge import rederive, reseal
from htmlpage import parse
from repro import _layout as layout
from repro._cli.app import app
from repro._derive.continuation import (
    carried_files,
    carried_sha256,
    continuation_problems,
    rejoined_at,
)
from repro._json.canonical import dumps as canonical_bytes
from repro._json.serde import structure
from repro.models import CarriedPartition, Continuation, Seal
from repro.verify import verify
from test_cli_output import in_pty

runner = CliRunner()

#: The small bundle's sealed partitions, in sealed order.
SEALED = ("c00", "c01", "c02", "c03")

#: The stream bundle keeps a generator state every this many slots: in its partitions of 8
#: slots, a continuation takes the stream up again at slot 4 of the last carried one.
STREAM_EVERY = 4


@pytest.fixture(scope="module")
def stream_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small protocol seeded as one generator stream, made once; copy it before changing
    it."""
    seeding = {"mode": "stream", "seed": 7, "checkpoint_every": STREAM_EVERY}
    return study_once(tmp_path_factory, "small-stream", {**SMALL, "seeding": seeding})


Edit = Callable[[dict[str, Any]], None]


def _seal(root: Path) -> Seal:
    return structure(json.loads((root / layout.SEAL).read_bytes()), Seal, what="seal")


def _account(
    root: Path,
    carried: Sequence[str] = ("c00", "c01"),
    unfinished: Sequence[str] = ("c02",),
    interruption: str | None = "SIGINT",
    stream: bool = False,
) -> dict[str, Any]:
    """The account a continued study would write of the bundle at ``root``, as plain JSON:
    ``carried`` whole, every other sealed partition ran; with ``stream``, the account of a
    stream-seeded study (:data:`STREAM_EVERY`), its checkpoints carried and the stream taken
    up in the last carried partition."""
    seal = _seal(root)
    slots = {ref.id: ref.entries for ref in seal.partitions}
    entries = []
    for partition in carried:
        files = {
            name: hashlib.sha256((root / name).read_bytes()).hexdigest()
            for name in carried_files(partition, stream)
        }
        records = len((root / layout.runs_file(partition)).read_bytes().splitlines())
        entries.append(
            {"partition": partition, "files": files, "slots": slots[partition], "attempts": records}
        )
    models = [structure(e, CarriedPartition, what="carried") for e in entries]
    account = {
        "schema": "repro.continuation/2" if stream else "repro.continuation/1",
        "carried_sha256": carried_sha256(models),
        "carried": entries,
        "ran": [ref.id for ref in seal.partitions if ref.id not in carried],
        "unfinished": list(unfinished),
        "interruption": interruption,
    }
    if stream and carried:
        count = slots[carried[-1]]
        start = rejoined_at(STREAM_EVERY, count)
        account["rejoined"] = {"partition": carried[-1], "start": start, "slots": count - start}
    return account


def _shift_times(root: Path, partition: str, by: timedelta) -> None:
    """Move every attempt time of one partition's times file by ``by``, kept canonical."""
    path = root / layout.times_file(partition)
    lines = []
    for line in path.read_bytes().splitlines():
        t = json.loads(line)
        for key in ("started_utc", "finished_utc"):
            when = datetime.strptime(t[key], "%Y-%m-%dT%H:%M:%S.%fZ") + by
            t[key] = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lines.append(canonical_bytes(t))
    path.write_bytes(b"".join(lines))


def _continued(
    small_bundle: Path,
    tmp_path: Path,
    edit: Edit | None = None,
    rehash: bool = True,
    carried: Sequence[str] = ("c00", "c01"),
    ran_before: timedelta = timedelta(days=-1),
    **kw: Any,
) -> Path:
    """A copy of the small bundle holding an account (:func:`_account`) of ``carried``, whose
    attempts are moved by ``ran_before`` (by default to the day before: they ran in the
    interrupted study), changed by ``edit`` (and its ``carried_sha256`` made again after it
    unless ``rehash`` is False); every derived file then re-derived by repro's own code and
    both manifests regenerated."""
    root = tmp_path / "continued"
    shutil.copytree(small_bundle, root)
    for partition in carried:
        _shift_times(root, partition, ran_before)
    account = _account(root, carried, **kw)
    if edit is not None:
        edit(account)
        if rehash:
            models = [structure(e, CarriedPartition, what="c") for e in account["carried"]]
            account["carried_sha256"] = carried_sha256(models)
    (root / layout.CONTINUATION).write_bytes(canonical_bytes(account))
    rederive(root)
    return root


def _tier(root: Path) -> dict[str, Any]:
    tiers = json.loads((root / layout.TIERS).read_bytes())["tiers"]
    found = [t for t in tiers if t["name"] == "continuation"]
    assert len(found) == 1, tiers
    return dict(found[0])


class TestAConsistentAccount:
    """A bundle whose account agrees with it verifies, and says it was continued."""

    def test_it_verifies_with_the_continuation_tier_passing(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """The tier, after the six, passes, and its evidence names what was carried (how many
        of the sealed partitions, their slots and run records, the interruption and the digest
        of the carried list) and what ran (the unfinished one among them)."""
        root = _continued(small_bundle, tmp_path)
        assert verify(root) == []
        account = json.loads((root / layout.CONTINUATION).read_bytes())
        tier = _tier(root)
        assert tier["verdict"] == "pass" and tier["reason"] is None
        slots = sum(c["slots"] for c in account["carried"])
        records = sum(c["attempts"] for c in account["carried"])
        assert tier["evidence"] == [
            f"carried 2 of 4 partitions whole (c00-c01: {slots:,} slots, {records:,} run "
            f"records) from an interrupted study (SIGINT), sha256 {account['carried_sha256']}",
            "ran 2 partition(s) (c02-c03); 1 begun there and left unfinished ran again from the "
            "first slot (c02)",
        ]
        names = [t["name"] for t in json.loads((root / layout.TIERS).read_bytes())["tiers"]]
        assert names[-1] == "continuation" and len(names) == 7

    def test_the_report_and_the_crate_say_it(self, small_bundle: Path, tmp_path: Path) -> None:
        """The report has one line saying the study was continued and how many partitions it
        carried; the RO-Crate lists data/continuation.json as a part; the bundle of the same
        runs without an account has neither (its files are the small bundle's)."""
        root = _continued(small_bundle, tmp_path, interruption=None)
        report = (root / layout.REPORT).read_text("utf-8")
        said = [x for x in report.splitlines() if x.startswith("Continued from")]
        assert said == [
            "Continued from an interrupted study: 2 of 4 partitions carried whole from it, the "
            "rest run here (continuation.json; the continuation tier)."
        ]
        assert "Continued from" not in (small_bundle / layout.REPORT).read_text("utf-8")
        crate = json.loads((root / layout.CRATE).read_bytes())
        parts = {e["@id"] for e in crate["@graph"] if e.get("@type") == "File"}
        # The crate's root is data/: its parts are named below it.
        assert "continuation.json" in parts
        plain = json.loads((small_bundle / layout.CRATE).read_bytes())
        assert "continuation.json" not in {e["@id"] for e in plain["@graph"]}

    def test_nothing_carried_and_nothing_unfinished(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """An interrupted study that finished no partition: nothing carried, all ran."""
        root = _continued(small_bundle, tmp_path, carried=(), unfinished=(), interruption=None)
        assert verify(root) == []
        assert _tier(root)["evidence"][0].startswith("carried none of 4 partitions")

    def test_payload_files_name_it_only_when_asked(self, small_bundle: Path) -> None:
        """``payload_files`` of a bundle without an account is what it was; ``continued=True``
        adds data/continuation.json and nothing else."""
        from repro._json.serde import structure as st
        from repro.models import FrozenProtocol

        fp = st(json.loads((small_bundle / layout.PROTOCOL).read_bytes()), FrozenProtocol, what="p")
        plain = layout.payload_files(fp, SEALED)
        assert layout.CONTINUATION not in plain
        assert sorted([*plain, layout.CONTINUATION]) == layout.payload_files(fp, SEALED, True)


class TestCarriedTimes:
    """A carried partition's attempts ran in the interrupted study: before the continued one
    started, not within its start and end as its own attempts."""

    def test_carried_attempts_after_the_start_are_named(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """Carried attempts timed after the continued study started (moved a day on, every
        file re-derived): times-outside-study, on the first carried times file (the first
        broken times file ends the crate's join)."""
        root = _continued(small_bundle, tmp_path, ran_before=timedelta(days=1))
        findings = verify(root)
        assert {(f.code, f.file) for f in findings} == {
            ("times-outside-study", layout.times_file("c00")),
        }, [f.as_dict() for f in findings]

    def test_attempts_that_ran_here_keep_the_study_s_window(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """A partition that ran (not carried) timed the day before: times-outside-study."""
        root = _continued(small_bundle, tmp_path)
        _shift_times(root, "c03", timedelta(days=-1))
        rederive(root)
        findings = verify(root)
        assert {(f.code, f.file) for f in findings} == {
            ("times-outside-study", layout.times_file("c03"))
        }, [f.as_dict() for f in findings]


class TestTheRuleAlone:
    """continuation_problems, as the study calls it before its manifest exists."""

    def test_a_consistent_account_has_no_problem(self, small_bundle: Path) -> None:
        """The account of the bundle's own files, with the digests and record counts a study
        computes itself, has no problem."""
        account = structure(_account(small_bundle), Continuation, what="continuation")
        digests = {
            n: hashlib.sha256((small_bundle / n).read_bytes()).hexdigest()
            for p in SEALED
            for n in (layout.runs_file(p), layout.times_file(p))
        }
        attempts = {
            p: len((small_bundle / layout.runs_file(p)).read_bytes().splitlines()) for p in SEALED
        }
        assert continuation_problems(account, _seal(small_bundle), digests, attempts, None) == []
        attempts["c00"] += 1
        (problem,) = continuation_problems(account, _seal(small_bundle), digests, attempts, None)
        assert problem.startswith("$.carried[0].attempts:")

    @pytest.mark.slow
    def test_a_huge_account_is_judged_in_one_pass(self, small_bundle: Path) -> None:
        """An account naming a hostile number of partitions (400,000, each twice) is judged by
        lookups, not by comparing every name with every other: the problems come back, each
        list of names cut short, where comparing pairs would take hours (the suite's timeout
        would end the test)."""
        names = tuple(f"x{i}" for i in range(200_000)) * 2
        account = Continuation(
            schema="repro.continuation/1",
            carried_sha256=carried_sha256(()),
            carried=(),
            ran=names,
            unfinished=names,
            interruption=None,
        )
        problems = continuation_problems(account, _seal(small_bundle), {}, {}, None)
        assert any(p.startswith("$.ran: partition(s) named more than once") for p in problems)
        assert any(p.startswith("$: sealed partition(s) neither carried nor ran") for p in problems)
        assert all(len(p) < 2_000 for p in problems)


def _ran(edit: Callable[[list[str]], None]) -> Edit:
    return lambda a: edit(a["ran"])


def _carried(index: int, edit: Callable[[dict[str, Any]], None]) -> Edit:
    return lambda a: edit(a["carried"][index])


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d.__setitem__(key, value)


def _other_digest(files: dict[str, str]) -> None:
    name = layout.times_file("c00")
    files[name] = hashlib.sha256(files[name].encode()).hexdigest()


#: One forgery per rule: the account edited, by the JSON path the problem names.
FORGERIES: dict[str, tuple[Edit, str]] = {
    "a partition neither carried nor ran": (_ran(lambda r: r.remove("c03")), "$"),
    "a partition both carried and ran": (_ran(lambda r: r.insert(0, "c00")), "$.ran"),
    "a partition the seal does not name": (_ran(lambda r: r.append("c09")), "$.ran"),
    "a partition named twice": (_ran(lambda r: r.append("c03")), "$.ran"),
    "ran out of sealed order": (_ran(lambda r: r.reverse()), "$.ran"),
    "carried out of sealed order": (lambda a: a["carried"].reverse(), "$.carried"),
    "an unfinished partition that did not run": (_set("unfinished", ["c00"]), "$.unfinished"),
    "a carried partition's files not its runs and times": (
        _carried(0, lambda c: c["files"].pop(layout.times_file("c00"))),
        "$.carried[0].files",
    ),
    "a carried file's digest not the bundle's": (
        _carried(0, lambda c: _other_digest(c["files"])),
        "$.carried[0].files",
    ),
    "a carried partition's slots not the seal's": (
        _carried(1, lambda c: c.__setitem__("slots", c["slots"] + 1)),
        "$.carried[1].slots",
    ),
    "a carried partition's attempts not its run records": (
        _carried(1, lambda c: c.__setitem__("attempts", c["attempts"] - 1)),
        "$.carried[1].attempts",
    ),
    "an interruption that is no short token": (
        _set("interruption", "killed by the admin"),
        "$.interruption",
    ),
}


def _rejoined(key: str, value: Any) -> Edit:
    return lambda a: a["rejoined"].__setitem__(key, value)


def _drop_checkpoint(files: dict[str, str]) -> None:
    files.pop(layout.checkpoint_file("c00"))


#: One forgery per rule of a stream-seeded study's account (repro.continuation/2), made of the
#: stream bundle: the account edited (or made with other arguments), by the JSON path named.
STREAM_FORGERIES: dict[str, tuple[Edit | None, dict[str, Any], str]] = {
    "the per-run schema": (_set("schema", "repro.continuation/1"), {}, "$.schema"),
    "not the plan's first partitions": (
        None,
        {"carried": ("c01", "c02"), "unfinished": ("c03",)},
        "$.carried",
    ),
    "no rejoined": (lambda a: a.pop("rejoined"), {}, "$.rejoined"),
    "rejoined with nothing carried": (
        lambda a: a.__setitem__("rejoined", {"partition": "c00", "start": 4, "slots": 4}),
        {"carried": (), "unfinished": ()},
        "$.rejoined",
    ),
    "rejoined in another partition": (_rejoined("partition", "c00"), {}, "$.rejoined.partition"),
    "rejoined from a state the checkpoint does not keep last": (
        _rejoined("start", 0),
        {},
        "$.rejoined.start",
    ),
    "rejoined over other slots": (_rejoined("slots", 8), {}, "$.rejoined.slots"),
    "a carried partition's checkpoint not among its files": (
        _carried(0, lambda c: _drop_checkpoint(c["files"])),
        {},
        "$.carried[0].files",
    ),
}


class TestForgedAccounts:
    """Each rule broken alone, every derived file re-derived: one ``continuation-account``
    finding naming the path, the tier failing with it, nothing else named."""

    @pytest.mark.parametrize("case", sorted(FORGERIES))
    def test_each_rule(self, case: str, small_bundle: Path, tmp_path: Path) -> None:
        """The forged account is named by its rule, at the JSON path it breaks, and by nothing
        unrelated; the tier (re-derived, and so stored, fail) names the same problem."""
        edit, path = FORGERIES[case]
        root = _continued(small_bundle, tmp_path, edit)
        findings = verify(root)
        assert {f.code for f in findings} == {"continuation-account"}, [
            f.as_dict() for f in findings
        ]
        assert path in {f.found for f in findings}, [f.as_dict() for f in findings]
        assert all(f.file == layout.CONTINUATION for f in findings)
        tier = _tier(root)
        assert tier["verdict"] == "fail"

    @pytest.mark.parametrize("case", sorted(STREAM_FORGERIES))
    def test_each_stream_rule(self, case: str, stream_bundle: Path, tmp_path: Path) -> None:
        """A stream-seeded study's account broken against one rule alone is named by it, at
        the JSON path it breaks, and by nothing unrelated; the account as a stream study writes
        it verifies."""
        edit, kw, path = STREAM_FORGERIES[case]
        assert verify(_continued(stream_bundle, tmp_path / "good", stream=True)) == []
        root = _continued(stream_bundle, tmp_path, edit, stream=True, **kw)
        findings = verify(root)
        assert {f.code for f in findings} == {"continuation-account"}, [
            f.as_dict() for f in findings
        ]
        assert path in {f.found for f in findings}, [f.as_dict() for f in findings]
        assert _tier(root)["verdict"] == "fail"

    def test_a_stream_account_of_a_per_run_study(self, small_bundle: Path, tmp_path: Path) -> None:
        """repro.continuation/2 (with rejoined) in a bundle whose protocol seeds each run is
        named at $.schema."""

        def as_stream(a: dict[str, Any]) -> None:
            a["schema"] = "repro.continuation/2"
            a["rejoined"] = {"partition": "c01", "start": 0, "slots": 8}

        findings = verify(_continued(small_bundle, tmp_path, as_stream))
        assert {(f.code, f.found) for f in findings} == {("continuation-account", "$.schema")}

    def test_a_carried_list_digest_that_is_not_its_own(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """carried_sha256 left as it was after the carried list changed (a partition's record
        count, and the seal's slots with it, cannot both be changed: so its attempts are): the
        digest is named, as well as the changed count."""
        root = _continued(
            small_bundle,
            tmp_path,
            _carried(0, lambda c: c.__setitem__("attempts", c["attempts"] + 1)),
            rehash=False,
        )
        findings = verify(root)
        assert {f.code for f in findings} == {"continuation-account"}
        assert {f.found for f in findings} == {"$.carried_sha256", "$.carried[0].attempts"}

    def test_an_account_whose_tier_was_left_passing(
        self, small_bundle: Path, tmp_path: Path
    ) -> None:
        """A forger who writes a passing tier over a failing account: the account is named,
        and so is the tier, which differs from its re-derivation."""
        root = _continued(small_bundle, tmp_path, _set("interruption", "nine"))
        tiers = json.loads((root / layout.TIERS).read_bytes())
        for t in tiers["tiers"]:
            if t["name"] == "continuation":
                t["verdict"], t["reason"] = "pass", None
        (root / layout.TIERS).write_bytes(canonical_bytes(tiers))
        reseal(root)
        codes = {f.code for f in verify(root)}
        assert "continuation-account" in codes and len(codes) > 1

    def test_an_account_added_without_re_deriving(self, small_bundle: Path, tmp_path: Path) -> None:
        """An account put in a finished bundle, the manifests regenerated but nothing
        re-derived: the tiers, the report and the crate differ from their re-derivations
        (which hold the continuation), so it does not verify."""
        root = tmp_path / "added"
        shutil.copytree(small_bundle, root)
        (root / layout.CONTINUATION).write_bytes(canonical_bytes(_account(root)))
        reseal(root)
        findings = verify(root)
        assert findings
        assert "continuation-account" not in {f.code for f in findings}
        assert {f.file for f in findings} >= {layout.TIERS}


@pytest.mark.slow
class TestShow:
    """``repro show`` says the study was continued, in the terminal and on the page."""

    def test_at_80_columns(self, small_bundle: Path, tmp_path: Path) -> None:
        """On a terminal 80 columns wide, the line after the bundle's identity says it was
        continued and how many of its partitions were carried, whole on one line."""
        root = _continued(small_bundle, tmp_path)
        status, text = in_pty(["show", str(root)], columns=80)
        assert status == 0, text
        lines = text.splitlines()
        assert max(len(x) for x in lines) <= 80, text
        assert "continued from an interrupted study: 2 of 4 partitions carried" in lines
        plain_status, plain = in_pty(["show", str(small_bundle)], columns=80)
        assert plain_status == 0 and "continued from" not in plain

    def test_the_page_in_chromium(self, small_bundle: Path, tmp_path: Path, chromium: Path) -> None:
        """The page, as headless Chromium builds it, says it below the bundle's identity."""
        root = _continued(small_bundle, tmp_path)
        page = tmp_path / "page.html"
        result = runner.invoke(app, ["show", str(root), "--html", str(page)])
        assert result.exit_code == 0, result.output
        dom = run_chromium(chromium, tmp_path, "--dump-dom", page.as_uri(), timeout=120)
        said = [e.text for e in parse(dom) if e.attrs.get("id") == "continued"]
        assert said == ["Continued from an interrupted study: 2 of 4 partitions carried."]
