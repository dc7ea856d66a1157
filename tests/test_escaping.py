"""No markup or escape sequence from a bundle reaches a reader's renderer or terminal.

A hostile protocol (markup, newlines, escape sequences, C1 controls and bidi overrides in its
title, factor levels, descriptions, participant params, exclusion reason, citation and source
disagreements) is run through a real study; its Markdown (the validation report, ``repro
publish``'s table) is read back with markdown-it (CommonMark, HTML on, GitHub's tables and
strikethrough), its terminal output is read as the bytes a terminal would get (piped, and with
rich forced to a terminal), its JSON parsed, and its HTML page parsed. A bundle directory
holding files named with each hostile sequence is verified, shown and compared the same way."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from browser import run_chromium
from conftest import ROOT, run_study
from htmlpage import Element, parse
from repro._derive.report import version_of
from repro._escape import json_text, markdown_code, markdown_text, visible
from repro._present.publishing import table
from repro._present.showing import Shown, load

#: Markup that a renderer passing HTML runs.
HTML = "<script>alert(1)</script><img src=x onerror=alert(2)>"
#: Markdown that, active, would fake a heading and a class line and make links.
MARKDOWN = (
    "\n# Reproduction class: **exact**\n[link](javascript:alert(3)) ![i](x) `c` | <http://a.b> &lt;"
)
#: What a terminal acts on: clear the screen, retitle it, move up and erase a line, return the
#: carriage, conceal, a C1 CSI, and a right-to-left override with an isolate.
ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b[1A\x1b[2K\r\x1b[8m\u009b2J\u202eabc\u2066"
EVERYTHING = HTML + MARKDOWN + ESCAPES
#: A title is one line (no control character): markup and a bidi override.
TITLE = f"Hostile {HTML} [x](javascript:alert(4)) **exact** \u202egnp.exe"
#: The visible forms :func:`repro._escape.visible` gives the escape sequences above.
SHOWN = ("\\x1b[2J", "\\x1b]0;pwned\\x07", "\\x1b[1A\\x1b[2K", "\\x0d", "\\x1b[8m", "\\x9b2J")

#: What a terminal would act on, once rich's own styling (Select Graphic Rendition sequences,
#: which it writes on a terminal) is taken out: C0 but the newline, DEL, C1, bidi controls.
_SGR = re.compile(r"\x1b\[[0-9;]*m")
_RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

#: A renderer that passes HTML, with GitHub's tables and strikethrough.
_RENDERER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


#: The names of two harness files (a copy of tests/harness/bad_harness.py, and one that differs
#: by a comment): a bundle's ledger, its report's evidence, ``protocol check`` and ``compare``
#: name them.
HARNESSES = ("harness\x1b]0;pwned\x07.py", "harness\u202e\x1b[2J\u009b.py")


def hostile_harness(directory: Path, which: int) -> Path:
    """The harness file ``HARNESSES[which]`` in ``directory`` (made if it is not there)."""
    path = directory / HARNESSES[which]
    if not path.exists():
        code = (ROOT / "tests/harness/bad_harness.py").read_text("utf-8")
        path.write_text(code + "# the other harness\n" * which, "utf-8")
    return path


def hostile_protocol(harness: Path) -> dict[str, Any]:
    """A command-adapter protocol run by ``harness`` whose every free string holds
    :data:`EVERYTHING` (the title, which is one line, holds markup and a bidi override)."""
    return {
        "schema": "repro.protocol/1",
        "id": "hostile",
        "title": TITLE,
        "description": EVERYTHING,
        "adapter": {
            "name": "command",
            # Relative to the protocol's folder (the harness's), as a protocol names it: an
            # absolute path under /tmp would disclose.
            "options": {"harness": harness.name},
        },
        "matrix": [{"name": "case", "levels": ["plain", f"level{EVERYTHING}"]}],
        "participants": [
            {"id": "ok", "kind": "agent", "params": {"mode": "ok", "note": EVERYTHING}}
        ],
        "runs_per_condition": 3,
        "seeding": {"mode": "per-run", "seed": 5},
        "measure": {
            "name": "outcome_value",
            "key": "score",
            "description": f"score{EVERYTHING}",
        },
        "estimand": "mean-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {"max_attempts": 1, "timeout_seconds": 60},
        "exclusions": [{"slot": "c00-r0002", "reason": f"reason{EVERYTHING}"}],
        "published": {
            "citation": {
                "title": f"cite{EVERYTHING}",
                "url": "javascript:alert(5)",
                "locator": f"loc{ESCAPES}",
            },
            "decimals": 1,
            "conditions": [{"factors": {"case": "plain"}, "mean": 3.0, "halfwidth": 2.0}],
        },
        "disagreements": [
            {
                "topic": f"topic{EVERYTHING}",
                "published": f"pub{EVERYTHING}",
                "source": f"src{EVERYTHING}",
                "resolution": f"res{EVERYTHING}",
            }
        ],
    }


def hostile_study(base: Path, which: int = 0) -> Path:
    """A real bundle of :func:`hostile_protocol` run by the harness ``HARNESSES[which]``, in
    ``base``."""
    path = base / "protocol.json"
    path.write_text(json.dumps(hostile_protocol(hostile_harness(base, which))), "utf-8")
    return run_study(path, base / "bundle")


@pytest.fixture(scope="module")
def hostile_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of :func:`hostile_protocol`, made once; copy it before changing it."""
    return hostile_study(tmp_path_factory.mktemp("hostile"))


