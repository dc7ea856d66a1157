"""JSON Schemas in schemas/ describe the protocol and every bundle file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tools.schemas import generate

from conftest import ROOT, SMALL
from repro import models
from repro._json import schemas
from repro._json.serde import structure, unstructure
from repro._plan.streams import checkpoint_of
from repro._protocol.load import strip_comments
from repro.errors import BadInput
from repro.models import (
    CarriedPartition,
    CellScore,
    CheckResult,
    CheckSummary,
    Continuation,
    ContrastInterval,
    ContrastResult,
    ContrastsFile,
    GateResult,
    RLAggregates,
    RLImprovementEstimate,
    RLParticipant,
    RLProfilePoint,
    RLStatisticEstimate,
    RunScore,
    Scores,
)
from repro.models._constraints import Constraint, OptionalValidator

FILES = {
    "data/protocol.json": "frozen-protocol",
    "data/plans/seal.json": "seal",
    "data/aggregates.json": "aggregates",
    "data/tiers.json": "tiers",
    "data/source-ledger.json": "source-ledger",
    "data/environment.json": "environment",
}


class TestSchemas:
    """The committed schemas are current, valid, and accept real outputs."""

    @pytest.mark.parametrize("name", sorted(schemas.SCHEMAS))
    def test_committed_schema_is_current(self, name: str) -> None:
        """schemas/<name>.schema.json equals what the models generate (python tools/schemas.py)."""
        committed = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())
        assert committed == generate(name)
        jsonschema.Draft202012Validator.check_schema(committed)

    @pytest.mark.parametrize(("file", "kind"), sorted(FILES.items()))
    def test_real_outputs_validate(self, small_bundle: Path, file: str, kind: str) -> None:
        """Each file of a real bundle validates against its schema with jsonschema."""
        jsonschema.validate(json.loads((small_bundle / file).read_text()), schemas.load(kind))

    @pytest.mark.slow
    def test_partitions_and_runs_validate(self, small_bundle: Path) -> None:
        """Every partition and every run record validates."""
        for path in (small_bundle / "data/plans").glob("c*.json"):
            jsonschema.validate(json.loads(path.read_text()), schemas.load("partition"))
        for path in (small_bundle / "data/runs").glob("*.jsonl"):
            for line in path.read_text().splitlines():
                jsonschema.validate(json.loads(line), schemas.load("run-record"))

    @pytest.mark.parametrize(
        "path", sorted((ROOT / "protocols").glob("*.json")), ids=lambda p: p.name
    )
    def test_shipped_protocols_validate(self, path: Path) -> None:
        """Every protocol in protocols/ validates against the protocol schema, once its
        "$comment" keys are removed as the loader removes them."""
        data = strip_comments(json.loads(path.read_text()))
        jsonschema.validate(data, schemas.load("protocol"))

    def test_wrong_bundle_file_is_rejected(self, small_bundle: Path) -> None:
        """A schema rejects an unknown key: the schemas are strict, like the loader."""
        data = json.loads((small_bundle / "data/aggregates.json").read_text())
        data["extra"] = 1
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, schemas.load("aggregates"))


#: The keywords a field's constraint adds to the schema of its type.
CONSTRAINT_KEYWORDS = frozenset(
    {
        "pattern",
        "minimum",
        "exclusiveMinimum",
        "maximum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
    }
)


def _stated(prop: dict[str, Any]) -> set[str]:
    """The constraint keywords in a property, its items and the branches of its ``anyOf``."""
    found = set(prop) & CONSTRAINT_KEYWORDS
    for inner in [*([prop["items"]] if "items" in prop else []), *prop.get("anyOf", [])]:
        found |= _stated(inner)
    return found


def _fields(name: str) -> list[tuple[str, attrs.Attribute[Any], dict[str, Any]]]:
    """(model.field, field, its property) for every field of every object type of a schema."""
    schema = schemas.load(name)
    bodies = {schemas.SCHEMAS[name].__name__: schema, **schema.get("$defs", {})}
    return [
        (f"{model}.{field.name}", field, body["properties"][field.name])
        for model, body in bodies.items()
        for field in attrs.fields(getattr(models, model))
    ]


class TestConstraintsStated:
    """The schemas state the models' field constraints, read from the same attrs validators as
    the models' refusals and the protocol reference."""

    def test_protocol_schema_states_them(self) -> None:
        """A few of the protocol's: an identifier's pattern, a count's minimum, a seed's bounds,
        a level's, a matrix that must not be empty, and a licence's pattern, beside the choice of
        a string or null (null passes a pattern)."""
        schema = schemas.load("protocol")
        properties, defs = schema["properties"], schema["$defs"]
        assert properties["id"] == {
            "type": "string",
            "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        }
        assert properties["runs_per_condition"] == {"type": "integer", "minimum": 1}
        assert properties["matrix"]["minItems"] == 1
        assert defs["Seeding"]["properties"]["seed"] == {
            "type": "integer",
            "minimum": 0,
            "exclusiveMaximum": 2**63,
        }
        assert defs["Interval"]["properties"]["level"] == {
            "type": "number",
            "minimum": 0.5,
            "exclusiveMaximum": 1.0,
        }
        assert properties["license"]["pattern"].startswith("^[A-Za-z0-9]")
        assert properties["license"]["anyOf"] == [{"type": "string"}, {"type": "null"}]

    def test_bundle_digests_state_their_pattern(self) -> None:
        """The digests of bundle files are 64 lower-case hex digits in their schemas too."""
        hex64 = "^[0-9a-f]{64}$"
        seal = schemas.load("seal")
        assert seal["properties"]["protocol_sha256"]["pattern"] == hex64
        assert seal["$defs"]["PartitionRef"]["properties"]["sha256"]["pattern"] == hex64
        record = schemas.load("run-record")["properties"]
        assert record["trace_sha256"] == {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "pattern": hex64,
        }

    @pytest.mark.parametrize("name", sorted(schemas.SCHEMAS))
    def test_every_constraint_stated_or_said_why_not(self, name: str) -> None:
        """A field whose constraint the schemas state (``in_schema``) has a constraint keyword in
        its property; any other field (no constraint, or one stated by the model alone: a
        finite number, a UTC time, the causes of lost session opens) has none."""
        for where, field, prop in _fields(name):
            validator: Any = field.validator
            if isinstance(validator, OptionalValidator):
                validator = validator.validator
            if validator is None or not validator.in_schema:
                assert not _stated(prop), where
            else:
                assert isinstance(validator, Constraint), where
                assert _stated(prop), where


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=5,
)


