"""Common random numbers (``seeding.common``): conditions that differ only in the named factors
(typically the participant) share each replicate's seed, so that a paired comparison of them
is paired episode by episode; without ``common`` every protocol keeps its seeds and its bytes."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import PAIRED, PUBLISHED, ROOT, SMALL, run_study
from repro._json import canonical
from repro._json.serde import structure, to_bytes
from repro._plan.sealing import conditions_of, derive_seed, partition_ref, partitions, shared_seed
from repro._protocol.freeze import freeze
from repro._protocol.load import load_protocol, parse_protocol
from repro._protocol.rules import check_consistency
from repro.models import Condition, Partition, Protocol
from repro.verify import verify

PROTOCOLS = ROOT / "protocols"

#: Each shipped protocol's frozen sha256 and the digest of its plan (the sha256 of its
#: partitions' sha256s, in sealed order), as the code before ``seeding.common`` computed them
#: (commit 505901c): a change to a default, or to how seeds are derived, changes one of them.
SHIPPED: dict[str, tuple[str, str]] = {
    # Changed on purpose twice: the protocol now declares its contrasts, then names its harness
    # and release from its own folder (its plan is the same).
    "agent-gate-eval.json": (
        "ec8cae73ed58854e09fd3252600a591c64064419ed1f5d0a1ea8dca0b5143477",
        "13ef2a4901d64a51304a0306a7d9e660e80326e931ad15cf069b510f18576187",
    ),
    "cage2-ccs-sleeper-per-run.json": (
        "22fe4c16d27e053f00ee73ca5de377b99bcaa64122b087ba939f3f8ee46e7f36",
        "6142c4e61497c8d99115fbd53a66e9f396c7706076943f66d627727cacc6405f",
    ),
    "cage2-ccs-sleeper-reduced.json": (
        "966defba1867713a58dbf117b8b5e846ee8801e784e4ad5dfb7f9b1f853f16a5",
        "0b49990e6f61893309b6c668ba4e68ec45296e70cc02f5f2cbc1590a32038238",
    ),
    "cage2-ccs-sleeper.json": (
        "ebc8929834031aa7f84ae4864c4df6a7518cc20835394c42cdf443361f0b57e1",
        "e3baa5e1da1308d5eb808c649dc1cdcaee2889e292f059bc8e1058baf97d6cf5",
    ),
}

#: The same for some of the tests' protocols (the small one, the published one, the small one in
#: stream seeding), by the same code.
STREAM: dict[str, Any] = {**SMALL, "seeding": {"mode": "stream", "seed": 5}}
TEST_PROTOCOLS: dict[str, tuple[dict[str, Any], str, str]] = {
    "small": (
        SMALL,
        "d6e7cb020e7f55c12e9372073f39ddc4cbd64d1cf89e1fbcf0faea29f1b0fc57",
        "f9e62a66727835789d11b3e3565b002317c7b5cc1e97c3bf10a430f052ec8a4e",
    ),
    "published": (
        PUBLISHED,
        "733b2e9bd7b54104c9704eb76ee7a64a20ed79d8b156a5b677b07fd5bc978930",
        "1435c34e7bf4e815035e5952f9d8b253d640722ad51afa57b80667fbb73e47f4",
    ),
    "stream": (
        STREAM,
        "fdb157bd806ab3fcb96953cfe3948c36032749f0471aa5fad000ae1770fd1dc2",
        "422b2857534a33d03aaab7e0172742aab0de0783ffb30a25a328b2e09a9fca91",
    ),
}


def _plan_digest(protocol: Protocol) -> str:
    refs = b"".join(partition_ref(p).sha256.encode() for p in partitions(protocol))
    return canonical.sha256_hex(refs)


def _parse(data: dict[str, Any]) -> Protocol:
    return parse_protocol(json.dumps(data).encode())


def _seeds_are_derive_seed_s(protocol: Protocol) -> None:
    """Every entry's seed is derive_seed's of its slot (None in stream seeding)."""
    per_run = protocol.seeding.mode == "per-run"
    for part in partitions(protocol):
        for entry in part.entries:
            expected = derive_seed(protocol.seeding.seed, entry.slot) if per_run else None
            assert entry.seed == expected, entry.slot


class TestExistingProtocolsUnchanged:
    """A protocol without ``common`` freezes to the bytes, and seals to the seeds, it did before
    ``common`` existed."""

    @pytest.mark.parametrize("name", sorted(SHIPPED))
    def test_shipped_protocols_keep_their_digest_and_plan(self, name: str) -> None:
        """Each shipped protocol's frozen sha256 and plan digest are the pinned ones, its frozen
        bytes hold no ``common`` key, and every seed is derive_seed's of its slot."""
        protocol = load_protocol(PROTOCOLS / name)
        assert protocol.seeding.common == ()
        assert b'"common"' not in to_bytes(freeze(protocol))
        assert (freeze(protocol).sha256, _plan_digest(protocol)) == SHIPPED[name]
        _seeds_are_derive_seed_s(protocol)

    def test_every_shipped_protocol_is_pinned(self) -> None:
        """No shipped protocol escapes the test above but those made for common random numbers
        and contrasts, and for rliable's aggregates (of runs executed or recorded), which
        declare them (their digests are new, not kept), and the recorded skills pair, made
        later."""
        made_for_contrasts = {
            # The quick start, since it compares one environment's two policies by a contrast
            # rather than average three environments (its first form is the shipped bundle's,
            # docs/examples/quick-start-reduced.json, at 5 runs per condition).
            "gymnasium-classic-control.json",
            "gymnasium-paired-crn.json",
            "gymnasium-paired-independent.json",
            "cage2-sleeper-vs-react.json",
            "cage2-sleeper-vs-react-reduced.json",
            "inspect-arithmetic.json",
            "recorded-inspect.json",
        }
        made_for_rl = {"gymnasium-rl-aggregates.json", "recorded-rliable.json"}
        # The CCS Heuristic row needs what 505901c did not have (a shipped blue agent, a
        # simulator tree pin, the family-wise criterion): its digests are new too.
        made_for_heuristic = {"cage2-ccs-heuristic.json", "cage2-ccs-heuristic-reduced.json"}
        # Runs made elsewhere, which came after common random numbers: no earlier digest to keep.
        made_for_recorded = {"recorded-skills-baseline.json", "recorded-skills-candidate.json"}
        names = {p.name for p in PROTOCOLS.glob("*.json")}
        made = made_for_contrasts | made_for_rl | made_for_heuristic | made_for_recorded
        assert names - made == set(SHIPPED)
        for name in made_for_contrasts:
            assert load_protocol(PROTOCOLS / name).contrasts is not None
        for name in made_for_rl:
            assert load_protocol(PROTOCOLS / name).rl is not None

    @pytest.mark.parametrize("name", sorted(TEST_PROTOCOLS))
    def test_test_protocols_keep_their_digest_and_plan(self, name: str) -> None:
        """So do the tests' small, published and stream-seeded protocols."""
        data, sha256, plan = TEST_PROTOCOLS[name]
        protocol = _parse(data)
        assert b'"common"' not in to_bytes(freeze(protocol))
        assert (freeze(protocol).sha256, _plan_digest(protocol)) == (sha256, plan)
        _seeds_are_derive_seed_s(protocol)

    def test_an_empty_common_written_out_is_the_default(self) -> None:
        """``"common": []`` written in a protocol is the default: the same frozen bytes and
        digest as leaving it out, and the same plan."""
        data = copy.deepcopy(SMALL)
        data["seeding"]["common"] = []
        written, left_out = _parse(data), _parse(SMALL)
        assert to_bytes(freeze(written)) == to_bytes(freeze(left_out))
        assert [to_bytes(p) for p in partitions(written)] == [
            to_bytes(p) for p in partitions(left_out)
        ]


