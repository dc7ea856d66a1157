"""The README is a page a person reads top to bottom: short, about the project and not about a
machine or its history, and every link in it leads somewhere. (Its first command is run as
written by tests/test_quick_start.py; docs/python-api.md's example by tests/test_api.py.)"""

from __future__ import annotations

import re

from conftest import ROOT

README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"

#: What a user page must not hold: a commit hash (7 to 40 hex digits with a digit and a letter;
#: a sha256 of 64 is an identifier a reader checks, not history), or talk of the machine a
#: figure was taken on.
_HASH = re.compile(r"(?<![0-9a-f])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![0-9a-f])")
_MACHINE = re.compile(r"this machine|the host\b|slow state|measured at", re.IGNORECASE)


def test_the_readme_is_short() -> None:
    """At most 250 lines."""
    assert len(README.read_text("utf-8").splitlines()) <= 250


def test_the_readme_starts_with_what_repro_is_and_the_two_commands() -> None:
    """Its first paragraph says what repro is; the first code block holds the quick start and
    the suite, in that order, and nothing else."""
    text = README.read_text("utf-8")
    first = text.split("\n\n")[1]
    assert first.startswith("repro turns a frozen experiment protocol")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    assert len(lines) == 2 and "repro study" in lines[0] and "repro verify" in lines[0]
    assert lines[1] == "uvx nox"


def test_no_commit_hash_and_no_machine_talk() -> None:
    """No commit hash, no "this machine", "the host", "slow state" or "measured at"; no path
    into ../shared, which a user never has."""
    for page in (README, CONTRIBUTING):
        text = page.read_text("utf-8")
        assert _HASH.findall(text) == [], page.name
        assert _MACHINE.findall(text) == [], page.name
    assert "../shared" not in README.read_text("utf-8")


def test_every_relative_link_resolves() -> None:
    """Each ``[text](path)`` that is not a URL names a file or directory of the checkout."""
    for page in (README, CONTRIBUTING):
        text = page.read_text("utf-8")
        targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
        missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
        assert missing == [], page.name


def test_the_quick_start_output_shown_is_the_quick_starts() -> None:
    """The output the README shows names the quick-start protocol's primary contrast."""
    text = README.read_text("utf-8")
    assert re.search(r"done in [\d.]+ s: random-beats-push-left = \+[\d.]+ \[", text)
