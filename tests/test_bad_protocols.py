"""Bad protocols: ``repro study`` exits 2, names the problem and its JSON path, and writes nothing.

Every case is a row: a name, a mutation of a good protocol (of its parsed form, its bytes, the
protocol file itself, the command-line options or a private copy of the CAGE-2 scenario), the
fragment the message must contain, the JSON path it must name (``None`` where the problem has
none: the protocol file, a command-line option, the scenario directory), and a statement of the
behaviour. Each row runs through the CLI into a nested ``--out`` inside a fresh directory, from a
fresh working directory, and checks that nothing at all appeared: not the output root, not its
parent, no stray file anywhere under the test's directory.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner, Result

from conftest import ROOT, SMALL
from repro._cli.app import app
from repro._execute.studies import prepare
from repro._json import canonical, schemas
from repro._protocol.load import MAX_PROTOCOL_BYTES
from repro._protocol.rules import MAX_SLOTS
from repro.adapters._base import MAX_EPISODE_STEPS
from repro.errors import BadInput
from repro.models import MAX_RESAMPLES

runner = CliRunner()

SCENARIO = ROOT.parent / "shared" / "cage2" / "scenario"
REDUCED = ROOT / "protocols" / "cage2-ccs-sleeper-reduced.json"
# As tests/test_cyborg.py: skipped without csle-cyborg or ../shared/cage2, unless
# REPRO_REQUIRE_CYBORG is set (the CI nox session), in which case the rows run and fail.
_no_cyborg = importlib.util.find_spec("csle_cyborg") is None or not SCENARIO.is_dir()
needs_cyborg = pytest.mark.skipif(
    _no_cyborg and not os.environ.get("REPRO_REQUIRE_CYBORG"),
    reason="csle-cyborg or ../shared/cage2 not available",
)
POLICIES = ROOT / "tests" / "repro_test_policies.py"


# --------------------------------------------------------------------------- the harness


@dataclass
class Draft:
    """What a mutation may change before the study is run."""

    protocol: dict[str, Any]
    tmp: Path
    options: list[str] = field(default_factory=list)
    #: Raw bytes written instead of the protocol's JSON.
    data: bytes | None = None
    #: A protocol path used instead of writing a file.
    file: Path | None = None
    #: A private, writable copy of the CAGE-2 scenario directory (CAGE-2 rows only).
    scenario: Path | None = None
    #: Module files (name -> source) written to a directory put on sys.path.
    modules: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        """The protocol's JSON text, as an author would write it."""
        return json.dumps(self.protocol, indent=1)

    def materialise(self) -> Path:
        """Write the protocol (or the raw bytes) and return the path to give the CLI."""
        if self.file is not None:
            return self.file
        path = self.tmp / "protocol.json"
        path.write_bytes(self.data if self.data is not None else self.text().encode())
        return path


Mutation = Callable[[Draft], object]


@dataclass(frozen=True)
class Case:
    """One bad protocol and how it must be refused."""

    name: str
    statement: str
    mutate: Mutation
    fragment: str
    #: The JSON path the message ends with (or names before a '; '), or None when the problem
    #: lies outside the JSON (the fragment then names where).
    path: str | None


def _set(*keys: str | int, value: Any) -> Mutation:
    """Set protocol[k1][k2]... to ``value``."""

    def mutate(draft: Draft) -> None:
        node: Any = draft.protocol
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return mutate


def _drop(*keys: str | int) -> Mutation:
    """Delete protocol[k1][k2]...."""

    def mutate(draft: Draft) -> None:
        node: Any = draft.protocol
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return mutate


def _append(*keys: str, value: Any) -> Mutation:
    """Append ``value`` to the array at protocol[k1][k2]...."""

    def mutate(draft: Draft) -> None:
        node: Any = draft.protocol
        for key in keys:
            node = node[key]
        node.append(copy.deepcopy(value))

    return mutate


def _both(*mutations: Mutation) -> Mutation:
    """Apply several mutations in order."""

    def mutate(draft: Draft) -> None:
        for m in mutations:
            m(draft)

    return mutate


def _text(old: str, new: str) -> Mutation:
    """Replace ``old`` (which must occur) by ``new`` in the JSON text: for what json.dumps would
    never write."""

    def mutate(draft: Draft) -> None:
        text = draft.text()
        assert old in text, old
        draft.data = text.replace(old, new, 1).encode("utf-8", "surrogatepass")

    return mutate


def _raw(data: bytes) -> Mutation:
    """Use ``data`` as the whole protocol file."""

    def mutate(draft: Draft) -> None:
        draft.data = data

    return mutate


def _options(*options: str) -> Mutation:
    """Add command-line ``--option`` values."""

    def mutate(draft: Draft) -> None:
        draft.options.extend(options)

    return mutate


def _flat(text: str) -> str:
    """Output with runs of white space collapsed: Rich may wrap long lines."""
    return " ".join(text.split())


def _tree(root: Path) -> list[str]:
    """Every path under ``root`` (symlinks listed, not followed)."""
    out = []
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            out.append((Path(directory) / name).relative_to(root).as_posix())
    return sorted(out)


def _study(protocol: Path, out: Path, options: Sequence[str] = ()) -> Result:
    args = ["study", str(protocol), "--out", str(out)]
    for option in options:
        args += ["--option", option]
    return runner.invoke(app, args)


def _refused(
    case: Case,
    base: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: list[str] | None = None,
    scenario: Path | None = None,
) -> str:
    """Apply ``case`` to ``base`` and run ``study``: exit 2, the fragment and the JSON path in
    the message, no traceback, and nothing written. Returns the flattened message."""
    draft = Draft(copy.deepcopy(base), tmp_path, list(options or []), scenario=scenario)
    case.mutate(draft)
    if draft.modules:
        site = tmp_path / "site"
        site.mkdir()
        for name, source in draft.modules.items():
            (site / f"{name}.py").write_text(source, "utf-8")
        monkeypatch.syspath_prepend(str(site))
    protocol = draft.materialise()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = _tree(tmp_path)
    out = tmp_path / "results" / "bundle"

    result = _study(protocol, out, draft.options)

    message = _flat(result.stderr)
    assert result.exit_code == 2, result.output
    assert message.startswith("error:"), result.output
    assert "Traceback" not in result.output
    assert case.fragment in message, f"{case.fragment!r} not in {message!r}"
    if case.path is not None:
        where = f"@ {case.path}"
        assert message.endswith(where) or f"{where}; " in message, f"{where!r}: {message!r}"
    assert not out.exists()
    assert not out.parent.exists()
    assert _tree(tmp_path) == before
    return message


def _ids(cases: list[Case]) -> list[str]:
    return [c.name for c in cases]


# --------------------------------------------------------------------------- the protocol file


def _fifo(draft: Draft) -> None:
    draft.file = draft.tmp / "protocol.fifo"
    os.mkfifo(draft.file)


def _directory(draft: Draft) -> None:
    draft.file = draft.tmp / "protocol.d"
    draft.file.mkdir()


def _dangling(draft: Draft) -> None:
    draft.file = draft.tmp / "protocol-link.json"
    draft.file.symlink_to(draft.tmp / "gone.json")


def _missing(draft: Draft) -> None:
    draft.file = draft.tmp / "nope.json"


def _unreadable(draft: Draft) -> None:
    draft.file = draft.tmp / "secret.json"
    draft.file.write_text(draft.text(), "utf-8")
    draft.file.chmod(0)


PROTOCOL_FILE = [
    Case("missing", "A protocol path that does not exist is refused, naming it.",
         _missing, "nope.json: not a readable file", None),
    Case("directory", "A directory given as the protocol is refused.",
         _directory, "protocol.d: not a readable file", None),
    Case("fifo", "A FIFO is refused without being opened (opening would block for a writer).",
         _fifo, "protocol.fifo: not a readable file", None),
    Case("device", "A character device (/dev/zero, endless) is refused without being read.",
         lambda d: setattr(d, "file", Path("/dev/zero")), "/dev/zero: not a readable file",
         None),
    Case("dangling-symlink", "A symlink to nothing is refused as not a readable file.",
         _dangling, "protocol-link.json: not a readable file", None),
]  # fmt: skip
UNREADABLE = Case(
    "unreadable", "A file without read permission is refused with the reason.",
    _unreadable, "cannot read (Permission denied)", None,
)  # fmt: skip


# --------------------------------------------------------------------------- strict JSON

_DEEP: Any = []
for _ in range(200):
    _DEEP = [_DEEP]