_SCORES = Scores(
    schema="repro.scores/1",
    protocol_sha256="0" * 64,
    level=0.95,
    runs=(
        RunScore(
            attempt_id="c00-r0000-a1",
            condition="c00",
            checks=(CheckResult("verdict", True, {"found": "block", "expected": "block"}),),
            category="catch",
        ),
    ),
    cells=(
        CellScore(
            condition="c00",
            factors={"scenario": "s1", "runs": 3},
            participant="agent",
            stratum="holdout",
            valid_runs=2,
            superseded_runs=1,
            checks=(CheckSummary("verdict", 1, 2, 0.5, 0.09, 0.91, False),),
            categories={"catch": 1, "miss": 1},
            agreement="split",
            median_measure=2.5,
            note=None,
        ),
    ),
    gates=(GateResult("completeness", False, "1 of 3 slots failed: timeout (1)"),),
)


_CONTRASTS = ContrastsFile(
    schema="repro.contrasts/1",
    protocol_sha256="0" * 64,
    multiplicity="holm",
    contrasts=(
        ContrastResult(
            id="a-better",
            direction="superiority",
            pairing="paired",
            better="higher",
            margin=0.0,
            level=0.95,
            primary=True,
            a=("c00",),
            b=("c01",),
            n_a=8,
            n_b=7,
            pairs=7,
            incomplete_pairs=1,
            estimate=1.5,
            se=0.5,
            df=6.0,
            interval=ContrastInterval("t", 0.95, 0.27, 2.73),
            statistic=3.0,
            p_value=0.012,
            p_adjusted=0.024,
            verdict="holds",
            reason="adjusted p-value 0.024 is below 0.05",
        ),
    ),
)

#: A continued study's account: two partitions carried, two ran, one of them begun before.
_CONTINUATION = Continuation(
    schema="repro.continuation/1",
    carried_sha256="1" * 64,
    carried=(
        CarriedPartition(
            "c00", {"data/runs/c00.jsonl": "2" * 64, "data/times/c00.jsonl": "3" * 64}, 8, 9
        ),
        CarriedPartition(
            "c01", {"data/runs/c01.jsonl": "4" * 64, "data/times/c01.jsonl": "5" * 64}, 8, 8
        ),
    ),
    ran=("c02", "c03"),
    unfinished=("c02",),
    interruption="SIGINT",
)

_RL = RLAggregates(
    schema="repro.rl-aggregates/1",
    protocol_sha256="0" * 64,
    measure="episode_return",
    task_factor="env_id",
    tasks=("CartPole-v1", 3),
    normalized=True,
    level=0.95,
    resamples=2000,
    seed=2021,
    sampler="rliable",
    gamma=1.0,
    distribution="runs",
    participants=(
        RLParticipant(
            participant="random",
            conditions=("c00", "c02"),
            valid=(8, 7),
            runs=7,
            incomplete=1,
            statistics=(
                RLStatisticEstimate("iqm", 0.25, 0.2, 0.3),
                RLStatisticEstimate("optimality-gap", None, None, None),
            ),
            profile=(RLProfilePoint(0.5, 0.25, 0.0, 0.5),),
        ),
    ),
    improvements=(RLImprovementEstimate("random", "push-left", 7, 0, None, None, None),),
)