# --------------------------------------------------------------------------- the seeds

#: Two factors (so that one can be shared and the other not), two participants, four replicates.
CRN: dict[str, Any] = {
    **SMALL,
    "id": "crn",
    "matrix": [
        {"name": "env_id", "levels": ["CartPole-v1", "MountainCar-v0"]},
        {"name": "max_episode_steps", "levels": [50, 100]},
    ],
    "runs_per_condition": 4,
}


def _with_common(data: dict[str, Any], common: list[str]) -> Protocol:
    data = copy.deepcopy(data)
    data["seeding"]["common"] = common
    return _parse(data)


def _seeds(protocol: Protocol) -> dict[tuple[str, int], int | None]:
    """(condition, replicate) -> seed."""
    return {(e.condition, e.replicate): e.seed for p in partitions(protocol) for e in p.entries}


def _key(condition: Condition, without: set[str]) -> tuple[Any, ...]:
    """What a condition keeps of its factors and participant once ``without`` is shared."""
    kept = tuple(sorted((k, str(v)) for k, v in condition.factors.items() if k not in without))
    return kept + (() if "participant" in without else (condition.participant,))


class TestSharedSeeds:
    """What ``common`` shares and what it does not."""

    def test_seed_definition(self) -> None:
        """A shared seed is the first 8 bytes of sha256("repro.seed/2:<master>:<key>"),
        big-endian, shifted right by one bit, where <key> is the canonical JSON (sorted keys,
        compact) of the condition's factor levels not shared, its participant unless shared,
        and the replicate; the sealed plan carries exactly that seed."""
        condition = Condition(
            id="c02",
            factors={"env_id": "CartPole-v1", "max_episode_steps": 100},
            participant="random",
        )
        text = b'repro.seed/2:7:{"factors":{"max_episode_steps":100},"replicate":3}'
        digest = hashlib.sha256(text).digest()
        shared = int.from_bytes(digest[:8], "big") >> 1
        assert shared_seed(7, condition, 3, ("participant", "env_id")) == shared
        kept = b'repro.seed/2:7:{"factors":{"env_id":"CartPole-v1"},"participant":"random",'
        kept += b'"replicate":3}'
        digest = hashlib.sha256(kept).digest()
        assert shared_seed(7, condition, 3, ("max_episode_steps",)) == (
            int.from_bytes(digest[:8], "big") >> 1
        )
        protocol = _with_common(CRN, ["participant", "env_id"])
        (c02,) = [c for c in conditions_of(protocol) if c.id == "c02"]
        assert c02 == condition
        assert _seeds(protocol)[("c02", 3)] == shared

    def test_participants_share_replicate_seeds(self) -> None:
        """With ``common: ["participant"]`` the two participants of a matrix cell have equal
        seeds replicate by replicate; conditions of another cell (another env_id or another
        max_episode_steps) do not, and the replicates of one condition all differ."""
        protocol = _with_common(CRN, ["participant"])
        seeds = _seeds(protocol)
        conditions = conditions_of(protocol)
        runs = protocol.runs_per_condition
        for a, b in itertools.combinations(conditions, 2):
            for r in range(runs):
                same_cell = a.factors == b.factors
                assert (seeds[a.id, r] == seeds[b.id, r]) is same_cell, (a, b, r)
        for c in conditions:
            assert len({seeds[c.id, r] for r in range(runs)}) == runs
        assert all(s is not None and 0 <= s < 2**63 for s in seeds.values())

    def test_sharing_a_factor_and_the_participant(self) -> None:
        """With ``common: ["participant", "env_id"]`` the conditions that differ only in
        participant and env_id share seeds, and those of another max_episode_steps do not."""
        protocol = _with_common(CRN, ["participant", "env_id"])
        seeds = _seeds(protocol)
        for a, b in itertools.combinations(conditions_of(protocol), 2):
            same = a.factors["max_episode_steps"] == b.factors["max_episode_steps"]
            for r in range(protocol.runs_per_condition):
                assert (seeds[a.id, r] == seeds[b.id, r]) is same

    def test_everything_shared(self) -> None:
        """With every factor and the participant in ``common`` all conditions share each
        replicate's seed, and the seeds still differ across replicates."""
        protocol = _with_common(SMALL, ["participant", "env_id"])
        seeds = _seeds(protocol)
        conditions = conditions_of(protocol)
        assert len(conditions) == 4
        by_replicate = [{seeds[c.id, r] for c in conditions} for r in range(8)]
        assert all(len(s) == 1 for s in by_replicate)
        assert len(set().union(*by_replicate)) == 8

    def test_no_shared_seed_is_a_slot_seed(self) -> None:
        """The shared seeds are of another text than derive_seed's: none equals the seed the
        same slot has without ``common``, and they depend on the master seed."""
        shared = _seeds(_with_common(SMALL, ["participant"]))
        own = _seeds(_parse(SMALL))
        assert all(shared[k] != own[k] for k in own)
        other = copy.deepcopy(SMALL)
        other["seeding"]["seed"] = 8
        assert _seeds(_with_common(other, ["participant"])).keys() == shared.keys()
        assert all(
            a != b
            for a, b in zip(
                _seeds(_with_common(other, ["participant"])).values(), shared.values(), strict=True
            )
        )

    def test_seeds_follow_levels_not_condition_ids(self) -> None:
        """A condition's shared seeds depend on its levels, not on its place in the matrix: a
        level added before it (which renumbers every condition) leaves them as they were."""
        before = _with_common(SMALL, ["participant"])
        data = copy.deepcopy(SMALL)
        data["matrix"][0]["levels"].insert(0, "Acrobot-v1")
        after = _with_common(data, ["participant"])

        def by_levels(protocol: Protocol) -> dict[tuple[Any, ...], tuple[int | None, ...]]:
            ids = {c.id: _key(c, set()) for c in conditions_of(protocol)}
            out: dict[tuple[Any, ...], tuple[int | None, ...]] = {}
            for part in partitions(protocol):
                out[ids[part.condition]] = tuple(e.seed for e in part.entries)
            return out

        old, new = by_levels(before), by_levels(after)
        assert old.items() <= new.items()

    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.integers(1, 3), min_size=1, max_size=3),
        st.integers(1, 3),
        st.integers(1, 4),
        st.data(),
    )
    def test_equal_seeds_exactly_when_what_is_kept_is_equal(
        self, sizes: list[int], participants: int, runs: int, data: st.DataObject
    ) -> None:
        """For any matrix, participants and choice of ``common``, two slots have equal seeds
        exactly when they are of the same replicate and their conditions agree on every factor
        (and the participant) that ``common`` does not name."""
        names = [f"f{i}" for i in range(len(sizes))] + ["participant"]
        common = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        protocol = _generated(sizes, participants, runs, common)
        check_consistency(protocol)
        conditions = {c.id: c for c in conditions_of(protocol)}
        entries = [(e, conditions[e.condition]) for p in partitions(protocol) for e in p.entries]
        for (a, ca), (b, cb) in itertools.combinations(entries, 2):
            same = a.replicate == b.replicate and _key(ca, set(common)) == _key(cb, set(common))
            assert (a.seed == b.seed) is same, (a, b, common)

    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(st.integers(1, 3), min_size=1, max_size=3),
        st.integers(1, 3),
        st.integers(1, 4),
    )
    def test_without_common_every_seed_is_derive_seed_s(
        self, sizes: list[int], participants: int, runs: int
    ) -> None:
        """For any matrix and participants, without ``common`` each slot's seed is
        derive_seed(master, slot), as before ``common`` existed."""
        _seeds_are_derive_seed_s(_generated(sizes, participants, runs, []))


