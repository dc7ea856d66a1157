"""docs/harness.md, the command adapter's contract, is in step with the code: its run spec is
what the adapter sends a harness, key for key and value for value (the release's absolute path
aside), its outcome is what the shipped starting harness answers to that spec, its table of
spec keys names exactly the spec's keys, and the adapter's docs link to it."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import ROOT, run_study
from repro._cli.app import app
from repro._json import canonical

DOC = ROOT / "docs" / "harness.md"

#: A harness that saves the exact bytes of its stdin beside itself, then answers as the shipped
#: starting harness (harness.py, beside it) does.
_RECORDER = """import json, pathlib, runpy, sys
data = sys.stdin.buffer.read()
here = pathlib.Path(__file__).parent
spec = json.loads(data)
(here / ("spec-" + spec["slot"] + ".json")).write_bytes(data)
answer = runpy.run_path(str(here / "harness.py"))["answer"]
sys.stdout.write(json.dumps(answer(spec)))
"""


def _block(marker: str) -> Any:
    """The JSON of the fenced block that follows ``<!-- marker -->`` in the doc."""
    text = DOC.read_text("utf-8")
    found = re.search(rf"<!-- {marker} -->\n```json\n(.*?)\n```", text, re.S)
    assert found is not None, marker
    return json.loads(found.group(1))


def _shape(value: Any) -> Any:
    """The keys of every object in ``value``, nested, with the JSON type of every other value."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return type(value).__name__


@pytest.fixture(scope="module")
def sent(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path]:
    """What the adapter sent the first slot of the starting protocol, run as the doc says
    (with ``--option release=candidate``), and the bundle it made."""
    folder = tmp_path_factory.mktemp("doc")
    result = CliRunner().invoke(
        app, ["protocol", "new", "--adapter", "command", "--out", str(folder / "p.json")]
    )
    assert result.exit_code == 0, result.output
    (folder / "candidate").mkdir()
    (folder / "candidate" / "release.json").write_text('{"version": "1.0"}\n', "utf-8")
    (folder / "recorder.py").write_text(_RECORDER, "utf-8")
    options = {"harness": str(folder / "recorder.py"), "release": str(folder / "candidate")}
    bundle = run_study(folder / "p.json", folder / "bundle", options=options)
    return (folder / "spec-c00-r0000.json").read_bytes(), bundle


@pytest.mark.slow
def test_the_run_spec_is_what_the_adapter_sends(sent: tuple[bytes, Path]) -> None:
    """The doc's run spec has the keys (nested) and the values of the spec the adapter
    wrote to the harness's stdin, the release's absolute path aside; the bytes sent are
    canonical JSON on one line ending in a newline, as the doc says."""
    data, _ = sent
    spec = json.loads(data)
    shown = _block("run-spec")
    assert _shape(shown) == _shape(spec)
    assert Path(spec["release"]).is_absolute() and spec["release"].endswith("/candidate")
    assert {k: v for k, v in shown.items() if k != "release"} == {
        k: v for k, v in spec.items() if k != "release"
    }
    assert data == canonical.dumps(spec) and data.count(b"\n") == 1


def test_the_outcome_is_what_the_starting_harness_answers(sent: tuple[bytes, Path]) -> None:
    """The doc's outcome is what the shipped harness.py answers to that spec, and what the
    bundle's record of the slot keeps."""
    data, bundle = sent
    shipped = ROOT / "src" / "repro" / "templates" / "command_harness.py"
    answer = runpy.run_path(str(shipped))["answer"]
    assert _block("outcome") == answer(json.loads(data))
    first = (bundle / "data" / "runs" / "c00.jsonl").read_text("utf-8").splitlines()[0]
    record = json.loads(first)
    assert record["slot"] == "c00-r0000" and record["status"] == "valid"
    assert record["outcome"] == _block("outcome")


def test_the_key_table_names_every_spec_key(sent: tuple[bytes, Path]) -> None:
    """The rows of the doc's table of spec keys are exactly the spec's top-level keys."""
    text = DOC.read_text("utf-8")
    table = text[text.index("| Key | Meaning |") :].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([a-z_0-9]+)` \|", table, re.M)
    assert sorted(rows) == sorted(json.loads(sent[0]))


def test_the_adapter_docs_link_to_the_contract() -> None:
    """docs/adapter-api.md and docs/tutorial.md link to harness.md where they describe the
    command adapter, and no doc or template lists an ``attempt`` key in the run spec."""
    for name in ("adapter-api.md", "tutorial.md"):
        assert "(harness.md)" in (ROOT / "docs" / name).read_text("utf-8"), name
    for path in [*(ROOT / "docs").glob("*.md"), *(ROOT / "src").rglob("*.py")]:
        text = " ".join(path.read_text("utf-8").split())
        assert "seed, attempt, scenario" not in text, path
    template = (ROOT / "src" / "repro" / "templates" / "command.json").read_text("utf-8")
    assert "attempt, scenario" not in template