def raw_controls(output: str) -> list[str]:
    """Every character of ``output`` a terminal would act on, rich's styling aside."""
    return _RAW.findall(_SGR.sub("", output))


def repro(args: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """``python -m repro ARGS`` on pipes; its exit status and all it wrote (stdout, then
    stderr), decoded strictly as UTF-8: a byte of C1 alone would not decode."""
    environ = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        env={**environ, **(env or {})},
        timeout=300,
    )
    return done.returncode, (done.stdout + done.stderr).decode("utf-8")


#: The command line as a pipe reads it, and as rich writes to a terminal (``FORCE_COLOR``), one
#: wide enough that no line is wrapped.
CONSOLES = [
    pytest.param({}, id="piped"),
    pytest.param({"FORCE_COLOR": "1", "COLUMNS": "4000"}, id="terminal"),
]


# --------------------------------------------------------------------------- Markdown


def _inlines(text: str) -> list[Token]:
    return [t for t in _RENDERER.parse(text) if t.type == "inline"]


def _blocks(text: str) -> list[str]:
    return [t.type for t in _RENDERER.parse(text) if t.type != "inline"]


#: Each place a value takes in a line of Markdown: a heading, a list item, a table cell, a
#: paragraph's middle, a line of its own after a paragraph's first.
_PLACES = "# H {}\n\n- {}\n\n| a |\n|---|\n| {} |\n\nP {} e\n\nQ\n{}\n"

#: Markup's and terminals' own characters, often, among any others but white space other than
#: the space (which CommonMark and markdown-it strip differently at a line's ends).
_PIECES = st.sampled_from(
    [
        *"\\`*_~[]!<>&|#$-+=.():\n\r\t\x1b\x9b\u202e\u2066 ",
        "<script>",
        "](javascript:x)",
        "![",
        "``",
        "- ",
        "1. ",
        "---",
        "    ",
        "&#x3c;",
        "<!--",
        "a_b",
        "_a_",
    ]
)
_TEXT = st.lists(
    _PIECES | st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp")), min_size=1, max_size=24
).map("".join)


