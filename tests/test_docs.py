"""The documentation in docs/ is in step with the code: the protocol reference is what
``python tools/docgen.py`` generates, the constraints it states are the validators', and the
example adapter shown in docs/adapter-api.md is the file docs/examples/dice_adapter.py, which
runs a study that verifies."""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from tools import clidoc, docgen

from conftest import ROOT, register_adapters, run_study
from repro import models
from repro._escape import markdown_text
from repro._execute.replay import replay
from repro._execute.studies import prepare
from repro._json import schemas
from repro.errors import PROBLEM_CODES, BadInput
from repro.models import FieldError
from repro.models import _constraints as constraints
from repro.models._constraints import (
    Constraint,
    MatchesReValidator,
    NumberValidator,
    OptionalValidator,
    parts,
)
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


def _cli_sections() -> dict[str, str]:
    """docs/cli.md's sections, by the command path their heading names."""
    text = (DOCS / "cli.md").read_text("utf-8")
    parts = re.split(r"^## `([^`]+)`$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _cli_commands() -> list[tuple[str, Any]]:
    """(path, click command) of ``repro`` and every command and subcommand under it, walked
    from the typer app here, apart from tools/clidoc.py."""
    import typer.main

    from repro._cli.app import app

    found: list[tuple[str, Any]] = []

    def walk(path: str, command: Any) -> None:
        found.append((path, command))
        if hasattr(command, "list_commands"):
            ctx = command.context_class(command, info_name=path)
            for name in command.list_commands(ctx):
                walk(f"{path} {name}", command.get_command(ctx, name))

    walk("repro", typer.main.get_command(app))
    return found


class TestCliReference:
    """docs/cli.md is generated from the typer app, current, complete and independent of the
    terminal it is generated on."""

    def test_committed_reference_is_current(self) -> None:
        """docs/cli.md equals what tools/clidoc.py generates from the command line."""
        committed = (DOCS / "cli.md").read_text("utf-8")
        assert committed == clidoc.reference(), "run: uv run python tools/clidoc.py"

    def test_first_line_says_generated_and_how_to_regenerate(self) -> None:
        """The file's first line says it is generated and gives the command that regenerates it."""
        first = (DOCS / "cli.md").read_text("utf-8").splitlines()[0]
        assert "Generated" in first
        assert "uv run python tools/clidoc.py" in first

    def test_every_command_argument_and_option_is_documented(self) -> None:
        """Each command and subcommand has a section, in which its usage, its help's first
        paragraph (as Markdown text that renders as itself), each argument's name and each
        option's spellings appear; a hidden option (kept for old scripts, left out of
        ``--help``) is left out of the reference too."""
        sections = _cli_sections()
        commands = _cli_commands()
        assert sorted(sections) == sorted(path for path, _ in commands)
        for path, command in commands:
            section = sections[path]
            assert f"Usage: `{path} [OPTIONS]" in section, path
            first = " ".join((command.help or "").split("\n\n")[0].split())
            assert markdown_text(first) in section, path
            for param in command.params:
                if getattr(param, "hidden", False):
                    assert f"`{param.opts[0]}" not in section, (path, param.opts)
                    continue
                if param.param_type_name == "argument":
                    assert f"- `{param.name.upper()}`" in section, (path, param.name)
                else:
                    for spelled in param.opts:
                        assert f"`{spelled}" in section, (path, spelled)

    @pytest.mark.slow
    @pytest.mark.parametrize("hash_seed", ["0", "1", "2", "3"])
    def test_the_terminal_changes_nothing(self, hash_seed: str) -> None:
        """Generated in a fresh interpreter with a narrow terminal, colour forced and rich's
        terminal detection on, and another hash seed (click keeps the help option's names in a
        set), the file is the same, and it holds no escape sequence."""
        code = "import sys; from tools import clidoc; sys.stdout.write(clidoc.reference())"
        env = {
            **os.environ,
            "COLUMNS": "30",
            "LINES": "10",
            "FORCE_COLOR": "1",
            "TTY_COMPATIBLE": "1",
            "TERM": "xterm-256color",
            "PYTHONHASHSEED": hash_seed,
        }
        env.pop("NO_COLOR", None)
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == clidoc.reference()
        assert "\x1b" not in done.stdout

    def test_write_puts_it_under_docs(self, tmp_path: Path) -> None:
        """write() creates docs/cli.md under the given root."""
        path = clidoc.write(tmp_path)
        assert path == tmp_path / "docs" / "cli.md"
        assert path.read_text("utf-8") == clidoc.reference()


def _constrained_fields() -> list[tuple[str, attrs.Attribute[Any], Constraint, bool]]:
    """(model.field, field, its constraint, whether null is accepted too) for every constrained
    field of the protocol's models."""
    out = []
    for cls in _protocol_models():
        for field in attrs.fields(cls):
            validator: Any = field.validator
            if validator is None:
                continue
            nullable = isinstance(validator, OptionalValidator)
            rule = validator.validator if nullable else validator
            out.append((f"{cls.__name__}.{field.name}", field, rule, nullable))
    return out


def _schema_of(where: str) -> dict[str, Any]:
    """The protocol schema's property for ``where`` (model.field), with the schema's
    definitions alongside."""
    schema = schemas.load("protocol")
    model, name = where.split(".")
    body = schema if model == "Protocol" else schema["$defs"][model]
    return {**body["properties"][name], "$defs": schema["$defs"]}


def _beside(bound: float) -> tuple[float, ...]:
    """A bound and the values just below and above it."""
    if isinstance(bound, int):
        return (bound - 1, bound, bound + 1)
    return (math.nextafter(bound, -math.inf), bound, math.nextafter(bound, math.inf))


def _is_bound(part: Any) -> bool:
    return isinstance(part, NumberValidator)


#: Values each regular expression of the protocol's constraints accepts and refuses. (A final
#: newline is left out: Python's ``re.search``, which jsonschema uses, lets ``$`` match before
#: one, so only the model refuses it; tests/test_bad_protocols.py has that row.)
PATTERN_EXAMPLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "IDENT": (("a", "C-1_b.2", "x" * 64), ("", "-a", ".a", "x" * 65, "a b", "a/b", "é")),
    "ONE_LINE": (
        ("A title: with, punctuation (and é)", "", "a\u00a0b"),
        ("a\nb", "a\tb", "a\rb", "a\x7fb", "a\x85b", "a\u2028b", "a\u2029b"),
    ),
    "SPDX": (("CC-BY-4.0", "MIT", "GPL-3.0+"), ("", "CC BY", "-MIT", "x" * 65)),
    "NAME": (
        ("The repro project", "A", "Ana María O'Neil-Sá", "a\u00a0b"),
        ("", " ", " A", "A ", "a\nb", "a\tb", "a\x7fb", "a\u2028b"),
    ),
    "ROR": (
        ("https://ror.org/0abcdef12", "https://ror.org/0xyz98765"),
        (
            "https://ror.org/12345",
            "https://ror.org/1abcdef12",
            "https://ror.org/0abcdeu12",
            "http://ror.org/0abcdef12",
            "ror.org/0abcdef12",
        ),
    ),
    "ORCID": (
        ("https://orcid.org/0000-0002-1825-0097", "https://orcid.org/0000-0002-1694-233X"),
        (
            "https://orcid.org/0000-0002-1825-0098",
            "0000-0002-1825-0097",
            "https://orcid.org/0000000218250097",
            "https://orcid.org/0000-0002-1694-233x",
        ),
    ),
    "WEB_ADDRESS": (
        ("https://example.org/", "http://example.org/a?b=c"),
        ("example.org", "ftp://example.org", "https://a b", "https://"),
    ),
}


