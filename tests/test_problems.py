"""Errors as data: a :class:`repro.errors.BadInput` carries each problem of a protocol or a JSON
document as a :class:`repro.errors.Problem` (JSON path, message, code), and its text is made
from them; the command line is the only place that turns errors into text."""

from __future__ import annotations

import ast
import copy
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL
from repro.errors import PROBLEM_CODES, BadInput, Problem
from repro.json import canonical
from repro.protocol.load import parse_protocol

CLI = Path(__file__).resolve().parents[1] / "src" / "repro" / "cli"


def _refusal(data: object) -> BadInput:
    with pytest.raises(BadInput) as caught:
        parse_protocol(json.dumps(data).encode())
    return caught.value


def test_text_is_made_from_the_problems() -> None:
    """``BadInput.of`` joins its subject and each ``message @ path`` with "; ", keeps the
    problems as given, and a pickled one (a worker's, sent to the study) keeps them too."""
    problems = [
        Problem("$.a", "expected an integer, found a string", "wrong-type"),
        Problem("$.b[0]", "unknown factor 'x'", "unknown-name"),
    ]
    error = BadInput.of("protocol p.json", problems)
    assert str(error) == (
        "protocol p.json: expected an integer, found a string @ $.a; unknown factor 'x' @ $.b[0]"
    )
    assert error.problems == tuple(problems)
    copied = pickle.loads(pickle.dumps(error))
    assert (str(copied), copied.problems) == (str(error), error.problems)
    assert BadInput("no such file").problems == ()
    assert problems[0].as_dict() == {
        "path": "$.a",
        "message": "expected an integer, found a string",
        "code": "wrong-type",
    }


@pytest.mark.parametrize(
    ("mutate", "path", "code"),
    [
        (lambda p: p.update(runs_per_condition="8"), "$.runs_per_condition", "wrong-type"),
        (lambda p: p.pop("title"), "$.title", "missing-field"),
        (lambda p: p.update(colour="blue"), "$", "unknown-field"),
        (lambda p: p["matrix"][0].update(levels=[1, True]), "$.matrix[0].levels[1]", "wrong-type"),
        (
            lambda p: p["matrix"].append(copy.deepcopy(p["matrix"][0])),
            "$.matrix[1].name",
            "duplicate",
        ),
    ],
)
def test_each_problem_has_its_path_and_code(
    mutate: Callable[[dict[str, Any]], object], path: str, code: str
) -> None:
    """A protocol's problems, whether the converter finds them (a wrong type, a missing or an
    unknown key) or the rules of the protocol as a whole do (a factor named twice), each name
    the JSON path of what is wrong and a code of the documented vocabulary; the message says
    them in the same words as before, ``subject: message @ path``."""
    data = copy.deepcopy(SMALL)
    mutate(data)
    error = _refusal(data)
    assert error.problems, str(error)
    assert all(p.code in PROBLEM_CODES for p in error.problems)
    assert path in [p.path for p in error.problems], error.problems
    assert code in [p.code for p in error.problems if p.path == path]
    assert str(error) == "protocol: " + "; ".join(f"{p.message} @ {p.path}" for p in error.problems)


def test_a_validators_field_is_in_the_path() -> None:
    """A value that a model's validator refuses (a field of the right type) is named at the
    field's own path, not its object's, with the code ``not-allowed``."""
    data = copy.deepcopy(SMALL)
    data["runs_per_condition"] = 0
    problems = _refusal(data).problems
    assert [(p.path, p.code) for p in problems] == [("$.runs_per_condition", "not-allowed")]


def test_a_json_syntax_problem_is_data() -> None:
    """The strict JSON reader's refusals are problems too: a duplicate key, at the path of the
    object that holds it twice."""
    with pytest.raises(BadInput) as caught:
        canonical.loads(b'{"a": {"b": 1, "b": 2}}', what="protocol")
    assert caught.value.problems == (Problem("$.a", "duplicate key 'b'", "duplicate"),)
    assert str(caught.value) == "protocol: duplicate key 'b' @ $.a"


def test_no_command_catches_bad_input() -> None:
    """The command line has one error boundary (repro.cli.boundary): no other module of
    repro/cli has an ``except`` clause that names BadInput or ReproError."""
    catching = []
    for module in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text("utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
                if names & {"BadInput", "ReproError"}:
                    catching.append(f"{module.name}:{node.lineno}")
    assert [where.split(":")[0] for where in catching] == ["boundary.py"], catching