class TestMarkdown:
    """markdown_text and markdown_code: a value renders as exactly itself (its control
    characters as their escapes), wherever a line puts it, and opens nothing."""

    @pytest.mark.slow
    @settings(max_examples=300, deadline=None)
    @given(text=_TEXT)
    @example(text=EVERYTHING)
    @example(text="    indented")
    @example(text="1. x")
    @example(text="a_b_c _d_ *e*")
    @example(text="===")
    def test_text_renders_as_itself(self, text: str) -> None:
        """In a heading, a list item, a table cell, a paragraph and a paragraph's line of its
        own, the value gives the blocks a plain word gives, and text alone (no emphasis, link,
        image, code, HTML or break but the paragraph's own), which reads back as the value
        (ends trimmed where a line's are)."""
        escaped = markdown_text(text)
        assert "\n" not in escaped
        doc = _PLACES.format(*[escaped] * 5)
        assert _blocks(doc) == _blocks(_PLACES.format(*["x"] * 5))
        inlines = _inlines(doc)
        children = [c.type for t in inlines for c in t.children or []]
        assert set(children) <= {"text", "softbreak"} and children.count("softbreak") == 1
        shown = visible(text, newlines=False)
        # A line's trailing spaces are dropped; a leading one is written as a character
        # reference, which stays.
        trimmed = shown[:1] + shown[1:].rstrip(" ") if shown.startswith(" ") else shown.rstrip(" ")
        read = ["".join(c.content or "\n" for c in t.children or []) for t in inlines]
        assert read == [f"H {trimmed}", trimmed, "a", trimmed, f"P {shown} e", f"Q\n{trimmed}"]

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(text=_TEXT)
    @example(text="`")
    @example(text="a ``b`` c")
    @example(text=" ` ")
    @example(text="")
    def test_a_code_span_holds_its_value(self, text: str) -> None:
        """In a paragraph, the code span is one code span whose content is the value (its
        control characters as their escapes), whatever backticks and spaces it holds."""
        inline = _inlines(f"P {markdown_code(text)} e\n")
        assert len(inline) == 1
        children = [c for c in inline[0].children or [] if c.type == "code_inline"]
        assert [c.content for c in children] == [visible(text, newlines=False) or " "]

    def test_plain_text_is_left_alone(self) -> None:
        """What needs no escape gets none: words, numbers, versions, snake_case names and
        paths read in the Markdown as they are."""
        plain = "c00: env_id=CartPole-v1, 1.4.0 gymnasium/envs/classic_control/cartpole.py 3-4"
        assert markdown_text(plain) == plain


# --------------------------------------------------------------------------- the report


def _report_links_and_html(report: str) -> list[tuple[str, str]]:
    """Every token of ``report`` that is raw HTML, a link or an image, but for the version
    marker (its first line)."""
    found = []
    tokens = _RENDERER.parse(report)
    for t in tokens[1:]:
        if t.type == "html_block":
            found.append((t.type, t.content))
        for c in t.children or []:
            if c.type in ("html_inline", "link_open", "image"):
                found.append((c.type, c.content))
    return found


class TestReport:
    """validation-report.md of the hostile study: every bundle string is text."""

    @pytest.mark.slow
    def test_no_markup_from_the_bundle_is_active(self, hostile_bundle: Path) -> None:
        """Read by a renderer that passes HTML: no raw HTML (but the version marker), no link or
        image, no emphasis but the report's own; the headings are the report's own, one class
        line; the planted strings read back as text, newlines and escapes as their escapes."""
        report = (hostile_bundle / "data/validation-report.md").read_text("utf-8")
        assert report.startswith("<!-- repro.report/2 -->\n")
        assert _report_links_and_html(report) == []
        tokens = _RENDERER.parse(report)
        headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
        assert headings[1:] == ["Claim", "Conditions", "Tiers", "Not claimed", "Re-check"]
        lines = ["".join(c.content for c in t.children or []) for t in tokens]
        assert [line for line in lines if line.startswith("Reproduction class:")] == [
            "Reproduction class: exact (all 1 published figures equal at 1 decimals)."
        ]
        text = "".join(lines)
        assert HTML in text and "\\x0a# Reproduction class: **exact**\\x0a" in text
        assert all(shown in text for shown in SHOWN)
        strong = [
            tokens[i].children[j + 1].content  # type: ignore[index]
            for i, t in enumerate(tokens)
            for j, c in enumerate(t.children or [])
            if c.type == "strong_open"
        ]
        assert set(strong) <= {"exact", "pass", "weakened", "fail"} | {
            "authored-source",
            "contract",
            "execution-control",
            "state-observation",
            "outcome-evaluation",
            "disclosure",
        }

    def test_the_version_marker(self) -> None:
        """A report's version is its first line's marker: none is version 1 (every report
        written before the marker), a marker verify does not know is None, and only a report's
        first 64 bytes are read for it."""
        assert version_of(b"<!-- repro.report/2 -->\n# Validation report: t\n") == 2
        assert version_of(b"# Validation report: <!-- repro.report/2 -->\n") == 1
        assert version_of(b"<!-- repro.report/3 -->\n# Validation report: t\n") is None
        assert version_of(b"<!-- repro.report/2 -->") == 1
        assert version_of(b"<!-- repro.report/" + b"2" * 64 + b" -->\n") == 1

    @pytest.mark.slow
    def test_the_hostile_bundle_verifies(self, hostile_bundle: Path) -> None:
        """A study never writes a bundle its own verify rejects: the escaped report is what
        verify re-derives."""
        status, out = repro(["verify", str(hostile_bundle)])
        assert status == 0, out