class TestConstraints:
    """The reference, the models and the protocol schema state the same constraints: each is
    read from the same attrs validators."""

    @pytest.mark.parametrize(
        ("where", "field", "rule", "nullable"),
        _constrained_fields(),
        ids=[where for where, *_ in _constrained_fields()],
    )
    def test_the_reference_says_what_a_refusal_says(
        self, where: str, field: attrs.Attribute[Any], rule: Constraint, nullable: bool
    ) -> None:
        """The field's row in the reference holds the words of its refusal (derived from the
        validators where they can be) and every pattern the field must match."""
        assert isinstance(rule, Constraint), where
        model = where.split(".")[0]
        section = docgen.reference().split(f"\n## {model}\n", 1)[1].split("\n## ", 1)[0]
        row = next(r for r in section.splitlines() if r.startswith(f"| `{field.name}` |"))
        assert rule.words.removeprefix("be ") in row, (where, row)
        assert docgen.constraint(field) in row
        for part in parts(rule.check):
            if isinstance(part, MatchesReValidator):
                assert f"`{part.pattern.pattern}`" in row, where

    @pytest.mark.parametrize(
        ("where", "field", "rule", "nullable"),
        [c for c in _constrained_fields() if any(map(_is_bound, parts(c[2].check)))],
        ids=[c[0] for c in _constrained_fields() if any(map(_is_bound, parts(c[2].check)))],
    )
    def test_bounds_agree_with_the_schema(
        self, where: str, field: attrs.Attribute[Any], rule: Constraint, nullable: bool
    ) -> None:
        """At and beside each bound, the model refuses exactly the values the schema refuses,
        with a FieldError naming the field in the reference's words and the value; a field that
        may be null is null in both."""
        schema = jsonschema.Draft202012Validator(_schema_of(where))
        assert schema.is_valid(None) == nullable, where
        for part in filter(_is_bound, parts(rule.check)):
            for value in _beside(part.bound):
                try:
                    rule(None, field, value)
                except FieldError as refused:
                    assert refused.field == field.name
                    assert str(refused) == f"{field.name} must {rule.words}, not {value}"
                    assert not schema.is_valid(value), (where, value)
                else:
                    assert schema.is_valid(value), (where, value)

    @pytest.mark.parametrize("name", sorted(PATTERN_EXAMPLES))
    def test_patterns_agree_with_the_schema(self, name: str) -> None:
        """Each pattern's examples: accepted by the constraint and by the schema's pattern, or
        refused by both, the constraint with a FieldError naming the field."""
        rule = getattr(constraints, name)
        accepted, refused = PATTERN_EXAMPLES[name]
        uses = [c for c in _constrained_fields() if c[2] is rule]
        assert uses, f"no field of the protocol is constrained by {name}"
        where, field, _, _ = uses[0]
        schema = jsonschema.Draft202012Validator(_schema_of(where))
        for value in accepted:
            rule(None, field, value)
            assert schema.is_valid(value), (name, value)
        for value in refused:
            with pytest.raises(FieldError) as refusal:
                rule(None, field, value)
            assert refusal.value.field == field.name
            # A constraint the schema does not state (ORCID: its check character) is the
            # model's alone; the schema then accepts what it refuses.
            assert schema.is_valid(value) != rule.in_schema, (name, value)

    def test_every_pattern_has_examples(self) -> None:
        """Every regular expression of the protocol's constraints is tried above."""
        named = {id(getattr(constraints, n)) for n in PATTERN_EXAMPLES}
        for where, _, rule, _ in _constrained_fields():
            if any(isinstance(p, MatchesReValidator) for p in parts(rule.check)):
                assert id(rule) in named, where

    def test_unknown_validator_is_refused(self) -> None:
        """A validator the generator cannot read stops it, naming what to declare instead."""

        @attrs.frozen
        class Odd:
            value: int = attrs.field(validator=lambda *_: None)

        with pytest.raises(KeyError, match=r"declare its validator as a Constraint"):
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

    @pytest.mark.slow
    def test_example_study_verifies_and_replays(self, dice: None, tmp_path: Path) -> None:
        """The example protocol runs with the example adapter into a bundle that verifies, whose
        six tiers all pass, whose ledger pins the adapter's file by sha256, and one of whose
        slots replays byte for byte."""
        bundle = run_study(EXAMPLES / "dice-study.json", tmp_path / "bundle")
        assert verify(bundle) == []
        data = bundle / "data"
        tiers = json.loads((data / "tiers.json").read_text())
        six = [name for name in models.TIER_NAMES if name != "continuation"]
        assert {t["name"]: t["verdict"] for t in tiers["tiers"]} == dict.fromkeys(six, "pass")
        aggregates = json.loads((data / "aggregates.json").read_text())
        assert [c["valid"] for c in aggregates["conditions"]] == [25, 25, 25, 25]
        ledger = json.loads((data / "source-ledger.json").read_text())
        source = (EXAMPLES / "dice_adapter.py").read_bytes()
        assert [(s["name"], s["sha256"]) for s in ledger["sources"]] == [
            ("dice_adapter.py", hashlib.sha256(source).hexdigest())
        ]
        assert replay(bundle, "c03-r0024", {}).identical

    @pytest.mark.slow
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
        participant kind, each with its JSON path, as a problem with that path and a code."""
        protocol = json.loads((EXAMPLES / "dice-study.json").read_text())
        cases: list[tuple[str, Any, str]] = [
            ("matrix", [{"name": "colour", "levels": ["red"]}], "@ $.matrix[0].name"),
            ("matrix", [{"name": "sides", "levels": [1]}], "@ $.matrix[0].levels[0]"),
            ("participants", [{"id": "p", "kind": "cheat", "params": {}}], "@ $.participants[0]"),
        ]
        for key, value, where in cases:
            path = tmp_path / "bad.json"
            path.write_text(json.dumps({**protocol, key: value}))
            with pytest.raises(BadInput, match=re.escape(where)) as caught:
                prepare(path, {})
            [problem] = caught.value.problems
            assert problem.path.startswith(where.removeprefix("@ "))
            assert problem.code in PROBLEM_CODES and problem.code != "bad-input"


#: Where the docs name repro's functions, modules and constants as code.
_NAMED_IN = (
    "README.md",
    "docs/architecture.md",
    "docs/guarantees.md",
    "docs/bundle-format.md",
    "docs/commands.md",
    "docs/statistics.md",
    "docs/scored-studies.md",
    "docs/adapter-api.md",
    "docs/reproducing-cage2.md",
)
_DOTTED = re.compile(
    r"`((?:repro\.)?(?:derive|execute|verify|plan|bundle|json|models|present|compare|adapters|"
    r"errors|cli|stats)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`"
)


class TestNamedCode:
    """The docs name code that exists: a package tree that moves under them is noticed."""

    @pytest.mark.parametrize("doc", _NAMED_IN)
    def test_every_dotted_name_resolves(self, doc: str) -> None:
        """Each `repro.x.y` (or `x.y`, relative to repro) in the doc is a module or an
        attribute of one."""
        missing = []
        for name in sorted(set(_DOTTED.findall((ROOT / doc).read_text("utf-8")))):
            parts = (name if name.startswith("repro.") else f"repro.{name}").split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    found: Any = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                for attribute in parts[cut:]:
                    found = getattr(found, attribute, None)
                break
            if found is None:
                missing.append(name)
        assert missing == []
