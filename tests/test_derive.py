"""Derivations are pure functions of bundle data, whatever order the runs are read in."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SMALL
from repro._derive.derivation import derive, tally_partitions, tally_records
from repro._derive.tally import measure_of
from repro._derive.validity import judge
from repro._disclosure import FileHits, scan_hits
from repro._json import canonical
from repro._json.serde import structure, to_bytes
from repro._layout import is_derivation_input
from repro.models import AdapterFacts, FrozenProtocol, Ledger, Partition, Protocol, RunRecord, Seal


def _input_disclosures(bundle: Path) -> list[FileHits]:
    """Scan hits in the derivation's input files, as verify finds them."""
    names = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    return [scan_hits(n, (bundle / n).read_bytes()) for n in names if is_derivation_input(n)]


def _load(bundle: Path) -> tuple[FrozenProtocol, Seal, list[Partition], list[RunRecord], Ledger]:
    data = bundle / "data"

    def read(name: str, cls: type) -> object:
        return structure(
            canonical.loads((data / name).read_bytes(), max_bytes=1 << 30), cls, what=name
        )

    fp = read("protocol.json", FrozenProtocol)
    seal = read("plans/seal.json", Seal)
    parts = [read(ref.file, Partition) for ref in seal.partitions]  # type: ignore[attr-defined]
    records = [
        structure(json.loads(line), RunRecord, what="run")
        for ref in seal.partitions  # type: ignore[attr-defined]
        for line in (data / f"runs/{ref.id}.jsonl").read_text().splitlines()
    ]
    ledger = read("source-ledger.json", Ledger)
    return fp, seal, parts, records, ledger  # type: ignore[return-value]


class TestOrderInvariance:
    """Every derivation is invariant to the order in which run records are read."""

    @settings(max_examples=15, deadline=None)
    @given(st.randoms(use_true_random=False))
    def test_shuffled_records_give_identical_bytes(
        self, small_bundle: Path, rnd: random.Random
    ) -> None:
        """Aggregates, tiers, ledger and report come out byte-identical from shuffled records."""
        fp, seal, parts, records, ledger = _load(small_bundle)
        shuffled = records[:]
        rnd.shuffle(shuffled)
        hits = _input_disclosures(small_bundle)
        a = derive(fp, seal, tally_records(fp, parts, records, ledger), ledger, hits)
        b = derive(fp, seal, tally_records(fp, parts, shuffled, ledger), ledger, hits)
        assert to_bytes(a.aggregates) == to_bytes(b.aggregates)
        assert to_bytes(a.tiers) == to_bytes(b.tiers)
        assert to_bytes(a.ledger) == to_bytes(b.ledger)
        assert a.report == b.report

    def test_derivation_reproduces_stored_files(self, small_bundle: Path) -> None:
        """Re-deriving from the stored protocol, plan and runs gives the stored bytes."""
        fp, seal, parts, records, ledger = _load(small_bundle)
        runs = tally_records(fp, parts, records, ledger)
        d = derive(fp, seal, runs, ledger, _input_disclosures(small_bundle))
        data = small_bundle / "data"
        assert to_bytes(d.aggregates) == (data / "aggregates.json").read_bytes()
        assert to_bytes(d.tiers) == (data / "tiers.json").read_bytes()
        assert d.report.encode() == (data / "validation-report.md").read_bytes()


class TestPartitionByPartition:
    """A study tallies its runs files one partition at a time and adds the tallies up, as
    verify does; that gives the tally of every record at once."""

    def test_partition_tallies_added_up_equal_the_whole_tally(self, small_bundle: Path) -> None:
        """derive() of tally_partitions (each partition's own records) gives the bytes derive()
        of tally_records (all records together) gives."""
        fp, seal, parts, records, ledger = _load(small_bundle)
        hits = _input_disclosures(small_bundle)
        by_partition = [(p, [r for r in records if r.condition == p.condition]) for p in parts]
        assert sum(len(rs) for _, rs in by_partition) == len(records)
        whole = derive(fp, seal, tally_records(fp, parts, records, ledger), ledger, hits)
        merged = derive(fp, seal, tally_partitions(fp, by_partition, ledger), ledger, hits)
        for name in ("aggregates", "tiers", "ledger"):
            assert to_bytes(getattr(merged, name)) == to_bytes(getattr(whole, name)), name
        assert merged.report == whole.report


class TestLazyPlan:
    """The sealed plan expands its partitions when they are read, each as the whole plan has
    it."""

    def test_each_partition_read_alone_is_the_one_the_plan_iterates(
        self, small_bundle: Path
    ) -> None:
        """PlanPartitions[i] (one partition expanded alone, with its slots' order after every
        earlier condition's) equals the i-th of the iteration and of the stored plan, and its
        reference is the seal's."""
        from repro._plan.sealing import PlanPartitions, partition_ref

        fp, seal, parts, _, _ = _load(small_bundle)
        plan = PlanPartitions(fp.protocol)
        assert len(plan) == len(parts) == len(seal.partitions)
        assert list(plan) == parts
        for i in reversed(range(len(plan))):
            assert plan[i] == parts[i]
            assert partition_ref(plan[i]) == seal.partitions[i]
        assert plan[-1] == parts[-1]
        assert list(plan[1:]) == parts[1:]


class TestJudgedWithTheSum:
    """verify judges a record with the sum of its step rewards it made for the tally: the
    verdict is the one judge gives when it sums them itself."""

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(
        rewards=st.none() | st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=6),
        reported=st.none() | st.floats(allow_nan=False),
        steps=st.none() | st.integers(0, 6),
        inputs=st.sampled_from(["step-rewards", "reported"]),
        bounds=st.sampled_from([(None, None), (-1.0, 1.0), (0.0, None)]),
    )
    def test_same_verdict(
        self,
        rewards: list[float] | None,
        reported: float | None,
        steps: int | None,
        inputs: str,
        bounds: tuple[float | None, float | None],
    ) -> None:
        data = copy.deepcopy(SMALL)
        data["measure"] = {**data["measure"], "minimum": bounds[0], "maximum": bounds[1]}
        protocol = structure(data, Protocol, what="protocol")
        facts = AdapterFacts("a", "1", "full", "n", inputs)  # type: ignore[arg-type]
        try:
            summed = measure_of(rewards) if rewards is not None else None
        except OverflowError:  # verify names the record before it judges it
            return
        alone = judge(protocol, facts, None, rewards, reported, steps, None)
        assert judge(protocol, facts, None, rewards, reported, steps, None, summed=summed) == alone