class TestPublish:
    """repro publish's table: every string it takes from the bundle is text."""

    @pytest.mark.slow
    def test_no_markup_from_the_bundle_is_active(self, scored_bundle: Path) -> None:
        """The scored example's table with a hostile title, factor level and gate detail: the
        blocks of the plain table, text alone in them (no raw HTML, link, image or emphasis),
        the planted markup read back as text in the title, every cell and every gate."""
        shown = load(scored_bundle)
        assert shown.scores is not None
        fp, scores = shown.protocol, shown.scores

        def hostile(text: str) -> str:
            return text + EVERYTHING

        changed = table(
            attrs.evolve(fp, protocol=attrs.evolve(fp.protocol, title=TITLE)),
            attrs.evolve(
                scores,
                cells=tuple(
                    attrs.evolve(
                        c, factors={**c.factors, "model": hostile(str(c.factors["model"]))}
                    )
                    for c in scores.cells
                ),
                gates=tuple(attrs.evolve(g, detail=hostile(g.detail)) for g in scores.gates),
            ),
        )
        plain = table(attrs.evolve(fp, protocol=attrs.evolve(fp.protocol, title="t")), scores)
        assert _blocks(changed) == _blocks(plain)
        assert _report_links_and_html("\n" + changed) == []
        cells = [t for t in _RENDERER.parse(changed) if t.type == "inline"]
        children = [c for t in cells for c in t.children or []]
        assert {c.type for c in children} == {"text", "code_inline"}
        assert [c.content for c in children if c.type == "code_inline"] == [
            fp.protocol.id,
            fp.sha256,
        ]
        assert (
            sum(HTML in "".join(c.content for c in t.children or []) for t in cells)
            == len(scores.cells) + len(scores.gates) + 1
        )


# --------------------------------------------------------------------------- the terminal

#: Names a hostile bundle's files take, each with one hostile sequence.
HOSTILE_NAMES = [
    "\x1b[2J",
    "\x1b]0;pwned\x07",
    "\x1b[1A\x1b[2K",
    "a\rb",
    "\x1b[8mhidden",
    "\u009b2J",
    "\u202eevil",
    "\u2066isolate\u2069",
    "line\nOK: verifies",
    "del\x7f",
]