def _generated(sizes: list[int], participants: int, runs: int, common: list[str]) -> Protocol:
    data: dict[str, Any] = copy.deepcopy(SMALL)
    data["matrix"] = [
        {"name": f"f{i}", "levels": [f"l{j}" if i % 2 else j for j in range(n)]}
        for i, n in enumerate(sizes)
    ]
    data["participants"] = [{"id": f"p{i}", "kind": "random"} for i in range(participants)]
    data["runs_per_condition"] = runs
    data["seeding"]["common"] = common
    return structure(data, Protocol, what="protocol")


# --------------------------------------------------------------------------- a study


def _records(root: Path, partition: str) -> list[dict[str, Any]]:
    lines = (root / f"data/runs/{partition}.jsonl").read_bytes().splitlines()
    return [json.loads(line) for line in lines]


def _plan(root: Path, partition: str) -> Partition:
    data = canonical.loads((root / f"data/plans/{partition}.json").read_bytes(), what="plan")
    return structure(data, Partition, what="plan")


@pytest.mark.slow
class TestPairedStudy:
    """A gymnasium study under common random numbers."""

    def test_paired_participants_run_the_same_episodes(
        self, write_protocol: Callable[..., Path], tmp_path: Path
    ) -> None:
        """Two ``random`` participants under ``common: ["participant"]`` are sealed the same
        seed replicate by replicate and so run the same episodes (same trace digests, steps
        and measures); the bundle verifies. Without ``common`` the same two participants run
        different episodes."""
        root = run_study(write_protocol(PAIRED), tmp_path / "paired")
        assert verify(root) == []
        a, b = _plan(root, "c00"), _plan(root, "c01")
        assert [e.seed for e in a.entries] == [e.seed for e in b.entries]
        assert len({e.seed for e in a.entries}) == 4
        runs_a, runs_b = _records(root, "c00"), _records(root, "c01")
        assert [r["status"] for r in runs_a + runs_b] == ["valid"] * 8
        keys = ("trace_sha256", "steps", "measure", "step_rewards")
        assert [[r[k] for k in keys] for r in runs_a] == [[r[k] for k in keys] for r in runs_b]
        assert len({r["trace_sha256"] for r in runs_a}) == 4

        unpaired = copy.deepcopy(PAIRED)
        del unpaired["seeding"]["common"]
        other = run_study(write_protocol(unpaired, "unpaired.json"), tmp_path / "unpaired")
        traces = [[r["trace_sha256"] for r in _records(other, p)] for p in ("c00", "c01")]
        assert all(x != y for x, y in zip(*traces, strict=True))
