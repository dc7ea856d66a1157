"""JSON Schemas in schemas/ describe the protocol and every bundle file."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT
from repro import schemas

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
        """schemas/<name>.schema.json equals what the models generate (python -m repro.schemas)."""
        committed = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())
        assert committed == schemas.generate(name)
        jsonschema.Draft202012Validator.check_schema(committed)

    @pytest.mark.parametrize(("file", "kind"), sorted(FILES.items()))
    def test_real_outputs_validate(self, small_bundle: Path, file: str, kind: str) -> None:
        """Each file of a real bundle validates against its schema with jsonschema."""
        jsonschema.validate(json.loads((small_bundle / file).read_text()), schemas.load(kind))

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
        """Every protocol in protocols/ validates against the protocol schema."""
        jsonschema.validate(json.loads(path.read_text()), schemas.load("protocol"))

    def test_wrong_bundle_file_is_rejected(self, small_bundle: Path) -> None:
        """A schema rejects an unknown key: the schemas are strict, like the loader."""
        data = json.loads((small_bundle / "data/aggregates.json").read_text())
        data["extra"] = 1
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, schemas.load("aggregates"))