@pytest.fixture(scope="module")
def hostile_tree(hostile_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hostile bundle with a file named by each of :data:`HOSTILE_NAMES` added to data/:
    it does not verify, and every finding names one."""
    root = tmp_path_factory.mktemp("tree") / "bundle"
    shutil.copytree(hostile_bundle, root)
    for name in HOSTILE_NAMES:
        (root / "data" / name).write_bytes(b"")
    return root


class TestTerminal:
    """What each command prints of a hostile bundle holds no raw control character: each is
    shown as its escape, piped and on a terminal alike."""

    @pytest.mark.slow
    @pytest.mark.parametrize("env", CONSOLES)
    @pytest.mark.parametrize("command", ["verify", "show", "compare", "publish"])
    def test_file_names_in_findings(
        self,
        hostile_tree: Path,
        hostile_bundle: Path,
        command: str,
        env: dict[str, str],
        tmp_path: Path,
    ) -> None:
        """verify's findings, and show's, compare's and publish's refusals, name each hostile
        file, one line a finding, its control characters as text."""
        args = {
            "verify": ["verify", str(hostile_tree)],
            "show": ["show", str(hostile_tree)],
            "compare": ["compare", str(hostile_bundle), str(hostile_tree)],
            "publish": ["publish", str(hostile_tree), "--out", str(tmp_path / "table.md")],
        }[command]
        status, out = repro(args, env)
        assert status == 1, out
        assert raw_controls(out) == []
        assert all(shown in out for shown in SHOWN)
        assert "data/line\\x0aOK: verifies" in out
        assert not [line for line in out.splitlines() if line.startswith("OK")]

    @pytest.mark.slow
    def test_json_keeps_the_names(self, hostile_tree: Path) -> None:
        """verify --json escapes every control character, C1 and bidi too, as \\uXXXX: the
        output is ASCII, and parses back to the files' very names."""
        status, out = repro(["verify", str(hostile_tree), "--json"])
        assert status == 1
        assert out.isascii() and raw_controls(out) == []
        files = {f["file"] for f in json.loads(out)["findings"]}
        assert {f"data/{name}" for name in HOSTILE_NAMES} <= files

    @pytest.mark.slow
    @pytest.mark.parametrize("env", CONSOLES)
    def test_show_of_a_hostile_bundle(self, hostile_bundle: Path, env: dict[str, str]) -> None:
        """show's identity line and tables: the title's bidi override and a level's escapes as
        text, and no rich markup taken from the bundle (its brackets printed as they are)."""
        status, out = repro(["show", str(hostile_bundle)], env)
        assert status == 0, out
        assert raw_controls(out) == []
        assert "\\u202egnp.exe" in out
        assert "[x](javascript:alert(4))" in out and "![i](x)" in out
        assert all(shown in out for shown in SHOWN)

    @pytest.mark.slow
    def test_rich_markup_in_a_level_is_text(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        """A level that is rich markup (a style, a terminal hyperlink, an emoji code) is
        printed as written, no hyperlink escape written on a terminal."""
        base = tmp_path_factory.mktemp("markup")
        protocol = hostile_protocol(hostile_harness(base, 0))
        markup = "[bold red]loud[/bold red] [link=https://example.invalid]here[/link] :smile:"
        protocol["matrix"] = [{"name": "case", "levels": [markup]}]
        del protocol["published"], protocol["exclusions"]
        (base / "p.json").write_text(json.dumps(protocol), "utf-8")
        bundle = run_study(base / "p.json", base / "bundle")
        status, out = repro(["show", str(bundle)], {"FORCE_COLOR": "1", "COLUMNS": "4000"})
        assert status == 0, out
        assert markup in _SGR.sub("", out)
        assert "\x1b]8;" not in out

    @pytest.mark.slow
    @pytest.mark.parametrize("env", CONSOLES)
    def test_compare_names_the_sources_that_differ(
        self, hostile_bundle: Path, tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]
    ) -> None:
        """compare of two verified bundles whose harnesses differ names both harness files,
        their control characters as text."""
        other = hostile_study(tmp_path_factory.mktemp("other"), 1)
        status, out = repro(["compare", str(hostile_bundle), str(other)], env)
        assert status == 0, out
        assert raw_controls(out) == []
        assert "harness\\x1b]0;pwned\\x07.py" in out
        assert "harness\\u202e\\x1b[2J\\x9b.py" in out

    @pytest.mark.slow
    def test_protocol_check_names_the_harness(self, tmp_path: Path) -> None:
        """protocol check prints the pinned harness by its name, its control characters as
        text."""
        path = tmp_path / "protocol.json"
        path.write_text(json.dumps(hostile_protocol(hostile_harness(tmp_path, 1))), "utf-8")
        status, out = repro(["protocol", "check", str(path)])
        assert status == 0, out
        assert raw_controls(out) == []
        assert "harness\\u202e\\x1b[2J\\x9b.py" in out


# --------------------------------------------------------------------------- JSON


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    value=st.recursive(
        st.none() | st.text() | st.integers(), lambda v: st.lists(v) | st.dictionaries(st.text(), v)
    )
)
def test_json_text_is_inert_and_the_same_value(value: Any) -> None:
    """json_text gives JSON of the same value in which no character a terminal acts on is
    raw: every one outside printable ASCII is a \\uXXXX escape."""
    text = json_text(value)
    assert text.isascii() and raw_controls(text) == []
    assert json.loads(text) == value


