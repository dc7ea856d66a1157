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
from typer.testing import CliRunner

from conftest import ROOT, SMALL
from repro._cli.app import app
from repro._json import canonical
from repro._protocol.load import parse_protocol
from repro.errors import PROBLEM_CODES, BadInput, Problem

CLI = Path(__file__).resolve().parents[1] / "src" / "repro" / "_cli"


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
    """The command line has one error boundary (repro._cli.boundary): no other module of
    repro/_cli has an ``except`` clause that names BadInput or ReproError."""
    catching = []
    for module in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text("utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
                if names & {"BadInput", "ReproError"}:
                    catching.append(f"{module.name}:{node.lineno}")
    assert [where.split(":")[0] for where in catching] == ["boundary.py"], catching


def _checked(tmp_path: Path, data: dict[str, Any]) -> list[dict[str, str]]:
    """``repro protocol check --json`` of ``data``: refused (exit 2), its problems as printed,
    each also named on stderr as ``message @ path``."""
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(data), "utf-8")
    result = CliRunner().invoke(app, ["protocol", "check", str(path), "--json"])
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    problems: list[dict[str, str]] = report["problems"]
    stderr = " ".join(result.stderr.split())
    for problem in problems:
        assert problem["code"] in PROBLEM_CODES
        assert " ".join(f"{problem['message']} @ {problem['path']}".split()) in stderr
    return problems


@pytest.mark.parametrize(
    ("action", "code"),
    [(5, "not-allowed"), (True, "wrong-type"), (0.5, "wrong-type")],
)
def test_an_adapters_refusal_of_a_participant_is_data(
    tmp_path: Path, action: object, code: str
) -> None:
    """The gymnasium adapter's own check of a participant's params (a constant action outside
    CartPole's action space, or not a whole number) reaches ``protocol check --json`` as one
    problem at that participant's path, with a code of its kind, not ``bad-input``."""
    data = copy.deepcopy(SMALL)
    data["participants"][1]["params"]["action"] = action
    [problem] = _checked(tmp_path, data)
    assert (problem["path"], problem["code"]) == ("$.participants[1].params.action", code)


def _gate() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "protocols" / "agent-gate-eval.json").read_bytes())
    return data


def test_the_command_adapters_refusals_are_data(tmp_path: Path) -> None:
    """The command adapter's refusals name their paths as data: an option it does not take at
    that option's path (``unknown-field``); an outcome schema that does not require what the
    scoring reads, one problem for each key read, at the schema's ``required``."""
    data = _gate()
    data["adapter"]["options"]["colour"] = "blue"
    assert [(p["path"], p["code"]) for p in _checked(tmp_path, data)] == [
        ("$.adapter.options.colour", "unknown-field")
    ]
    data = _gate()
    required = data["adapter"]["options"]["outcome_schema"]["required"]
    required[:] = [key for key in required if key not in {"verdict", "domains"}]
    problems = _checked(tmp_path, data)
    assert len(problems) >= 2
    assert {(p["path"], p["code"]) for p in problems} == {
        ("$.adapter.options.outcome_schema.required", "inconsistent")
    }
    assert {m for m in ("'verdict'", "'domains'") if any(m in p["message"] for p in problems)} == {
        "'verdict'",
        "'domains'",
    }


def test_a_disclosing_protocol_is_refused_at_its_path(tmp_path: Path) -> None:
    """A protocol that would write a host path into the bundle is refused at the JSON path that
    holds it (``not-allowed``), as data, with the text the study prints."""
    data = copy.deepcopy(SMALL)
    data["description"] = "notes in /home/alice/notes.txt"
    [problem] = _checked(tmp_path, data)
    assert (problem["path"], problem["code"]) == ("$.description", "not-allowed")


#: Strings that are not base64 as DSSE allows it (standard or URL-safe, padded or not): each
#: would mean other bytes to some decoder, or none.
_JUNK_BASE64 = [
    "not base64!",
    "aGVs bG8=",  # whitespace
    "aGVsbG8=\n",
    "aGVsbA=",  # partial padding
    "aGVsbG8==",  # too much
    "aGVsb",  # a length no encoding has
    "aGV=sbG8",  # padding inside
    "ab+_",  # the two alphabets mixed
    "aGVsbG9=",  # "hello" with its unused bits set
    "aGVsbG8\u00e9",  # not ASCII
    7,
    None,
]


@pytest.mark.parametrize(
    ("envelope", "path", "code"),
    [
        ({"payload": "", "payloadType": "x"}, "$", "missing-field"),
        (
            {"payload": "", "payloadType": "application/vnd.in-toto+json", "signatures": {}},
            "$.signatures",
            "wrong-type",
        ),
        (
            {
                "payload": "",
                "payloadType": "application/vnd.in-toto+json",
                "signatures": [{"keyid": "SHA256:" + "A" * 43, "sig": "not base64!"}],
            },
            "$.signatures[0].sig",
            "not-allowed",
        ),
        *(
            (
                {
                    "payload": "aGVsbG8=",
                    "payloadType": "application/vnd.in-toto+json",
                    "signatures": [{"sig": "aGVsbG8"}, {"sig": junk}],
                },
                "$.signatures[1].sig",
                "not-allowed",
            )
            for junk in _JUNK_BASE64
        ),
        *(
            (
                {
                    "payload": junk,
                    "payloadType": "application/vnd.in-toto+json",
                    "signatures": [{"sig": "aGVsbG8"}],
                },
                "$.payload",
                "not-allowed",
            )
            for junk in _JUNK_BASE64
        ),
        (
            {
                "payload": "aGVsbG8=",
                "payloadType": "application/vnd.in-toto+json",
                "signatures": [],
            },
            "$.signatures",
            "not-allowed",
        ),
        (
            {
                "payload": "aGVsbG8=",
                "payloadType": "application/vnd.in-toto+json",
                "signatures": [{"keyid": "k", "sig": "aGVsbG8"}] * 17,
            },
            "$.signatures",
            "over-limit",
        ),
        (
            {
                "payload": "aGVsbG8=",
                "payloadType": "application/vnd.in-toto+json",
                "signatures": [{"sig": "aGVsbG8"}, {"keyid": 7, "sig": "aGVsbG8"}],
            },
            "$.signatures[1].keyid",
            "wrong-type",
        ),
    ],
)
def test_a_signature_files_problems_are_data(
    envelope: dict[str, Any], path: str, code: str
) -> None:
    """A malformed signature envelope is refused with its problem as data, at the JSON path
    inside the envelope, the text still ``file: message @ path``: among them base64 that is
    neither DSSE's standard nor its URL-safe form, in any signature, no signature, and more
    than the limit of signatures in one envelope (16 here)."""
    # Lazy: the signature machinery (securesystemslib) only for this test.
    from repro._bundle.signatures import parse_envelope

    name = "signatures/0123456789ab.bundle.dsse.json"
    with pytest.raises(BadInput) as raised:
        parse_envelope(name, canonical.dumps(envelope), max_signatures=16)
    (problem,) = raised.value.problems
    assert (problem.path, problem.code) == (path, code)
    assert str(raised.value) == f"{name}: {problem}"
    assert problem.code in PROBLEM_CODES
