"""The documentation in docs/ is in step with the code: the protocol reference is what
``python -m repro.docgen`` generates, and the constraints it states are the validators'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from conftest import ROOT
from repro import docgen, models, schemas
from repro.models import FieldError

DOCS = ROOT / "docs"


def _protocol_models() -> list[type]:
    """The model of the protocol and of every object type its schema defines."""
    schema = schemas.load("protocol")
    return [schemas.SCHEMAS["protocol"], *(getattr(models, n) for n in schema["$defs"])]


class TestProtocolReference:
    """docs/protocol-reference.md is generated, current and complete."""

    def test_committed_reference_is_current(self) -> None:
        """docs/protocol-reference.md equals what python -m repro.docgen generates from the
        committed schema and the models."""
        committed = (DOCS / "protocol-reference.md").read_text("utf-8")
        assert committed == docgen.reference(), "run: uv run python -m repro.docgen"

    def test_first_line_says_generated_and_how_to_regenerate(self) -> None:
        """The file's first line says it is generated and gives the command that regenerates it."""
        first = (DOCS / "protocol-reference.md").read_text("utf-8").splitlines()[0]
        assert "Generated" in first
        assert "uv run python -m repro.docgen" in first

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

        with pytest.raises(KeyError, match=r"repro\.docgen\.CONSTRAINTS"):
            docgen.constraint(attrs.fields(Odd).value)