# --------------------------------------------------------------------------- HTML


def _active(elements: list[Element]) -> list[tuple[str, dict[str, str]]]:
    """Every element that could run or fetch anything: a script, an image, a frame, an object,
    a link; any attribute that is an event handler or holds a ``javascript:`` URL."""
    tags = {
        "script",
        "img",
        "iframe",
        "object",
        "embed",
        "a",
        "link",
        "image",
        "use",
        "foreignobject",
    }
    return [
        (e.tag, e.attrs)
        for e in elements
        if e.tag in tags
        or any(k.startswith("on") for k in e.attrs)
        or any(
            "javascript:" in v.lower()
            for k, v in e.attrs.items()
            if k in ("href", "src", "xlink:href", "action")
        )
    ]


#: Labels that, were they markup, would add an element or an attribute, close the SVG, make a
#: link or reorder what a reader sees.
HOSTILE_LABELS = (
    "<script>alert(1)</script>",
    '" onmouseover="alert(2)" x="',
    "' onfocus='alert(3)' x='",
    "&amp; &lt;b&gt; & &#60;i>",
    "</svg><script>alert(4)</script><svg>",
    '"><a href="javascript:alert(5)">l</a>',
    "javascript:alert(6)",
    "\x1b[2J\r\x00\u009b2J\u202eabc\u2066",
)


def _structure(elements: list[Element]) -> list[tuple[str, tuple[str, ...]]]:
    """Each element's tag and attribute names, in document order."""
    return [(e.tag, tuple(sorted(e.attrs))) for e in elements]


def _hostile(shown: Shown, text: str) -> Shown:
    """``shown`` with ``text`` in every label the page shows: appended to names (so that they
    stay distinct), as the whole of reasons, notes and details; the title without its control
    characters, which a title cannot hold."""
    fp = shown.protocol
    title = "".join(ch for ch in text if ch.isprintable())
    conditions = tuple(
        attrs.evolve(
            c,
            factors={k: f"{v}{text}" for k, v in c.factors.items()},
            participant=c.participant + text,
        )
        for c in shown.aggregates.conditions
    )
    ledger = shown.ledger
    changed = attrs.evolve(
        shown,
        protocol=attrs.evolve(fp, protocol=attrs.evolve(fp.protocol, title=title)),
        aggregates=attrs.evolve(shown.aggregates, measure=text, conditions=conditions),
        tiers=attrs.evolve(
            shown.tiers,
            tiers=tuple(
                attrs.evolve(t, reason=text, evidence=(text, *t.evidence))
                for t in shown.tiers.tiers
            ),
        ),
        ledger=attrs.evolve(
            ledger,
            adapter=attrs.evolve(ledger.adapter, name=text, version=text),
            contracts={
                c: {f"{k}{text}": f"{v}{text}" for k, v in facts.items()}
                for c, facts in ledger.contracts.items()
            },
            losses=tuple(attrs.evolve(loss, cause=text) for loss in ledger.losses),
        ),
    )
    if shown.contrasts is not None:
        contrasts = tuple(
            attrs.evolve(c, id=c.id + text, reason=text) for c in shown.contrasts.contrasts
        )
        changed = attrs.evolve(
            changed, contrasts=attrs.evolve(shown.contrasts, contrasts=contrasts)
        )
    if shown.scores is not None:
        cells = tuple(
            attrs.evolve(
                cell,
                participant=cell.participant + text,
                checks=tuple(attrs.evolve(c, name=c.name + text) for c in cell.checks),
                categories={k + text: n for k, n in cell.categories.items()},
                note=text,
            )
            for cell in shown.scores.cells
        )
        gates = tuple(attrs.evolve(g, detail=text) for g in shown.scores.gates)
        changed = attrs.evolve(changed, scores=attrs.evolve(shown.scores, cells=cells, gates=gates))
    return changed


