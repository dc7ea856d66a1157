"""The documentation in docs/ is in step with the code: the protocol reference is what
``python tools/docgen.py`` generates, the constraints it states are the validators', and the
example adapter shown in docs/adapter-api.md is the file docs/examples/dice_adapter.py, which
runs a study that verifies."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
from tools import docgen

from conftest import ROOT, register_adapters, run_study
from repro import models
from repro.errors import BadInput
from repro.execute.replay import replay
from repro.execute.studies import prepare
from repro.json import schemas
from repro.models import FieldError
from repro.verify import verify

DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"


def _protocol_models() -> list[type]:
    """The model of the protocol and of every object type its schema defines."""
    schema = schemas.load("protocol")
    return [schemas.SCHEMAS["protocol"], *(getattr(models, n) for n in schema["$defs"])]


class TestProtocolReference:
    """docs/protocol-reference.md is generated, current and complete."""

    def test_committed_reference_is_current(self) -> None:
        """docs/protocol-reference.md equals what tools/docgen.py generates from the
        committed schema and the models."""
        committed = (DOCS / "protocol-reference.md").read_text("utf-8")
        assert committed == docgen.reference(), "run: uv run python tools/docgen.py"

    def test_first_line_says_generated_and_how_to_regenerate(self) -> None:
        """The file's first line says it is generated and gives the command that regenerates it."""
        first = (DOCS / "protocol-reference.md").read_text("utf-8").splitlines()[0]
        assert "Generated" in first
        assert "uv run python tools/docgen.py" in first

    def test_every_object_type_and_field_is_documented(self) -> None:
        """Each object type of the protocol schema has a section, and each of its fields a row."""
        text = docgen.reference()
        for cls in _protocol_models():
            section = text.split(f"\n## {cls.__name__}\n", 1)[1].split("\n## ", 1)[0]
            for field in attrs.fields(cls):
                assert f"\n| `{field.name}` |" in section, (cls.__name__, field.name)

    def test_write_puts_it_under_docs(self, tmp_path: Path) -> None:
        """write() creates docs/protocol-reference.md under the given root."""
        path = docgen.write(tmp_path)
        assert path == tmp_path / "docs" / "protocol-reference.md"
        assert path.read_text("utf-8") == docgen.reference()


def _validated_fields() -> list[tuple[str, attrs.Attribute[Any], Any, bool]]:
    """(model.field, field, validator function, optional) for every validator of the protocol's
    models."""
    out = []
    for cls in _protocol_models():
        for field in attrs.fields(cls):
            for function, optional in docgen.validators(field.validator):
                out.append((f"{cls.__name__}.{field.name}", field, function, optional))
    return out


class TestConstraints:
    """The constraints the reference states are those the validators enforce."""

    @pytest.mark.parametrize(
        ("where", "field", "function", "optional"),
        _validated_fields(),
        ids=[where for where, *_ in _validated_fields()],
    )
    def test_validator_accepts_and_refuses_as_documented(
        self, where: str, field: attrs.Attribute[Any], function: Any, optional: bool
    ) -> None:
        """Every documented accepted value passes the field's validator, and every documented
        refused value is refused with a FieldError naming the field."""
        documented = docgen.CONSTRAINTS[function.__qualname__]
        for value in documented.accepted:
            function(None, field, value)
        for value in documented.refused:
            with pytest.raises(FieldError) as refused:
                function(None, field, value)
            assert refused.value.field == field.name, where

    def test_every_described_validator_is_used(self) -> None:
        """CONSTRAINTS describes no validator that the protocol's models no longer use."""
        used = {function.__qualname__ for _, _, function, _ in _validated_fields()}
        assert set(docgen.CONSTRAINTS) == used

    def test_unknown_validator_is_refused(self) -> None:
        """A validator the generator cannot describe stops it, naming where to describe it."""

        @attrs.frozen
        class Odd:
            value: int = attrs.field(validator=lambda *_: None)

        with pytest.raises(KeyError, match=r"CONSTRAINTS of tools/docgen\.py"):
            docgen.constraint(attrs.fields(Odd).value)


def _fenced(language: str, body: str) -> str:
    return f"```{language}\n{body}```\n"


