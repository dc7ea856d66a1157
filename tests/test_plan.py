"""The sealed plan: slot IDs, seeds, partitions."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SMALL
from repro._json.serde import structure, to_bytes
from repro._plan.sealing import derive_seed, partition_ref, seal, slot_id, slot_ids
from repro._protocol.freeze import freeze
from repro.models import Protocol, Source

levels = st.lists(
    st.text(alphabet="abcdefgh", min_size=1, max_size=4), min_size=1, max_size=4, unique=True
)


def _protocol(factors: list[list[str]], participants: int, runs: int) -> Protocol:
    data: dict[str, Any] = copy.deepcopy(SMALL)
    data["matrix"] = [{"name": f"f{i}", "levels": lv} for i, lv in enumerate(factors)]
    data["participants"] = [{"id": f"p{i}", "kind": "random"} for i in range(participants)]
    data["runs_per_condition"] = runs
    return structure(data, Protocol, what="protocol")


class TestSlotIds:
    """Slot IDs are unique, and stable for a given protocol."""

    @pytest.mark.slow
    @settings(max_examples=50, deadline=None)
    @given(st.lists(levels, min_size=1, max_size=3), st.integers(1, 3), st.integers(1, 120))
    def test_unique_and_stable(
        self, factors: list[list[str]], participants: int, runs: int
    ) -> None:
        """Every slot ID appears once, and expanding the same protocol again gives the same IDs."""
        p = _protocol(factors, participants, runs)
        ids = slot_ids(p)
        conditions = participants
        for f in factors:
            conditions *= len(f)
        assert len(ids) == len(set(ids)) == conditions * runs
        assert slot_ids(_protocol(factors, participants, runs)) == ids

    def test_order_first_factor_outermost(self) -> None:
        """Conditions run with the first factor outermost and participants innermost."""
        p = _protocol([["a", "b"], ["x", "y"]], 2, 1)
        plan = seal(p, "0" * 64, ())
        cells = [(c.factors["f0"], c.factors["f1"], c.participant) for c in plan.seal.conditions]
        assert cells[:3] == [("a", "x", "p0"), ("a", "x", "p1"), ("a", "y", "p0")]
        assert [e.order for e in plan.entries()] == list(range(8))


@pytest.mark.slow
class TestSeal:
    """Sealing is a pure function of the protocol and its sources."""

    def test_seal_is_deterministic(self) -> None:
        """Two seals of one protocol have identical bytes, partition by partition."""
        p = structure(copy.deepcopy(SMALL), Protocol, what="protocol")
        fp = freeze(p)
        src = (Source(kind="package", role="x", name="numpy", version="1"),)
        a, b = seal(p, fp.sha256, src), seal(p, fp.sha256, src)
        assert to_bytes(a.seal) == to_bytes(b.seal)
        assert [to_bytes(x) for x in a.partitions] == [to_bytes(x) for x in b.partitions]

    def test_per_run_seeds_depend_on_slot_and_master(self) -> None:
        """Per-run seeds are 63-bit, differ across slots and across master seeds."""
        seeds = {derive_seed(7, f"c00-r{i:04d}") for i in range(1000)}
        assert len(seeds) == 1000
        assert all(0 <= s < 2**63 for s in seeds)
        assert derive_seed(7, "c00-r0000") != derive_seed(8, "c00-r0000")

    def test_per_run_seed_definition(self) -> None:
        """A per-run seed is the first 8 bytes of sha256("repro.seed/1:<master>:<slot>"),
        big-endian, shifted right by one bit; the sealed plan carries exactly that seed."""
        digest = hashlib.sha256(b"repro.seed/1:7:c01-r0003").digest()
        assert derive_seed(7, "c01-r0003") == int.from_bytes(digest[:8], "big") >> 1
        p = structure(copy.deepcopy(SMALL), Protocol, what="protocol")
        entry = next(e for e in seal(p, "0" * 64, ()).entries() if e.slot == "c01-r0003")
        assert entry.seed == derive_seed(SMALL["seeding"]["seed"], "c01-r0003")

    def test_stream_mode_has_no_per_run_seed(self) -> None:
        """In stream mode the plan carries no per-run seed: the stream is set once."""
        data = copy.deepcopy(SMALL)
        data["seeding"] = {"mode": "stream", "seed": 153, "statement": "random.seed(153)"}
        p = structure(data, Protocol, what="protocol")
        assert all(e.seed is None for e in seal(p, "0" * 64, ()).entries())

    def test_exclusions_are_in_the_plan(self) -> None:
        """A declared exclusion marks its slot in the sealed plan with the reason."""
        data = copy.deepcopy(SMALL)
        data["exclusions"] = [{"slot": "c01-r0003", "reason": "known bad"}]
        p = structure(data, Protocol, what="protocol")
        marked = [e for e in seal(p, "0" * 64, ()).entries() if e.excluded]
        assert [(e.slot, e.excluded) for e in marked] == [("c01-r0003", "known bad")]

    @settings(max_examples=30, deadline=None)
    @given(st.lists(levels, min_size=1, max_size=2), st.integers(1, 2), st.integers(1, 12_000))
    def test_partitions_as_the_seal_digests_them(
        self, factors: list[list[str]], participants: int, runs: int
    ) -> None:
        """Each partition's slot IDs are slot_id's, and the seal digests its canonical bytes
        (partition_ref writes them without looking for non-finite numbers, which a partition
        never holds)."""
        p = _protocol(factors, participants, runs)
        plan = seal(p, "0" * 64, ())
        assert [e.slot for e in plan.entries()] == slot_ids(p)
        for ref, part in zip(plan.seal.partitions, plan.partitions, strict=True):
            assert ref == partition_ref(part)
            assert ref.sha256 == hashlib.sha256(to_bytes(part)).hexdigest()
            assert [e.slot for e in part.entries] == [
                slot_id(part.condition, e.replicate, runs) for e in part.entries
            ]