def _place(needle: str, after: bool = False) -> str:
    """``line L column C`` where ``needle`` begins (or, ``after``, just after it ends) in the
    small protocol's text as :meth:`Draft.text` writes it."""
    text = json.dumps(SMALL, indent=1)
    index = text.index(needle) + (len(needle) if after else 0)
    line, column = text.count("\n", 0, index) + 1, index - text.rfind("\n", 0, index)
    return f"line {line} column {column}"


STRICT_JSON = [
    Case("trailing-comma", "A trailing comma in an object is named as such, at the comma's line "
         "and column (the parser stops on the next line).",
         _text('"max_attempts": 2', '"max_attempts": 2,'),
         "likely a trailing comma at " + _place('"max_attempts": 2', after=True)
         + ", which JSON does not allow before }", "$"),
    Case("trailing-comma-in-array", "So is one in an array.",
         _text('"MountainCar-v0"', '"MountainCar-v0",'),
         "likely a trailing comma at " + _place('"MountainCar-v0"', after=True), "$"),
    Case("single-quotes", "Single quotes are named, where they are.",
         _text('"id": "small"', "'id': 'small'"),
         "likely a string in single quotes at " + _place('"id": "small"'), "$"),
    Case("comment", "A // comment is named, with the key that holds a note instead.",
         _text('"id": "small",', '"id": "small",// its name'),
         "likely a comment at " + _place('"id": "small",', after=True)
         + ': JSON has none (a "$comment" key holds a note)', "$"),
    Case("missing-comma", "A comma missing at the end of a line is named with that line.",
         _text('"id": "small",', '"id": "small"'),
         "likely a missing comma at the end of " + _place('"id"').split(" column")[0], "$"),
    Case("python-none", "Python's None is named with JSON's spelling.",
         _text('"seed": 7', '"seed": None'),
         "likely Python's None at " + _place('"seed": ', after=True) + ": JSON spells it null",
         "$"),
    Case("unquoted-key", "A key without quotes is named.",
         _text('"title": "Small', 'title: "Small'),
         "likely a key without double quotes at " + _place('"title"'), "$"),
    Case("duplicate-key", "A key repeated inside seeding is named with its object's path.",
         _text('"seed": 7', '"seed": 7, "seed": 8'), "duplicate key 'seed'", "$.seeding"),
    Case("duplicate-top-level-key", "A repeated top-level key is named at $.",
         _text('"id": "small"', '"id": "small", "id": "other"'), "duplicate key 'id'", "$"),
    Case("nan", "NaN is not JSON; a lenient parser would take it as a float.",
         _text('"level": 0.95', '"level": NaN'), "NaN is not a JSON number", "$.interval.level"),
    Case("infinity", "Infinity is not JSON either.",
         _text('"level": 0.95', '"level": Infinity'), "Infinity is not a JSON number",
         "$.interval.level"),
    Case("minus-infinity", "Nor is -Infinity, wherever it appears.",
         _text('"runs_per_condition": 8', '"runs_per_condition": -Infinity'),
         "-Infinity is not a JSON number", "$.runs_per_condition"),
    Case("float-overflow", "1e400 is valid JSON text but overflows a double to Infinity.",
         _text('"params": {}', '"params": {"x": 1e400}'),
         "number too large for a 64-bit float", "$.participants[0].params.x"),
    Case("integer-beyond-64-bit", "An integer beyond 64 bits is refused rather than mangled.",
         _text('"seed": 7', '"seed": ' + "9" * 30), "integer out of 64-bit range",
         "$.seeding.seed"),
    Case("negative-integer-beyond-64-bit", "So is a negative one.",
         _text('"seed": 7', '"seed": -' + "9" * 20), "integer out of 64-bit range",
         "$.seeding.seed"),
    Case("lone-surrogate", 'A lone surrogate ("\\ud800") is valid JSON text with no UTF-8 form.',
         _text('"Small test study"', '"Small \\ud800 study"'),
         "string with a lone surrogate", "$.title"),
    Case("lone-surrogate-key", "A lone surrogate in a key is named at the key's path.",
         _text('"params": {}', '"params": {"\\udc00": 1}'),
         "key with a lone surrogate", '$.participants[0].params["\\udc00"]'),
    Case("not-json", "Text that is not JSON is refused with where the parse stopped.",
         _raw(b"schema = 'repro.protocol/1'\n"), "not JSON (Expecting value at line 1", "$"),
    Case("truncated", "A protocol cut off half way is refused as not JSON.",
         lambda d: setattr(d, "data", d.text().encode()[: len(d.text()) // 2]), "not JSON", "$"),
    Case("empty-file", "An empty file is refused as not JSON.", _raw(b""), "not JSON", "$"),
    Case("only-white-space", "White space alone is no document either.",
         _raw(b" \n\t\n"), "not JSON", "$"),
    Case("byte-order-mark", "A UTF-8 byte-order mark is refused: the file must be plain UTF-8.",
         lambda d: setattr(d, "data", b"\xef\xbb\xbf" + d.text().encode()),
         "Unexpected UTF-8 BOM", "$"),
    Case("latin-1", "Bytes that are not UTF-8 (a Latin-1 title) are refused at $.",
         lambda d: setattr(d, "data", d.text().replace("Small test study", "Étude")
                           .encode("latin-1")), "not UTF-8", "$"),
    Case("encoded-surrogate", "UTF-8-encoded surrogates (CESU-8 style) are not UTF-8.",
         lambda d: setattr(d, "data", d.text().encode().replace(b"Small", b"\xed\xa0\x80")),
         "not UTF-8", "$"),
    Case("utf-16", "A UTF-16 file is not UTF-8.",
         lambda d: setattr(d, "data", d.text().encode("utf-16")), "not UTF-8", "$"),
    Case("top-level-array", "A JSON array at the top is refused as not an object.",
         lambda d: setattr(d, "data", json.dumps([d.protocol]).encode()),
         "expected an object", "$"),
    Case("top-level-string", "So is a string.", _raw(b'"repro.protocol/1"'),
         "expected an object", "$"),
    Case("over-size", "A protocol over the size limit is refused by its size, before parsing.",
         _set("description", value="x" * MAX_PROTOCOL_BYTES),
         f"over the limit of {MAX_PROTOCOL_BYTES} bytes", "$"),
    Case("deep-nesting", "Arrays nested 200 deep are refused at the first one too deep.",
         _set("participants", 0, "params", value={"a": _DEEP}),
         f"nesting deeper than {canonical.MAX_DEPTH} levels",
         "$.participants[0].params.a" + "[0]" * (canonical.MAX_DEPTH - 4)),
]  # fmt: skip


# --------------------------------------------------------------------------- keys and types

UNKNOWN_KEYS = [
    Case("top-level", "An unknown (misspelt) top-level key is named at $.",
         _set("runs_per_condtion", value=3), "unknown key(s) runs_per_condtion", "$"),
    Case("nested", "An unknown key inside seeding is named at $.seeding.",
         _set("seeding", "salt", value=1), "unknown key(s) salt", "$.seeding"),
    Case("array-item", "An unknown key in the second participant is named there.",
         _set("participants", 1, "weight", value=2), "unknown key(s) weight",
         "$.participants[1]"),
    Case("participant-param", "A parameter the adapter does not take is named at params.",
         _set("participants", 0, "params", value={"temperature": 1}),
         "unknown key(s) temperature", "$.participants[0].params"),
    Case("adapter-option", "An option the gymnasium adapter does not take is refused.",
         _set("adapter", "options", value={"render": "human"}), "no option 'render'",
         "$.adapter.options.render"),
    Case("odd-adapter-option", "An option key that is no identifier is named in brackets.",
         _set("adapter", "options", value={"a b": 1}), "no option 'a b'",
         '$.adapter.options["a b"]'),
]  # fmt: skip

WRONG_TYPES = [
    Case("string-count", "A count written as a string is not coerced.",
         _set("runs_per_condition", value="8"), "expected an integer, found a string",
         "$.runs_per_condition"),
    Case("float-count", "10.0 where an integer is expected is refused, not truncated.",
         _set("runs_per_condition", value=10.0), "expected an integer, found a number",
         "$.runs_per_condition"),
    Case("exponent-count", "1e1 is a float in JSON, so it is no count either.",
         _text('"runs_per_condition": 8', '"runs_per_condition": 1e1'),
         "expected an integer, found a number", "$.runs_per_condition"),
    Case("bool-count", "true is an int in Python but not a count in JSON.",
         _set("runs_per_condition", value=True), "expected an integer, found a boolean",
         "$.runs_per_condition"),
    Case("bool-seed", "A boolean seed is refused.", _set("seeding", "seed", value=False),
         "expected an integer, found a boolean", "$.seeding.seed"),
    Case("bool-attempts", "A boolean attempt limit is refused.",
         _set("retry", "max_attempts", value=True), "expected an integer, found a boolean",
         "$.retry.max_attempts"),
    Case("bool-resamples", "A boolean resample count is refused.",
         _set("interval", "resamples", value=True), "expected an integer, found a boolean",
         "$.interval.resamples"),
    Case("bool-interval-level", "A boolean where a number is expected is refused.",
         _set("interval", "level", value=True), "expected a number, found a boolean",
         "$.interval.level"),
    Case("bool-level-name", "A boolean factor level is refused (levels are names or integers).",
         _set("matrix", 0, "levels", value=["CartPole-v1", True]),
         "expected a string or an integer, found a boolean", "$.matrix[0].levels[1]"),
    Case("float-level-name", "A float factor level is refused.",
         _set("matrix", 0, "levels", value=["CartPole-v1", 1.5]),
         "expected a string or an integer, found a number", "$.matrix[0].levels[1]"),
    Case("object-matrix", "An object where the matrix array belongs is refused.",
         _set("matrix", value={"name": "env_id", "levels": ["CartPole-v1"]}),
         "expected an array, found an object", "$.matrix"),
    Case("string-levels", "A string where levels belong is not iterated character by character.",
         _set("matrix", 0, "levels", value="CartPole-v1"), "expected an array, found a string",
         "$.matrix[0].levels"),
    Case("string-participants", "A string where participants belong is refused.",
         _set("participants", value="random"), "expected an array, found a string",
         "$.participants"),
    Case("integer-participant-id", "An integer participant id is refused.",
         _set("participants", 0, "id", value=1), "expected a string, found an integer",
         "$.participants[0].id"),
    Case("array-params", "Participant params must be an object.",
         _set("participants", 0, "params", value=[]), "expected an object, found an array",
         "$.participants[0].params"),
    Case("null-title", "null is not a string.", _set("title", value=None),
         "expected a string, found null", "$.title"),
    Case("null-seeding", "null is not a seeding object.", _set("seeding", value=None),
         "found null", "$.seeding"),
    Case("string-common", "seeding.common is an array of names, not one name.",
         _set("seeding", "common", value="participant"), "expected an array, found a string",
         "$.seeding.common"),
    Case("string-interval-level", "'95%' is not a number.", _set("interval", "level", value="95%"),
         "expected a number, found a string", "$.interval.level"),
    Case("missing-required-key", "A required key left out is named at its path.",
         _drop("seeding", "mode"), "required key missing", "$.seeding.mode"),
    Case("missing-schema", "The schema key is required.", _drop("schema"),
         "required key missing", "$.schema"),
    Case("number-comment", "A $comment that is not a string is refused, not dropped as a note.",
         _set("seeding", "$comment", value=1), "a $comment must be a string, found an integer",
         '$.seeding["$comment"]'),
    Case("null-top-level-comment", "So is a null one at the top.", _set("$comment", value=None),
         "a $comment must be a string, found null", '$["$comment"]'),
    Case("object-comment-in-params", "Free-form params hold comments too, strings only.",
         _set("participants", 1, "params", "$comment", value={"note": "left"}),
         "a $comment must be a string, found an object", '$.participants[1].params["$comment"]'),
]  # fmt: skip


# --------------------------------------------------------------------------- values

_PUBLISHED = {
    "citation": {"title": "A paper", "url": "https://example.org/paper"},
    "decimals": 1,
    "conditions": [
        {"factors": {"env_id": "CartPole-v1"}, "participant": "random", "mean": 22.0},
    ],
}
_HUGE_MATRIX = [{"name": "env_id", "levels": ["CartPole-v1"]}] + [
    {"name": f"f{i}", "levels": list(range(100))} for i in range(10)
]

#: 200 contrasts of random against push-left, each a bootstrap of 100,000 resamples.
_BOOTSTRAPPED_FAMILY = {"family": [
    {"id": f"c{i}", "a": {"participant": "random"}, "b": {"participant": "push-left"},
     "interval": {"method": "bootstrap", "resamples": 100_000, "seed": i}}
    for i in range(200)
]}  # fmt: skip

OUT_OF_RANGE = [
    Case("interval-bootstrap-work",
         "A bootstrap interval of 100,000 resamples of 10,000 runs per condition would take "
         "verify past the limit on the derivations' work: refused at what asks it.",
         _both(_set("runs_per_condition", value=10_000),
               _set("interval", value={"method": "bootstrap", "level": 0.95,
                                       "resamples": 100_000, "seed": 1})),
         "re-deriving its statistics would take", "$.interval.resamples"),
    Case("contrast-bootstraps-work",
         "200 bootstrap contrasts of 100,000 resamples each, each within its own limits, are "
         "past the limit on the derivations' work together: refused at the first that asks most.",
         _set("contrasts", value=_BOOTSTRAPPED_FAMILY), "re-deriving its statistics would take",
         "$.contrasts.family[0]"),
    Case("zero-runs", "A study of zero runs per condition is refused.",
         _set("runs_per_condition", value=0), "runs_per_condition must be at least 1, not 0",
         "$.runs_per_condition"),
    Case("negative-runs", "A negative run count is refused.",
         _set("runs_per_condition", value=-3), "runs_per_condition must be at least 1, not -3",
         "$.runs_per_condition"),
    Case("huge-runs", "2^62 runs would hang while the plan is expanded; refused by plan size.",
         _set("runs_per_condition", value=2**62), f"is over the limit of {MAX_SLOTS}",
         "$.runs_per_condition"),
    Case("plan-one-over-limit", "Conditions x runs one past the slot limit is refused.",
         _set("runs_per_condition", value=MAX_SLOTS // 4 + 1), f"over the limit of {MAX_SLOTS}",
         "$.runs_per_condition"),
    Case("huge-matrix", "A few lines asking for 10^20 conditions are refused before expansion.",
         _set("matrix", value=_HUGE_MATRIX), "conditions (matrix cells x participants) are over",
         "$.matrix"),
    Case("negative-seed", "The master seed must be in [0, 2**63).",
         _set("seeding", "seed", value=-1), "seed must be in [0, 2**63), not -1",
         "$.seeding.seed"),
    Case("negative-bootstrap-seed", "The bootstrap seed too (NumPy refuses it after the runs).",
         _set("interval", value={"method": "bootstrap", "seed": -1}),
         "seed must be in [0, 2**63), not -1", "$.interval.seed"),
    Case("level-above-one", "An interval level above 1 is refused.",
         _set("interval", "level", value=1.5), "level must be in [0.5, 1), not 1.5",
         "$.interval.level"),
    Case("level-one", "Level 1 (an infinite interval) is refused.",
         _set("interval", "level", value=1), "level must be in [0.5, 1), not 1.0",
         "$.interval.level"),
    Case("level-zero", "Level 0 is refused.", _set("interval", "level", value=0),
         "level must be in [0.5, 1), not 0.0", "$.interval.level"),
    Case("level-negative", "A negative level is refused.", _set("interval", "level", value=-0.5),
         "level must be in [0.5, 1), not -0.5", "$.interval.level"),
    Case("published-level-one", "The published figures' level is checked the same way.",
         _set("published", value={**_PUBLISHED, "level": 1.0}), "level must be in [0.5, 1)",
         "$.published.level"),
    Case("zero-resamples", "A bootstrap of zero resamples is refused.",
         _set("interval", value={"method": "bootstrap", "resamples": 0}),
         "resamples must be between 1 and", "$.interval.resamples"),
    Case("few-resamples", "A bootstrap needs at least 100 resamples.",
         _set("interval", value={"method": "bootstrap", "resamples": 99}),
         "a bootstrap needs at least 100 resamples", "$.interval.resamples"),
    Case("familywise-bootstrap", "The family-wise criterion recomputes each observed interval "
         "at its family-wise level from the aggregates, which a bootstrap interval cannot be: "
         "refused together.",
         _both(_set("criteria", value={"bounded": "familywise-interval-containment"}),
               _set("interval", value={"method": "bootstrap"})),
         "which a bootstrap interval cannot be", "$.interval.method"),
    Case("unknown-bounded-criterion", "A bounded criterion repro does not know is refused.",
         _set("criteria", value={"bounded": "per-figure"}),
         'expected one of "mutual-interval-containment", "familywise-interval-containment"',
         "$.criteria.bounded"),
    Case("huge-resamples", "2^62 resamples would exhaust memory in derive, after the runs.",
         _set("interval", value={"method": "bootstrap", "resamples": 2**62}),
         f"resamples must be between 1 and {MAX_RESAMPLES}", "$.interval.resamples"),
    Case("zero-attempts", "At least one attempt per slot.",
         _set("retry", "max_attempts", value=0), "max_attempts must be between 1 and 100",
         "$.retry.max_attempts"),
    Case("too-many-attempts", "At most 100 attempts per slot.",
         _set("retry", "max_attempts", value=101), "max_attempts must be between 1 and 100",
         "$.retry.max_attempts"),
    Case("negative-decimals", "Published decimals are between 0 and 12.",
         _set("published", value={**_PUBLISHED, "decimals": -1}),
         "decimals must be between 0 and 12", "$.published.decimals"),
    Case("minimum-above-maximum", "A measure's minimum above its maximum is refused.",
         _set("measure", value={**SMALL["measure"], "minimum": 5, "maximum": 1}),
         "minimum is greater than maximum", "$.measure"),
    Case("id-with-space", "Ids are letters, digits, '_', '.', '-'.",
         _set("id", value="has space"), "id 'has space' must be 1-64 characters", "$.id"),
    Case("id-with-newline", "A final newline does not slip through the id pattern.",
         _set("id", value="small\n"), "must be 1-64 characters", "$.id"),
    Case("long-id", "Ids are at most 64 characters (65 refused).",
         _set("id", value="a" * 65), "must be 1-64 characters", "$.id"),
    Case("long-participant-id", "So are participant ids.",
         _set("participants", 0, "id", value="p" * 65), "must be 1-64 characters",
         "$.participants[0].id"),
    Case("long-factor-name", "And factor names. (Free text is bounded by the file size only.)",
         _set("matrix", 0, "name", value="f" * 65), "must be 1-64 characters",
         "$.matrix[0].name"),
    Case("empty-id", "An empty id is refused.", _set("id", value=""),
         "must be 1-64 characters", "$.id"),
    Case("title-with-newline", "A title is one line: it becomes a line of bag-info.txt.",
         _set("title", value="x\nPayload-Oxum: 1.1"), "title must be one line", "$.title"),
    Case("title-with-line-separator", "U+2028 and other line or control characters too.",
         _set("title", value="x\u2028y"), "title must be one line", "$.title"),
    Case("orcid-check-character", "An ORCID iD's last character is its ISO 7064 MOD 11-2 "
         "check character: a mistyped iD is refused.",
         _set("authors", value=[{"kind": "person", "name": "A. Person",
                                 "orcid": "https://orcid.org/0000-0002-1825-0098"}]),
         "must be an ORCID iD", "$.authors[0].orcid"),
    Case("orcid-without-url", "An ORCID iD is written as its https URL.",
         _set("authors", value=[{"kind": "person", "name": "A. Person",
                                 "orcid": "0000-0002-1825-0097"}]),
         "must be an ORCID iD", "$.authors[0].orcid"),
    Case("ror-shape", "A ROR ID is https://ror.org/ and nine characters, the first 0.",
         _set("publisher", value={"kind": "organization", "name": "An Organization",
                                  "ror": "https://ror.org/12345"}),
         "must be a ROR ID", "$.publisher.ror"),
    Case("empty-author-name", "An author has a name.",
         _set("authors", value=[{"kind": "organization", "name": ""}]),
         "name must be one line, not empty", "$.authors[0].name"),
    Case("blank-publisher-name", "Nor is a name of spaces one.",
         _set("publisher", value={"kind": "organization", "name": "   "}),
         "name must be one line, not empty", "$.publisher.name"),
    Case("orcid-of-organization", "An ORCID iD identifies a person, not an organization.",
         _set("authors", value=[{"kind": "organization", "name": "An Organization",
                                 "orcid": "https://orcid.org/0000-0002-1825-0097"}]),
         "an ORCID iD identifies a person", "$.authors[0].orcid"),
    Case("ror-of-person", "A ROR ID identifies an organization, not a person.",
         _set("authors", value=[{"kind": "person", "name": "A. Person",
                                 "ror": "https://ror.org/0abcdef12"}]),
         "a ROR ID identifies an organization", "$.authors[0].ror"),
    Case("person-publisher", "The publisher is an organization (RO-Crate 1.1 recommends one).",
         _set("publisher", value={"kind": "person", "name": "A. Person"}),
         "the publisher must be an organization", "$.publisher.kind"),
    Case("common-in-stream-seeding", "Common random numbers share per-run seeds: stream "
         "seeding has none to share, so seeding.common is refused with it.",
         _set("seeding", value={"mode": "stream", "seed": 7, "common": ["participant"]}),
         "common random numbers need per-run seeding, not stream", "$.seeding.common"),
]  # fmt: skip

EMPTY = [
    Case("empty-matrix",
         "A matrix with no factors would be one condition per participant: meaningful in the "
         "abstract, but every adapter here names its simulator through factors (gymnasium: "
         "env_id; cyborg: trial_length and red_agent), so it is refused where it is written.",
         _set("matrix", value=[]), "matrix must not be empty", "$.matrix"),
    Case("empty-levels", "A factor with no levels would empty the whole plan.",
         _set("matrix", 0, "levels", value=[]), "levels must not be empty",
         "$.matrix[0].levels"),
    Case("empty-participants", "A study with nobody to evaluate is refused.",
         _set("participants", value=[]), "participants must not be empty", "$.participants"),
    Case("no-published-figures", "Published figures declared but none given are refused.",
         _set("published", value={**_PUBLISHED, "conditions": []}),
         "published figures declared but none given", "$.published"),
]  # fmt: skip

DUPLICATES = [
    Case("participant-id", "Two participants with one id are refused at the second.",
         _set("participants", 1, "id", value="random"), "duplicate participant id 'random'",
         "$.participants[1].id"),
    Case("level", "A level listed twice would run its condition twice.",
         _set("matrix", 0, "levels", value=["CartPole-v1", "CartPole-v1"]),
         "duplicate level in factor 'env_id'", "$.matrix[0].levels"),
    Case("factor-name", "A factor declared twice is refused at the second.",
         _append("matrix", value={"name": "env_id", "levels": ["Acrobot-v1"]}),
         "duplicate factor name 'env_id'", "$.matrix[1].name"),
    Case("excluded-slot", "The same slot excluded twice is refused at the second exclusion.",
         _set("exclusions", value=[{"slot": "c00-r0001", "reason": "a"},
                                   {"slot": "c00-r0001", "reason": "b"}]),
         "slot 'c00-r0001' excluded twice", "$.exclusions[1].slot"),
    Case("published-condition", "A condition published twice is refused.",
         _set("published", value={**_PUBLISHED,
                                  "conditions": _PUBLISHED["conditions"] * 2}),
         "condition published twice", "$.published.conditions[1]"),
    Case("seeding-common-name", "A name listed twice in seeding.common is refused at the second.",
         _set("seeding", "common", value=["env_id", "participant", "env_id"]),
         "duplicate name 'env_id' in seeding.common", "$.seeding.common[2]"),
    Case("seeding-common-participant-factor", "'participant' in seeding.common is ambiguous "
         "when a factor has that name too: refused (before the adapter's own factor check).",
         _both(_append("matrix", value={"name": "participant", "levels": [1, 2]}),
               _set("seeding", "common", value=["participant"])),
         "'participant' names both the participant and a factor of the matrix",
         "$.seeding.common[0]"),
]  # fmt: skip

UNKNOWN_NAMES = [
    Case("adapter", "An adapter name nobody registered is refused.",
         _set("adapter", "name", value="no-such-sim"), "unknown adapter 'no-such-sim'",
         "$.adapter.name"),
    Case("seeding-mode", "Seeding is stream or per-run; the message lists both.",
         _set("seeding", "mode", value="global"),
         'expected one of "stream", "per-run", found "global"', "$.seeding.mode"),
    Case("schema", "A protocol of another schema version is refused.",
         _set("schema", value="repro.protocol/2"), 'found "repro.protocol/2"', "$.schema"),
    Case("estimand", "An estimand repro does not compute is refused.",
         _set("estimand", value="median"), 'found "median"', "$.estimand"),
    Case("interval-method", "An interval method repro does not compute is refused.",
         _set("interval", "method", value="wald"), 'found "wald"', "$.interval.method"),
    Case("environment", "An env id Gymnasium does not know is refused at its level.",
         _set("matrix", 0, "levels", 1, value="NoSuchEnv-v0"), "NoSuchEnv",
         "$.matrix[0].levels[1]"),
    Case("environment-module-prefix",
         "'module:Env-v1' would make gym.make import the module; no such env id is registered.",
         _set("matrix", 0, "levels", 1, value="os:CartPole-v1"), "doesn't exist",
         "$.matrix[0].levels[1]"),
    Case("environment-path", "A path is no env id.",
         _set("matrix", 0, "levels", 1, value="../envs:CartPole-v1"),
         "Malformed environment ID", "$.matrix[0].levels[1]"),
    Case("factor", "A factor the adapter does not understand is refused at its name.",
         _append("matrix", value={"name": "gravity", "levels": [1, 2]}), "gravity",
         "$.matrix[1].name"),
    Case("no-env-id-factor", "The gymnasium adapter needs an env_id factor.",
         _set("matrix", value=[{"name": "max_episode_steps", "levels": [10]}]),
         "needs an 'env_id' factor", "$.matrix"),
    Case("participant-kind", "A participant kind the adapter does not know is refused.",
         _set("participants", 0, "kind", value="oracle"), "unknown participant kind 'oracle'",
         "$.participants[0].kind"),
    Case("excluded-slot", "An exclusion naming a slot the plan does not have is refused.",
         _set("exclusions", value=[{"slot": "c00-r0001", "reason": "known bad seed"},
                                   {"slot": "c09-r0000", "reason": "typo"}]),
         "unknown slot 'c09-r0000'", "$.exclusions[1].slot"),
    Case("published-condition", "A published figure matching no condition is refused.",
         _set("published", value={**_PUBLISHED, "conditions": [
             *_PUBLISHED["conditions"],
             {"factors": {"env_id": "Acrobot-v1"}, "participant": "random", "mean": -500.0}]}),
         "matches no condition", "$.published.conditions[1].factors"),
    Case("published-participant-missing", "With several participants a figure must name one.",
         _set("published", value={**_PUBLISHED, "conditions": [
             {"factors": {"env_id": "CartPole-v1"}, "mean": 22.0}]}),
         "participant required when there are several", "$.published.conditions[0]"),
    Case("seeding-common-factor", "seeding.common names factors of the matrix or 'participant'; "
         "any other name is refused where it is written.",
         _set("seeding", "common", value=["participant", "env"]), "unknown factor 'env'",
         "$.seeding.common[1]"),
]  # fmt: skip


# --------------------------------------------------------------------------- gymnasium specifics


def _callable(params: dict[str, Any]) -> Mutation:
    return _append("participants", value={"id": "policy", "kind": "callable", "params": params})


def _policies_sha256() -> str:
    return canonical.sha256_hex(POLICIES.read_bytes())


_TARGET_SHAPE = "must look like 'module:attribute', a dotted module name of Python identifiers"
_TARGET = "$.participants[2].params.target"
_PIN = "$.participants[2].params.sha256"
_ACTION = "$.participants[1].params.action"
_MAX_STEPS = {"name": "max_episode_steps", "levels": [200]}

GYMNASIUM = [
    Case("action-outside-space", "A constant action outside the action space is refused.",
         _set("participants", 1, "params", "action", value=7), "is not in the action space",
         _ACTION),
    Case("action-bool", "true would be coerced to action 1; it is refused.",
         _set("participants", 1, "params", "action", value=True),
         "action must be a number or an array of numbers", _ACTION),
    Case("action-string", '"0" would be coerced to action 0; it is refused.',
         _set("participants", 1, "params", "action", value="0"),
         "action must be a number or an array of numbers", _ACTION),
    Case("action-null", "null is no action.", _set("participants", 1, "params", "action",
                                                  value=None),
         "action must be a number or an array of numbers", _ACTION),
    Case("action-fraction", "0.7 would be truncated to 0 in an integer space; it is refused.",
         _set("participants", 1, "params", "action", value=0.7),
         "action must be whole numbers for the integer action space", _ACTION),
    Case("action-missing", "A constant participant needs its action.",
         _set("participants", 1, "params", value={}), "required key missing", _ACTION),
    Case("max-episode-steps-string", "Episode lengths are whole numbers ('abc' ran before).",
         _append("matrix", value={**_MAX_STEPS, "levels": ["abc"]}),
         "max_episode_steps must be a whole number from 1", "$.matrix[1].levels[0]"),
    Case("max-episode-steps-zero", "Zero steps is refused.",
         _append("matrix", value={**_MAX_STEPS, "levels": [200, 0]}),
         "max_episode_steps must be a whole number from 1", "$.matrix[1].levels[1]"),
    Case("max-episode-steps-huge", "Beyond MAX_EPISODE_STEPS is refused.",
         _append("matrix", value={**_MAX_STEPS, "levels": [MAX_EPISODE_STEPS + 1]}),
         f"from 1 to {MAX_EPISODE_STEPS}", "$.matrix[1].levels[0]"),
    Case("max-episode-steps-float", "200.0 is no level at all (levels are names or integers).",
         _append("matrix", value={**_MAX_STEPS, "levels": [200.0]}),
         "expected a string or an integer, found a number", "$.matrix[1].levels[0]"),
    Case("target-relative-import", "'.policies:f' (a relative import) is refused.",
         _callable({"target": ".policies:always_left"}), _TARGET_SHAPE, _TARGET),
    Case("target-absolute-path", "A file path is not a module name.",
         _callable({"target": "/tmp/policies:always_left"}), _TARGET_SHAPE, _TARGET),
    Case("target-parent-path", "Nor is a ../ path.",
         _callable({"target": "../tests/repro_test_policies:always_left"}), _TARGET_SHAPE,
         _TARGET),
    Case("target-file-name", "A file name with its .py suffix reads as a submodule 'py', which "
         "does not exist.",
         _callable({"target": "repro_test_policies.py:always_left"}), "cannot import", _TARGET),
    Case("target-windows-path", "Nor a Windows path.",
         _callable({"target": "C:\\policies:always_left"}), _TARGET_SHAPE, _TARGET),
    Case("target-empty-part", "'a..b' has an empty part.",
         _callable({"target": "repro..policies:always_left"}), _TARGET_SHAPE, _TARGET),
    Case("target-keyword", "A keyword is no module name.",
         _callable({"target": "class:always_left"}), _TARGET_SHAPE, _TARGET),
    Case("target-no-attribute", "The target names module and attribute.",
         _callable({"target": "repro_test_policies"}), _TARGET_SHAPE, _TARGET),
    Case("target-dotted-attribute", "The attribute is one identifier.",
         _callable({"target": "os:path.join"}), _TARGET_SHAPE, _TARGET),
    Case("target-main", "__main__ is whatever script happens to run; it is refused.",
         _callable({"target": "__main__:main"}), "names the running script", _TARGET),
    Case("target-not-installed", "A module that is not importable is refused.",
         _callable({"target": "no_such_policies:act"}), "cannot import", _TARGET),
    Case("target-import-raises", "A module whose import raises is refused, not a traceback.",
         _both(lambda d: d.modules.update(raising_policy="raise RuntimeError('boom')\n"),
               _callable({"target": "raising_policy:act"})),
         "cannot import 'raising_policy:act' (RuntimeError: boom)", _TARGET),
    Case("target-no-source", "A built-in module has no source file to pin.",
         _callable({"target": "sys:exit"}), "has no source file to pin", _TARGET),
    Case("target-wrong-signature", "A target that cannot take (observation, rng) is refused.",
         _callable({"target": "os:getcwd"}), "must be a function taking (observation, rng)",
         _TARGET),
    Case("target-not-string", "The target is a string.", _callable({"target": ["m", "f"]}),
         "target must be a string", _TARGET),
    Case("pin-short", "A pin that is not 64 hex digits is refused as malformed.",
         _callable({"target": "repro_test_policies:always_left", "sha256": "abc"}),
         "sha256 must be 64 lower-case hex digits", _PIN),
    Case("pin-upper-case", "Upper-case hex is refused: digests are compared as written.",
         lambda d: _callable({"target": "repro_test_policies:always_left",
                              "sha256": _policies_sha256().upper()})(d),
         "sha256 must be 64 lower-case hex digits", _PIN),
    Case("pin-with-newline", "A final newline does not slip through.",
         lambda d: _callable({"target": "repro_test_policies:always_left",
                              "sha256": _policies_sha256() + "\n"})(d),
         "sha256 must be 64 lower-case hex digits", _PIN),
    Case("pin-integer", "A pin is a string.",
         _callable({"target": "repro_test_policies:always_left", "sha256": 5}),
         "sha256 must be 64 lower-case hex digits", _PIN),
    Case("pin-mismatch", "A well-formed pin that does not match the module's source refuses "
         "the run, naming the file and both digests.",
         _callable({"target": "repro_test_policies:always_left", "sha256": "0" * 64}),
         "does not match repro_test_policies.py", _PIN),
    Case("cli-option", "The gymnasium adapter takes no --option either.",
         _options("render=human"), "--option render: the gymnasium adapter takes no options",
         None),
    Case("cli-option-without-value", "--option takes KEY=VALUE.", _options("novalue"),
         "--option takes KEY=VALUE, not 'novalue'", None),
]  # fmt: skip


# --------------------------------------------------------------------------- CAGE-2 specifics

_PINS = "$.adapter.options.scenario_sha256"


def _pins(draft: Draft) -> dict[str, Any]:
    pins: dict[str, Any] = draft.protocol["adapter"]["options"]["scenario_sha256"]
    return pins


def _pin(name: str, value: Any) -> Mutation:
    return lambda d: _pins(d).__setitem__(name, value)


def _scenario(change: Callable[[Path, Path], None], *, unpin: bool = True) -> Mutation:
    """Change the private scenario copy; ``change`` gets it and a directory outside it. Unpinned
    by default, so that the refusal is the check under test and not a digest mismatch."""

    def mutate(draft: Draft) -> None:
        assert draft.scenario is not None
        outside = draft.tmp / "outside"
        outside.mkdir(exist_ok=True)
        change(draft.scenario, outside)
        if unpin:
            del draft.protocol["adapter"]["options"]["scenario_sha256"]

    return mutate


def _link_image(scenario: Path, outside: Path) -> None:
    image = scenario / "images" / "Gateway_image.yaml"
    shutil.copy(image, outside / "Gateway_image.yaml")
    image.unlink()
    image.symlink_to(outside / "Gateway_image.yaml")


def _link_images_dir(scenario: Path, outside: Path) -> None:
    shutil.move(scenario / "images", outside / "images")
    (scenario / "images").symlink_to(outside / "images")


def _link_scenario_file(scenario: Path, outside: Path) -> None:
    shutil.move(scenario / "Scenario2.yaml", outside / "Scenario2.yaml")
    (scenario / "Scenario2.yaml").symlink_to(outside / "Scenario2.yaml")


def _image_path(path: str) -> Callable[[Path, Path], None]:
    def change(scenario: Path, outside: Path) -> None:
        (outside / "x.yaml").write_text("Test_Host: {}\n", "utf-8")
        images = scenario / "images" / "images.yaml"
        text = images.read_text("utf-8")
        images.write_text(text.replace("path: Gateway_image", f"path: {path}"), "utf-8")

    return change


def _append_bytes(name: str, data: bytes) -> Callable[[Path, Path], None]:
    def change(scenario: Path, outside: Path) -> None:
        path = scenario / name
        path.write_bytes(path.read_bytes() + data)

    return change


def _agent(params: dict[str, Any]) -> Mutation:
    return _set("participants", value=[{"id": "blue", "kind": "agent_class", "params": params}])


_AGENT = "$.participants[0].params"

CAGE2 = [
    Case("pin-mismatch", "A scenario file whose content differs from its well-formed pin "
         "refuses the run, naming the file and the pin's own path.",
         _scenario(_append_bytes("images/Gateway_image.yaml", b"\n"), unpin=False),
         "scenario file images/Gateway_image.yaml is pinned at",
         f'{_PINS}["images/Gateway_image.yaml"]'),
    Case("pin-changed", "A pin changed in the protocol (well formed) does not match the file.",
         _pin("Scenario2.yaml", "0" * 64), "is pinned at " + "0" * 64,
         f'{_PINS}["Scenario2.yaml"]'),
    Case("pin-short", "A malformed pin is refused as such, not compared.",
         _pin("Scenario2.yaml", "abc"), "must be 64 lower-case hex digits",
         f'{_PINS}["Scenario2.yaml"]'),
    Case("pin-upper-case", "Upper-case hex is malformed.",
         lambda d: _pin("Scenario2.yaml", _pins(d)["Scenario2.yaml"].upper())(d),
         "must be 64 lower-case hex digits", f'{_PINS}["Scenario2.yaml"]'),
    Case("pin-integer", "A pin is a string.", _pin("Scenario2.yaml", 5),
         "must be 64 lower-case hex digits", f'{_PINS}["Scenario2.yaml"]'),
    Case("pins-array", "The pins are an object of file name -> sha256.",
         _set("adapter", "options", "scenario_sha256", value=[]),
         "expected an object of file name -> sha256", _PINS),
    Case("pins-empty", "An empty pin object pins nothing; as with any unpinned file, refused.",
         _set("adapter", "options", "scenario_sha256", value={}), "pins no file", _PINS),
    Case("pin-left-out", "A scenario file the pins leave out is refused.",
         lambda d: _pins(d).pop("images/images.yaml"),
         "scenario file images/images.yaml is pinned at nothing", _PINS),
    Case("pin-of-absent-file", "A pin of an image the directory does not have is refused.",
         _pin("images/Extra_image.yaml", "0" * 64), "but is missing",
         f'{_PINS}["images/Extra_image.yaml"]'),
    Case("pin-parent-path", "A pin naming ../ points outside the scenario directory.",
         _pin("../LICENSE.txt", "0" * 64), "a path outside the scenario directory",
         f'{_PINS}["../LICENSE.txt"]'),
    Case("pin-nested-parent-path", "So does images/../../x.",
         _pin("images/../../x.yaml", "0" * 64), "a path outside the scenario directory",
         f'{_PINS}["images/../../x.yaml"]'),
    Case("pin-absolute-path", "An absolute pin name points outside too.",
         _pin("/etc/passwd", "0" * 64), "a path outside the scenario directory",
         f'{_PINS}["/etc/passwd"]'),
    Case("pin-other-file", "Only Scenario2.yaml and images/NAME.yaml are scenario files.",
         _pin("LICENSE.txt", "0" * 64), "not a scenario file name", f'{_PINS}["LICENSE.txt"]'),
    Case("scenario-dir-in-protocol", "scenario_dir is a host path: refused in the protocol "
         "(frozen into the bundle), whether absolute ...",
         _set("adapter", "options", "scenario_dir", value=str(SCENARIO)),
         "give it as --option scenario_dir=DIR", "$.adapter.options.scenario_dir"),
    Case("relative-scenario-dir-in-protocol", "... or relative with ../.",
         _set("adapter", "options", "scenario_dir", value="../shared/cage2/scenario"),
         "give it as --option scenario_dir=DIR", "$.adapter.options.scenario_dir"),
    Case("scenario-dir-missing", "--option scenario_dir must name a directory that exists.",
         lambda d: d.options.__setitem__(0, f"scenario_dir={d.tmp / 'nowhere'}"),
         "--option scenario_dir: ", None),
    Case("scenario-dir-is-a-file", "... a directory, not a file.",
         lambda d: d.options.__setitem__(0, f"scenario_dir={SCENARIO / 'Scenario2.yaml'}"),
         "Scenario2.yaml is not a directory", None),
    Case("scenario-dir-incomplete", "... with Scenario2.yaml and images/images.yaml.",
         _scenario(lambda s, _: (s / "images" / "images.yaml").unlink()),
         "Scenario2.yaml or images/images.yaml missing", None),
    Case("symlinked-image", "An image file that is a symlink out of the scenario directory is "
         "refused: the ledger would name it as if it were inside.",
         _scenario(_link_image), "images/Gateway_image.yaml resolves to", None),
    Case("symlinked-images-dir", "So is an images/ directory that is a symlink out of it.",
         _scenario(_link_images_dir), "outside the scenario directory", None),
    Case("symlinked-scenario-file", "And a Scenario2.yaml that is a symlink out of it.",
         _scenario(_link_scenario_file), "Scenario2.yaml resolves to", None),
    Case("image-path-parent", "An image path in images.yaml that climbs out (../../x) is "
         "refused: only the pinned images/*.yaml files are read.",
         _scenario(_image_path("../../outside/x")), "names image path '../../outside/x'", None),
    Case("image-path-absolute", "As is an absolute image path.",
         _scenario(_image_path("/etc/hostname")), "which is not a file in images/", None),
    Case("scenario-not-yaml", "A Scenario2.yaml that does not parse is exit 2, not a traceback.",
         _scenario(lambda s, _: (s / "Scenario2.yaml").write_text("Hosts: [\n", "utf-8")),
         "Scenario2 does not resolve (ParserError", None),
    Case("unknown-red-agent", "An unknown red agent is refused at its level.",
         _set("matrix", 1, "levels", 2, value="PurpleAgent"), "unknown red agent 'PurpleAgent'",
         "$.matrix[1].levels[2]"),
    Case("zero-trial-length", "Episodes take at least one step.",
         _set("matrix", 0, "levels", 0, value=0), "trial_length must be a whole number from 1",
         "$.matrix[0].levels[0]"),
    Case("huge-trial-length", "10^15 steps would never end; beyond MAX_EPISODE_STEPS refused.",
         _set("matrix", 0, "levels", 0, value=10**15), f"from 1 to {MAX_EPISODE_STEPS}",
         "$.matrix[0].levels[0]"),
    Case("string-trial-length", "'30' is a name, not a length.",
         _set("matrix", 0, "levels", 0, value="30"), "trial_length must be a whole number",
         "$.matrix[0].levels[0]"),
    Case("missing-factor", "The cyborg adapter needs both of its factors.",
         lambda d: d.protocol["matrix"].pop(1), "needs a 'red_agent' factor", "$.matrix"),
    Case("unknown-factor", "And no others.",
         _append("matrix", value={"name": "seed_offset", "levels": [0]}),
         "unknown factor 'seed_offset'", "$.matrix[2].name"),
    Case("unknown-backend", "The backend is auto, cyborg or csle-cyborg.",
         _set("adapter", "options", "backend", value="gym"), "unknown backend 'gym'",
         "$.adapter.options.backend"),
    Case("unknown-option", "An option the cyborg adapter does not take is refused.",
         _set("adapter", "options", "render", value=True), "unknown option 'render'",
         "$.adapter.options.render"),
    Case("pins-on-command-line", "Pins belong in the protocol, not on the command line.",
         _options("scenario_sha256=x"), "--option scenario_sha256: the cyborg adapter takes",
         None),
    Case("sleep-with-params", "The sleeping participant takes no params.",
         _set("participants", 0, "params", value={"action": 1}), "takes no params",
         "$.participants[0].params"),
    Case("agent-relative-import", "An agent class target is a module name like any other.",
         _agent({"target": ".policies:SleepyBlue"}), _TARGET_SHAPE, f"{_AGENT}.target"),
    Case("agent-path", "A path is not a module name.",
         _agent({"target": "tests/repro_test_policies:SleepyBlue"}), _TARGET_SHAPE,
         f"{_AGENT}.target"),
    Case("agent-function", "A function is no agent class (every session failed to open).",
         _agent({"target": "repro_test_policies:always_left"}),
         "must be a class made without arguments", f"{_AGENT}.target"),
    Case("agent-pin-malformed", "An agent class's pin is checked for form ...",
         _agent({"target": "repro_test_policies:SleepyBlue", "sha256": "A" * 64}),
         "sha256 must be 64 lower-case hex digits", f"{_AGENT}.sha256"),
    Case("agent-pin-mismatch", "... and against the module's source.",
         _agent({"target": "repro_test_policies:SleepyBlue", "sha256": "f" * 64}),
         "does not match repro_test_policies.py", f"{_AGENT}.sha256"),
    Case("agent-unknown-param", "An agent class takes target and sha256 only.",
         _agent({"target": "repro_test_policies:SleepyBlue", "path": "/tmp"}),
         "unknown key(s) path", _AGENT),
]  # fmt: skip


# --------------------------------------------------------------------------- the tests


def _unique(*tables: list[Case]) -> None:
    for table in tables:
        names = _ids(table)
        assert len(set(names)) == len(names), names


class TestTables:
    """The corpus itself is sound."""

    def test_names_unique(self) -> None:
        """Within each table every case has its own name (pytest ids)."""
        _unique(PROTOCOL_FILE, STRICT_JSON, UNKNOWN_KEYS, WRONG_TYPES, OUT_OF_RANGE, EMPTY)
        _unique(DUPLICATES, UNKNOWN_NAMES, GYMNASIUM, CAGE2)

    def test_gymnasium_base_is_good(self, tmp_path: Path) -> None:
        """The unmutated small protocol prepares without complaint: every refusal below comes
        from its mutation."""
        path = tmp_path / "p.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        prepare(path, {})

    @pytest.mark.slow
    @needs_cyborg
    def test_cage2_base_is_good(self, tmp_path: Path) -> None:
        """So does the reduced CAGE-2 protocol on a private copy of the scenario."""
        scenario = _scenario_copy(tmp_path)
        prepare(REDUCED, {"scenario_dir": str(scenario)})


class TestProtocolFile:
    """The protocol path must be a readable regular file."""

    @pytest.mark.parametrize("case", PROTOCOL_FILE, ids=_ids(PROTOCOL_FILE))
    def test_refused(self, case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Each row: exit 2, the file named, nothing written."""
        _refused(case, SMALL, tmp_path, monkeypatch)

    @pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
    def test_unreadable(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A file without read permission is refused with the reason (FIFO and directory rows
        cover unreadable protocols when running as root)."""
        _refused(UNREADABLE, SMALL, tmp_path, monkeypatch)


@pytest.mark.parametrize("case", STRICT_JSON, ids=_ids(STRICT_JSON))
def test_strict_json(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a lenient JSON parser would accept is refused, naming where."""
    _refused(case, SMALL, tmp_path, monkeypatch)


@pytest.mark.parametrize("case", UNKNOWN_KEYS, ids=_ids(UNKNOWN_KEYS))
def test_unknown_keys(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys the protocol model or the adapter does not declare are refused, with their path."""
    _refused(case, SMALL, tmp_path, monkeypatch)


@pytest.mark.parametrize("case", WRONG_TYPES, ids=_ids(WRONG_TYPES))
def test_wrong_types(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Values of the wrong JSON type are refused at their path, without coercion."""
    _refused(case, SMALL, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("case", OUT_OF_RANGE, ids=_ids(OUT_OF_RANGE))
def test_out_of_range(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Right type, wrong value: refused at the JSON path of the field itself."""
    _refused(case, SMALL, tmp_path, monkeypatch)


@pytest.mark.parametrize("case", EMPTY, ids=_ids(EMPTY))
def test_empty(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty collections that leave nothing to run or compare are refused."""
    _refused(case, SMALL, tmp_path, monkeypatch)


#: The rows above refused by a field's own constraint, which the protocol schema states too (the
#: rest are rules across fields, or, for "id-with-newline", a final newline that Python's
#: ``re.search``, which jsonschema uses, lets ``$`` match before: only the model refuses it; and
#: the ORCID rows, whose constraint the schema does not state, a pattern stating its shape but not
#: its check character).
_STATED = [
    c
    for c in OUT_OF_RANGE + EMPTY
    if c.name
    not in {
        "interval-bootstrap-work",
        "contrast-bootstraps-work",
        "huge-runs",
        "plan-one-over-limit",
        "huge-matrix",
        "few-resamples",
        "familywise-bootstrap",
        "minimum-above-maximum",
        "id-with-newline",
        "no-published-figures",
        "common-in-stream-seeding",
        "orcid-check-character",
        "orcid-without-url",
        "orcid-of-organization",
        "ror-of-person",
        "person-publisher",
    }
]


@pytest.mark.parametrize("case", _STATED, ids=_ids(_STATED))
def test_the_schema_refuses_it_too(case: Case, tmp_path: Path) -> None:
    """The protocol schema refuses the row's protocol at the row's JSON path: its keywords
    (``pattern``, ``minimum``, ``minItems``, ...) are read from the validators that refuse it."""
    draft = Draft(copy.deepcopy(SMALL), tmp_path)
    case.mutate(draft)
    validator = jsonschema.Draft202012Validator(schemas.load("protocol"))
    errors = list(validator.iter_errors(draft.protocol))
    paths = set()
    while errors:
        error = errors.pop()
        # A value that may be null too fails an anyOf: the branch's errors are in its context.
        errors += error.context or []
        paths.add(
            "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        )
    assert case.path in paths, paths


@pytest.mark.parametrize("case", DUPLICATES, ids=_ids(DUPLICATES))
def test_duplicates(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What must be unique is refused at its second occurrence."""
    _refused(case, SMALL, tmp_path, monkeypatch)


@pytest.mark.parametrize("case", UNKNOWN_NAMES, ids=_ids(UNKNOWN_NAMES))
def test_unknown_names(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Well-typed protocols naming things that do not exist are refused before any write."""
    _refused(case, SMALL, tmp_path, monkeypatch)


@pytest.mark.parametrize("case", GYMNASIUM, ids=_ids(GYMNASIUM))
def test_gymnasium(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gymnasium participants and factors: actions, episode lengths, callable targets (module
    names only: no paths, no relative imports) and their sha256 pins."""
    _refused(case, SMALL, tmp_path, monkeypatch)


def _scenario_copy(tmp_path: Path) -> Path:
    scenario = tmp_path / "scenario"
    shutil.copytree(SCENARIO, scenario)
    for path in [scenario, *scenario.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return scenario


@needs_cyborg
@pytest.mark.parametrize("case", CAGE2, ids=_ids(CAGE2))
def test_cage2(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CAGE-2: scenario pins (malformed and mismatched), scenario files that lie outside the
    scenario directory (pin names, symlinks, image paths), scenario_dir, factors, agent classes.
    Each row runs on a private copy of the scenario given as --option scenario_dir."""
    base = json.loads(REDUCED.read_text("utf-8"))
    base["runs_per_condition"] = 1
    del base["published"]  # so that matrix rows fail for their own reason, not a figure's
    scenario = _scenario_copy(tmp_path)
    _refused(case, base, tmp_path, monkeypatch, [f"scenario_dir={scenario}"], scenario)


class TestOutputRoot:
    """The output root must be fresh; an existing one is refused and left exactly as it was."""

    def test_existing_out_directory(self, tmp_path: Path) -> None:
        """An existing --out directory is refused with exit 2 and left exactly as it was."""
        path = tmp_path / "p.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        out = tmp_path / "out"
        out.mkdir()
        (out / "keep.txt").write_text("precious\n", "utf-8")
        (out / "data").mkdir()
        (out / "data" / "old.json").write_bytes(b"{}\n")
        before = {
            p.relative_to(out).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in out.rglob("*")
        }
        result = _study(path, out)
        assert result.exit_code == 2, result.output
        assert "already exists" in _flat(result.stderr)
        after = {
            p.relative_to(out).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in out.rglob("*")
        }
        assert after == before

    def test_existing_empty_out_directory(self, tmp_path: Path) -> None:
        """Even an empty --out directory is refused and stays empty."""
        path = tmp_path / "p.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        out = tmp_path / "out"
        out.mkdir()
        result = _study(path, out)
        assert result.exit_code == 2, result.output
        assert "already exists" in _flat(result.stderr)
        assert list(out.iterdir()) == []

    def test_existing_out_file(self, tmp_path: Path) -> None:
        """An existing regular file at --out is refused and not overwritten."""
        path = tmp_path / "p.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        out = tmp_path / "out"
        out.write_bytes(b"not yours\n")
        result = _study(path, out)
        assert result.exit_code == 2, result.output
        assert "already exists" in _flat(result.stderr)
        assert out.read_bytes() == b"not yours\n"

    def test_dangling_symlink_out(self, tmp_path: Path) -> None:
        """A dangling symlink at --out counts as existing: nothing is created at its target."""
        path = tmp_path / "p.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        out = tmp_path / "out"
        target = tmp_path / "elsewhere"
        out.symlink_to(target)
        result = _study(path, out)
        assert result.exit_code == 2, result.output
        assert "already exists" in _flat(result.stderr)
        assert not target.exists()


class TestCanonicalLoads:
    """repro._json.canonical.loads names the path of every strictness violation."""

    @pytest.mark.parametrize(
        ("text", "path"),
        [
            (b'{"a": [{"x": 1}, {"y": 1, "y": 2}]}', "@ $.a[1]"),
            (b'{"a": [{"x": 1}, {"b": [{}, {"k": 1, "k": 1}]}]}', "@ $.a[1].b[1]"),
            (b'[{"x": 1}, [{"z": 0, "z": 0}]]', "@ $[1][0]"),
            (b'{"weird key": {"d": 1, "d": 2}}', '@ $["weird key"]'),
            (b'{"a": 1, "a": 2}', "@ $"),
        ],
    )
    def test_duplicate_key_path(self, text: bytes, path: str) -> None:
        """A duplicate key anywhere is refused, naming the path of the object that repeats it."""
        with pytest.raises(BadInput) as info:
            canonical.loads(text, what="doc")
        message = str(info.value)
        assert message.startswith("doc: duplicate key")
        assert message.endswith(path)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            (b'{"a": [1, NaN]}', "NaN is not a JSON number @ $.a[1]"),
            (b'{"a": {"b": -Infinity}}', "-Infinity is not a JSON number @ $.a.b"),
            (b'{"a": [' + b"9" * 25 + b"]}", "integer out of 64-bit range @ $.a[0]"),
            (b"\xff{}", "not UTF-8 (byte 0) @ $"),
            (b'{"a": ["x", "\\ud800"]}', "string with a lone surrogate (no UTF-8 form) @ $.a[1]"),
            (
                b'{"a": {"\\udc00": 1}}',
                'key with a lone surrogate (no UTF-8 form) @ $.a["\\udc00"]',
            ),
            (b'{"a": {"b": 1e400}}', "number too large for a 64-bit float @ $.a.b"),
        ],
    )
    def test_other_refusals(self, text: bytes, message: str) -> None:
        """NaN, Infinity, huge integers, non-UTF-8 bytes, lone surrogates and numbers that overflow
        a double are refused at their path."""
        with pytest.raises(BadInput, match=r"^doc: ") as info:
            canonical.loads(text, what="doc")
        assert str(info.value).endswith(message)

    def test_depth_limit(self) -> None:
        """MAX_DEPTH levels parse; one more is refused at the path of the deepest container."""
        ok = b"[" * canonical.MAX_DEPTH + b"]" * canonical.MAX_DEPTH
        assert canonical.loads(ok) is not None
        deep = b"[" * (canonical.MAX_DEPTH + 1) + b"]" * (canonical.MAX_DEPTH + 1)
        with pytest.raises(BadInput) as info:
            canonical.loads(deep)
        assert str(info.value).endswith("@ $" + "[0]" * canonical.MAX_DEPTH)

    def test_syntax_hints_only_when_asked(self) -> None:
        """A syntax error names its likely cause only with ``hints`` (a protocol, which a person
        writes); a bundle's files, which repro writes, keep the parser's message alone."""
        text = b'{\n "a": 1,\n}'
        with pytest.raises(BadInput) as plain:
            canonical.loads(text, what="doc")
        assert str(plain.value) == (
            "doc: not JSON (Expecting property name enclosed in double quotes at line 3 "
            "column 1) @ $"
        )
        with pytest.raises(BadInput) as hinted:
            canonical.loads(text, what="doc", hints=True)
        assert str(hinted.value) == (
            "doc: not JSON (Expecting property name enclosed in double quotes at line 3 "
            "column 1); likely a trailing comma at line 2 column 8, which JSON does not allow "
            "before } @ $"
        )

    @pytest.mark.parametrize(
        ("text", "hint"),
        [
            ('{"a": 1,\n\n  }', "a trailing comma at line 1 column 8"),
            ("[1, 2,]", "a trailing comma at line 1 column 6"),
            ('{"a": 1 "b": 2}', "a missing comma before line 1 column 9"),
            ('{"a": "x"\n "b": 2}', "a missing comma at the end of line 1"),
            ("{'a': 1}", "a string in single quotes at line 1 column 2"),
            ('{"a": /* no */ 1}', "a comment at line 1 column 7"),
            ('{"a": False}', "Python's False at line 1 column 7: JSON spells it false"),
            ("{a: 1}", "a key without double quotes at line 1 column 2"),
            ('{"a": 1}{}', None),
            ('{"a": 1,,}', None),
            ("", None),
        ],
    )
    def test_syntax_hint(self, text: str, hint: str | None) -> None:
        """Each common hand-written mistake is named at its own place; anything else gets no
        guess."""
        try:
            json.loads(text)
        except json.JSONDecodeError as error:
            found = canonical.syntax_hint(text, error.msg, error.pos)
        else:
            raise AssertionError(f"{text!r} parses")
        if hint is None:
            assert found is None
        else:
            assert found is not None and found.startswith(hint), found

    def test_size_limit(self) -> None:
        """Input over max_bytes is refused before parsing."""
        with pytest.raises(BadInput, match="over the limit of 8 bytes @ \\$"):
            canonical.loads(b'{"a": 12345}', max_bytes=8)