class TestHtml:
    """repro show --html of the hostile bundle: every bundle string is text, in elements, in
    attributes and in the SVG."""

    def test_no_markup_from_the_bundle_is_active(self, hostile_bundle: Path) -> None:
        """No script, image, link, handler or javascript: URL anywhere in the page; the planted
        markup reads back as text, in the title, the conditions, the plot's labels and the
        citation; no control character is in the page raw, each shown as its escape."""
        page = load(hostile_bundle).html()
        elements = parse(page)
        assert _active(elements) == []
        assert raw_controls(page.replace("\n", "")) == []
        texts = [e.text for e in elements]
        assert any(HTML in t for t in texts if t)
        svg_texts = [e.text for e in elements if e.tag in ("text", "tspan", "title")]
        assert any("level<script>" in t for t in svg_texts)
        assert any("javascript:alert(5)" in t for t in texts)
        assert all(any(shown in t for t in texts) for shown in SHOWN)

    @pytest.mark.slow
    @pytest.mark.parametrize("text", HOSTILE_LABELS)
    @pytest.mark.parametrize("which", ["contrasted_bundle", "scored_bundle"])
    def test_hostile_labels_inject_nothing(
        self, text: str, which: str, request: pytest.FixtureRequest
    ) -> None:
        """Labels holding markup, quotes, ampersands, ``</svg>``, ``javascript:`` and control
        characters (in the title, the measure, condition and participant names, contrast ids and
        reasons, tier reasons and evidence, contract facts, losses' causes, the adapter, the
        scores' checks, categories, strata, notes and gates) give a page with exactly the
        elements and attribute names of one with plain labels: nothing injected, nothing
        active, no control character raw; each label reads back as its text."""
        shown = load(request.getfixturevalue(which))
        page = _hostile(shown, text).html()
        elements = parse(page)
        plain = _hostile(shown, "x" * len(text)).html()
        assert _structure(elements) == _structure(parse(plain))
        assert _active(elements) == []
        assert raw_controls(page.replace("\n", "")) == []
        texts = [e.text for e in elements]
        values = [v for e in elements for v in e.attrs.values()]
        assert any(visible(text) in t for t in texts)
        assert any(visible(text) in v for v in values)
        svg_texts = [e.text for e in elements if e.tag in ("text", "tspan", "title")]
        assert any(visible(text) in t for t in svg_texts)

    @pytest.mark.slow
    def test_chromium_sees_no_injected_markup(
        self, contrasted_bundle: Path, chromium: Path, tmp_path: Path
    ) -> None:
        """The DOM headless Chromium builds of the page with every hostile label at once has
        the same elements and attribute names as that of the page with plain labels, and
        nothing that could run or fetch."""
        shown = load(contrasted_bundle)
        doms = []
        text = "".join(HOSTILE_LABELS)
        for name, label in (("hostile", text), ("plain", "x" * len(text))):
            page = tmp_path / f"{name}.html"
            page.write_text(_hostile(shown, label).html(), "utf-8")
            dom = run_chromium(chromium, tmp_path, "--dump-dom", page.as_uri(), timeout=120)
            doms.append(parse(dom))
        hostile, plain = doms
        assert _structure(hostile) == _structure(plain)
        assert _active(hostile) == []
        assert any("</svg><script>" in e.text for e in hostile if e.tag == "tspan")
