"""``repro show``: it shows only bundles that verify; ``--json`` prints their derived files as
one JSON object; ``--html`` writes one self-contained page, never over an existing file, and
headless Chromium renders that page with exactly the bundle's figures.

The Chromium test is skipped when /usr/bin/chromium is missing, unless CI is set (``.ci/run``
installs it), in which case its absence fails the test: CI never skips it quietly.
"""

from __future__ import annotations

import importlib.util
import json
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from browser import run_chromium
from htmlpage import check_figures, external_references, parse, without_section
from repro._cli.app import app
from repro.verify import bundle_sha256
from test_cli_output import in_pty

# Slow: shows bundles in the terminal and in headless Chromium.
pytestmark = pytest.mark.slow

runner = CliRunner()


def _json(bundle: Path, name: str) -> Any:
    return json.loads((bundle / "data" / name).read_text("utf-8"))


def _tamper(bundle: Path) -> None:
    """Change one figure of aggregates.json, as a forger would, without fixing the manifests."""
    path = bundle / "data" / "aggregates.json"
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"valid":8', b'"valid":9', 1))
    assert path.read_bytes() != data


# --------------------------------------------------------------------------- --json


@pytest.mark.parametrize("which", ["published_bundle", "scored_bundle"])
def test_json_holds_the_bundles_derived_files(which: str, request: pytest.FixtureRequest) -> None:
    """stdout is one JSON object: ok, the bundle's identity as verify gives it, the protocol's
    id and sha256, and aggregates.json, tiers.json, scores.json (null without scoring),
    contrasts.json (null without contrasts) and rl-aggregates.json (null without an rl section)
    as stored."""
    bundle: Path = request.getfixturevalue(which)
    result = runner.invoke(app, ["show", str(bundle), "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    protocol = _json(bundle, "protocol.json")
    scores = _json(bundle, "scores.json") if which == "scored_bundle" else None
    assert shown == {
        "ok": True,
        "bundle_sha256": bundle_sha256(bundle),
        "protocol": {
            "id": protocol["protocol"]["id"],
            "title": protocol["protocol"]["title"],
            "sha256": protocol["sha256"],
        },
        "aggregates": _json(bundle, "aggregates.json"),
        "tiers": _json(bundle, "tiers.json"),
        "scores": scores,
        "contrasts": _json(bundle, "contrasts.json") if which == "scored_bundle" else None,
        "rl_aggregates": None,
    }
    assert shown["tiers"]["reproduction"]["verdict"] in ("failed", "unavailable")


def test_json_of_a_bundle_that_does_not_verify_is_verifys(bundle_copy: Path) -> None:
    """A tampered bundle: exit 1 and, on stdout, exactly what ``repro verify --json`` prints:
    ok false and every finding."""
    _tamper(bundle_copy)
    result = runner.invoke(app, ["show", str(bundle_copy), "--json"])
    verified = runner.invoke(app, ["verify", str(bundle_copy), "--json"])
    assert result.exit_code == verified.exit_code == 1
    report = json.loads(result.stdout)
    assert report == json.loads(verified.stdout)
    assert report["ok"] is False and report["bundle_sha256"] is None
    assert any(f["file"] == "data/aggregates.json" for f in report["findings"])


# --------------------------------------------------------------------------- tables, --html


def test_show_prints_the_tables_of_a_verified_bundle(published_bundle: Path) -> None:
    """Without options: the conditions, the published figures, the class and the tiers."""
    result = runner.invoke(app, ["show", str(published_bundle)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("CartPole-v1", "20.0", "reproduction: failed", "execution-control"):
        assert text in result.stdout


def _scores_text(check: dict[str, Any]) -> str:
    """A check's cell as ``repro show`` words it: ``5/6 0.83 [0.44-0.97]``."""
    text = f"{check['passed']}/{check['runs']}"
    if check["rate"] is not None:
        text += f" {check['rate']:.2f} [{check['low']:.2f}-{check['high']:.2f}]"
    return text


def test_at_80_columns_contrasts_and_pass_rates_are_whole(scored_bundle: Path) -> None:
    """On a terminal 80 columns wide (a pseudo-terminal, as a person's), the contrasts table,
    which would cut its cells (``contra…``, ``inconc…``), is printed as ``key: value`` blocks:
    every contrast's ID and verdict whole on its lines, nothing cut with an ellipsis, no line
    past 80 columns; and every scored cell's pass rate of every check is printed with its
    Wilson interval, as scores.json holds it."""
    status, text = in_pty(["show", str(scored_bundle)], columns=80)
    assert status == 0, text
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= 80, text
    assert "\u2026" not in text, text
    contrasts = _json(scored_bundle, "contrasts.json")["contrasts"]
    stripped = [" ".join(x.split()) for x in lines]
    for c in contrasts:
        name = c["id"] + (" *" if c["primary"] else "")
        assert f"contrast: {name}" in stripped, c["id"]
    verdicts = [x for x in stripped if x.startswith("verdict: ")]
    # The contrasts' verdicts come first; the pass rates' "verdict" check follows.
    assert [v.removeprefix("verdict: ") for v in verdicts[: len(contrasts)]] == [
        c["verdict"] for c in contrasts
    ]
    # The pass rates fit as a table at 80 columns, each cell wrapped at its spaces.
    rows = _table_rows(lines, "pass rates by cell")
    for cell in _json(scored_bundle, "scores.json")["cells"]:
        expected = [cell["condition"], cell["stratum"], *map(_scores_text, cell["checks"])]
        assert rows[cell["condition"]] == expected, (rows.get(cell["condition"]), expected)


def _table_rows(lines: list[str], title: str) -> dict[str, list[str]]:
    """The rows of the box-drawn table under the line holding ``title``, by their first
    cell: each cell's text, its wrapped lines joined by a space."""
    at = next(i for i, x in enumerate(lines) if title in x)
    rows: dict[str, list[str]] = {}
    current: list[list[str]] = []
    for line in lines[at + 1 :]:
        if line.startswith("\u2514"):  # the table's bottom edge
            break
        if not line.startswith("\u2502"):
            continue
        cells = [c.strip() for c in line.strip("\u2502").split("\u2502")]
        if cells[0]:
            current = [[c] if c else [] for c in cells]
            rows[cells[0]] = []
        else:
            for parts, c in zip(current, cells, strict=True):
                parts += [c] if c else []
        rows[current[0][0]] = [" ".join(parts) for parts in current]
    return rows


def test_a_wide_terminal_keeps_the_tables(scored_bundle: Path) -> None:
    """On a terminal wide enough for every cell, the contrasts and the pass rates are tables
    (a header row naming their columns), not blocks."""
    status, text = in_pty(["show", str(scored_bundle)], columns=240)
    assert status == 0, text
    heads = [" ".join(x.replace("\u2503", " ").split()) for x in text.splitlines()]
    assert "contrast claim verdict n difference interval p p adj." in heads, text
    assert "id stratum concepts domains blocking verdict" in heads, text
    assert not any(x.startswith("contrast: ") for x in heads)


def test_show_first_names_the_protocol_and_says_it_verified(published_bundle: Path) -> None:
    """Before any table: the protocol's ID and title, then that the bundle verified, with its
    sha256 as ``repro verify`` gives it."""
    result = runner.invoke(app, ["show", str(published_bundle)])
    assert result.exit_code == 0, result.output
    protocol = _json(published_bundle, "protocol.json")["protocol"]
    first, second, *rest = result.stdout.splitlines()
    assert first == f"protocol {protocol['id']}: {protocol['title']}"
    assert (
        second == f"verified: {published_bundle} (bundle sha256 {bundle_sha256(published_bundle)})"
    )
    assert rest and "by condition" in rest[0]


def test_a_bundle_that_does_not_verify_is_not_shown(bundle_copy: Path, tmp_path: Path) -> None:
    """A tampered bundle: exit 1, each finding named on stderr, no table and no page written."""
    _tamper(bundle_copy)
    page = tmp_path / "report.html"
    result = runner.invoke(
        app, ["show", str(bundle_copy), "--html", str(page)], env={"COLUMNS": "400"}
    )
    assert result.exit_code == 1
    assert "FAIL data/aggregates.json" in result.stderr
    assert "does not verify" in result.stderr
    assert result.stdout == ""
    assert not page.exists()


def test_html_is_written_and_json_stays_alone_on_stdout(
    published_bundle: Path, tmp_path: Path
) -> None:
    """--html writes the page; with --json, stdout still parses as the JSON object alone and
    the note that the page was written goes to stderr."""
    page = tmp_path / "report.html"
    result = runner.invoke(app, ["show", str(published_bundle), "--json", "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True
    assert f"html written to {page}" in result.stderr
    check_figures(parse(page.read_text("utf-8")), published_bundle)


@pytest.mark.parametrize("kind", ["file", "dangling symlink"])
def test_html_never_overwrites(published_bundle: Path, tmp_path: Path, kind: str) -> None:
    """An existing FILE, even a symlink to nothing: exit 2, it is left as it was."""
    page = tmp_path / "report.html"
    if kind == "file":
        page.write_text("mine", "utf-8")
    else:
        page.symlink_to(tmp_path / "nowhere")
    result = runner.invoke(app, ["show", str(published_bundle), "--html", str(page)])
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    if kind == "file":
        assert page.read_text("utf-8") == "mine"
    else:
        assert page.is_symlink() and not (tmp_path / "nowhere").exists()


def test_html_of_no_bundle_or_to_no_directory_writes_nothing(
    published_bundle: Path, tmp_path: Path
) -> None:
    """Not a bundle, or a FILE in a directory that does not exist: exit 2, nothing written."""
    page = tmp_path / "report.html"
    missing = runner.invoke(app, ["show", str(tmp_path / "absent"), "--html", str(page)])
    assert missing.exit_code == 2 and "not a bundle directory" in missing.stderr
    assert not page.exists()
    nowhere = tmp_path / "no-such-dir" / "report.html"
    result = runner.invoke(app, ["show", str(published_bundle), "--html", str(nowhere)])
    assert result.exit_code == 2
    assert not nowhere.parent.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_html_that_cannot_be_written_whole_leaves_nothing(
    published_bundle: Path, tmp_path: Path
) -> None:
    """Under a 4 KiB file-size limit the page cannot be written whole: exit 2, and the part
    written is removed."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    page = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "repro", "show", str(published_bundle), "--html", str(page)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )
    assert done.returncode == 2, done.stderr
    assert str(page) in done.stderr
    assert not page.exists()


def test_plot_without_matplotlib_writes_no_page(
    published_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--plot without matplotlib is refused before anything is written, the page included; the
    refusal says how to get the plot extra, in the README's form."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "matplotlib" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    page, plot = tmp_path / "report.html", tmp_path / "plot.png"
    result = runner.invoke(
        app, ["show", str(published_bundle), "--html", str(page), "--plot", str(plot)]
    )
    assert result.exit_code == 2
    assert "uv run --extra plot repro" in result.stderr
    assert not page.exists() and not plot.exists()


# --------------------------------------------------------------------------- in a browser


def _dump_dom(chromium: Path, page: Path, tmp_path: Path) -> str:
    """The DOM headless Chromium builds from ``page``."""
    return run_chromium(chromium, tmp_path, "--dump-dom", page.as_uri(), timeout=120)


@pytest.mark.parametrize("which", ["published_bundle", "scored_bundle"])
def test_chromium_shows_exactly_the_bundles_figures(
    which: str, request: pytest.FixtureRequest, chromium: Path, tmp_path: Path
) -> None:
    """The page as headless Chromium renders it: every data-value equals the figure of the
    bundle's JSON it names (means, interval bounds, n, published values, scores), the plot is
    an SVG with a mean mark per condition and the estimand, and no element refers to anything
    outside the page."""
    bundle: Path = request.getfixturevalue(which)
    page = tmp_path / "report.html"
    result = runner.invoke(app, ["show", str(bundle), "--html", str(page)])
    assert result.exit_code == 0, result.output
    elements = parse(_dump_dom(chromium, page, tmp_path))
    in_text = check_figures(elements, bundle)
    conditions = _json(bundle, "aggregates.json")["conditions"]
    for c in conditions:
        for field in ("valid", "mean", "low", "high"):
            assert ("condition", c["condition"], field) in in_text
    plain = without_section(elements, "contrasts")
    svg = [e for e in plain if e.tag == "svg"]
    assert len(svg) == 1
    circles = [e for e in plain if e.tag == "circle" and "data-value" in e.attrs]
    assert len(circles) == len(conditions) + 1
    assert external_references(elements, page.as_uri()) == []
    title = _json(bundle, "protocol.json")["protocol"]["title"]
    assert [e.text for e in elements if e.tag == "h1"] == [title]