#: A protocol that declares contrasts, for the protocol schema's samples.
_CONTRASTED = {
    **SMALL,
    "contrasts": {
        "family": [
            {
                "id": "a-better",
                "a": {"participant": "random"},
                "b": {"participant": "push-left"},
                "direction": "non-inferiority",
                "margin": 1.0,
                "better": "lower",
            }
        ]
    },
}


#: A protocol with an rl section, every field of it given.
_WITH_RL = {
    **SMALL,
    "rl": {
        "task_factor": "env_id",
        "normalization": [
            {"task": "CartPole-v1", "low": 0.0, "high": 500.0},
            {"task": "MountainCar-v0", "low": -200.0, "high": 0.0},
        ],
        "statistics": ["iqm", "optimality-gap"],
        "gamma": 0.9,
        "bootstrap": {"resamples": 500, "seed": 3, "level": 0.9, "sampler": "rliable"},
        "improvements": [{"x": "random", "y": "push-left"}],
        "taus": [0.25, 0.5],
        "distribution": "tasks",
    },
}


def _samples(bundle: Path) -> dict[str, list[Any]]:
    """Real JSON values of each schema's kind."""
    data = bundle / "data"
    samples = {kind: [json.loads((bundle / file).read_text())] for file, kind in FILES.items()}
    samples["partition"] = [json.loads((data / "plans/c00.json").read_text())]
    samples["run-record"] = [json.loads((data / "runs/c00.jsonl").read_text().splitlines()[0])]
    samples["checkpoint"] = [unstructure(checkpoint_of("c00", ("seed", 153)))]
    samples["attempt-times"] = [json.loads((data / "times/c00.jsonl").read_text().splitlines()[0])]
    samples["protocol"] = [
        json.loads((ROOT / "protocols" / name).read_text())
        for name in ("cage2-ccs-sleeper.json", "agent-gate-eval.json")
    ] + [_CONTRASTED, _WITH_RL]
    samples["scores"] = [unstructure(_SCORES)]
    samples["contrasts"] = [unstructure(_CONTRASTS)]
    samples["rl-aggregates"] = [unstructure(_RL)]
    samples["continuation"] = [unstructure(_CONTINUATION)]
    return samples


def _alike(value: Any) -> st.SearchStrategy[Any]:
    """Values of the same JSON type as ``value``: what a model mostly accepts."""
    if isinstance(value, bool) or value is None:
        return st.booleans() | st.none()
    if isinstance(value, int):
        return st.integers(min_value=-(2**64), max_value=2**64)
    if isinstance(value, float):
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5)
    if isinstance(value, str):
        return st.text(max_size=8) | st.sampled_from(["valid", "failed", "normal", "a" * 64])
    if isinstance(value, list):
        return st.lists(st.sampled_from(value), max_size=len(value)) if value else st.just([])
    return st.just(value)


def _places(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in a JSON value, the root's holder first."""
    out: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            out.append((node, key))
            if isinstance(child, (dict, list)):
                stack.append(child)
    return out


@pytest.mark.slow
class TestSchemasAcceptWhatModelsAccept:
    """verify consults a schema only to name what its model refuses (the model is structured
    first), which gives the findings of before only if every value a model accepts its schema
    accepts too: the schema is generated from the model, and the model is the stricter."""

    def test_every_kind_has_a_sample(self, small_bundle: Path) -> None:
        """The property below is tried on every schema."""
        assert sorted(_samples(small_bundle)) == sorted(schemas.SCHEMAS)

    @settings(max_examples=1000, deadline=None)
    @given(data=st.data())
    def test_accepted_by_the_model_is_valid(self, small_bundle: Path, data: st.DataObject) -> None:
        """A real value with up to three random changes (a value replaced by one of its own
        JSON type or by any JSON value, a key dropped or added): if the model accepts it, the
        schema does."""
        kind = data.draw(st.sampled_from(sorted(schemas.SCHEMAS)))
        value = copy.deepcopy(data.draw(st.sampled_from(_samples(small_bundle)[kind])))
        for _ in range(data.draw(st.integers(0, 3))):
            places = _places(value)
            if not places:
                break
            node, key = data.draw(st.sampled_from(places))
            how = data.draw(st.sampled_from(["alike", "alike", "replace", "drop", "add"]))
            if how == "alike":
                node[key] = copy.deepcopy(data.draw(_alike(node[key])))
            elif how == "drop" and isinstance(node, dict):
                del node[key]
            elif how == "add" and isinstance(node, dict):
                node[data.draw(st.text(max_size=6))] = data.draw(_json_values)
            else:
                node[key] = data.draw(_json_values)
        try:
            structure(value, schemas.SCHEMAS[kind], what=kind)
        except BadInput:
            return
        jsonschema.validate(value, schemas.load(kind))