class TestExampleAdapter:
    """The complete example of docs/adapter-api.md: shown verbatim, and working."""

    def test_the_doc_shows_the_files_verbatim(self) -> None:
        """docs/adapter-api.md holds docs/examples/dice_adapter.py and dice-study.json, each
        whole, in one fenced block."""
        doc = (DOCS / "adapter-api.md").read_text("utf-8")
        for name, language in (("dice_adapter.py", "python"), ("dice-study.json", "json")):
            assert _fenced(language, (EXAMPLES / name).read_text("utf-8")) in doc, name

    @pytest.fixture
    def dice(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """Register the example as ``dice`` in this process, as an installed plugin would be,
        with docs/examples importable here and, through PYTHONPATH, in the worker process."""
        monkeypatch.syspath_prepend(str(EXAMPLES))
        site = tmp_path_factory.mktemp("dice-site")
        register_adapters(monkeypatch, site, "repro-dice", {"dice": "dice_adapter:DiceAdapter"})

    def test_example_study_verifies_and_replays(self, dice: None, tmp_path: Path) -> None:
        """The example protocol runs with the example adapter into a bundle that verifies, whose
        six tiers all pass, whose ledger pins the adapter's file by sha256, and one of whose
        slots replays byte for byte."""
        bundle = run_study(EXAMPLES / "dice-study.json", tmp_path / "bundle")
        assert verify(bundle) == []
        data = bundle / "data"
        tiers = json.loads((data / "tiers.json").read_text())
        assert {t["name"]: t["verdict"] for t in tiers["tiers"]} == dict.fromkeys(
            models.TIER_NAMES, "pass"
        )
        aggregates = json.loads((data / "aggregates.json").read_text())
        assert [c["valid"] for c in aggregates["conditions"]] == [25, 25, 25, 25]
        ledger = json.loads((data / "source-ledger.json").read_text())
        source = (EXAMPLES / "dice_adapter.py").read_bytes()
        assert [(s["name"], s["sha256"]) for s in ledger["sources"]] == [
            ("dice_adapter.py", hashlib.sha256(source).hexdigest())
        ]
        assert replay(bundle, "c03-r0024", {}).identical

    def test_stream_seeding_is_repeatable(self, dice: None, tmp_path: Path) -> None:
        """With stream seeding the example draws each run's seed from the protocol's stream:
        two studies write the same runs, and they differ from the per-run study's."""
        protocol = json.loads((EXAMPLES / "dice-study.json").read_text())
        protocol["seeding"] = {"mode": "stream", "seed": 2026}
        protocol["runs_per_condition"] = 5
        path = tmp_path / "stream.json"
        path.write_text(json.dumps(protocol))
        runs = []
        for name in ("one", "two"):
            bundle = run_study(path, tmp_path / name)
            assert verify(bundle) == []
            runs.append((bundle / "data/runs/c01.jsonl").read_bytes())
        assert runs[0] == runs[1]
        per_run = run_study(EXAMPLES / "dice-study.json", tmp_path / "per-run")
        first = json.loads((per_run / "data/runs/c01.jsonl").read_text().splitlines()[0])
        assert json.loads(runs[0].splitlines()[0])["trace_sha256"] != first["trace_sha256"]

    def test_the_adapter_refuses_what_it_cannot_run(self, dice: None, tmp_path: Path) -> None:
        """The example's freeze refuses an unknown factor, a level out of range and an unknown
        participant kind, each with its JSON path."""
        protocol = json.loads((EXAMPLES / "dice-study.json").read_text())
        cases: list[tuple[str, Any, str]] = [
            ("matrix", [{"name": "colour", "levels": ["red"]}], "@ $.matrix[0].name"),
            ("matrix", [{"name": "sides", "levels": [1]}], "@ $.matrix[0].levels[0]"),
            ("participants", [{"id": "p", "kind": "cheat", "params": {}}], "@ $.participants[0]"),
        ]
        for key, value, where in cases:
            path = tmp_path / "bad.json"
            path.write_text(json.dumps({**protocol, key: value}))
            with pytest.raises(BadInput, match=re.escape(where)):
                prepare(path, {})
