"""User documentation holds no run history (issue 47): docs/performance.md and every other
hand-written file under docs/ carry no commit-hash-like token and no talk of the machine a
figure came from; every benchmarks/ script docs/performance.md names exists, and it names every
one; the history it leaves out is in benchmarks/results/, one well-formed JSON Lines file per
benchmark script.

Generated files are left out: docs/cli.md and docs/protocol-reference.md (their first line says
they are generated; test_docs.py holds them to their generators) and the example bundle under
docs/examples/quick-start-bundle (written by ``repro study``: its digests are its content).
README.md is not checked here yet."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT

DOCS = ROOT / "docs"
PERFORMANCE = DOCS / "performance.md"
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"

#: A token shaped like a git commit hash, short or full: 7 to 40 lowercase hex digits standing
#: alone. A sha256 (64 digits) cannot match: the word boundaries would have to fall inside it.
HEX_TOKEN = re.compile(r"\b[0-9a-f]{7,40}\b")
#: How user docs must not speak of where a figure was measured.
MACHINE_TALK = re.compile(r"\bthis (?:[\w-]+ )?machine\b|\bthe host\b|\bslow state\b", re.I)
#: Hex-shaped words that are no commit: the signature algorithm's name.
NOT_COMMITS = frozenset({"ed25519"})
#: Commits of other projects that a doc must name to say what it reproduces: the leaderboard's
#: cage-challenge-2 and CybORG commits, and the two upstream CybORG fixes csle-cyborg carries.
OTHER_PROJECTS = {"reproducing-cage2.md": frozenset({"26ce1c1", "606813b", "3ead7fd", "9421c8e"})}
#: Where a script's name is given in docs/performance.md.
SCRIPT = re.compile(r"benchmarks/([A-Za-z0-9_]+\.py)")
#: The keys every history entry in benchmarks/results/ carries.
ENTRY_KEYS = frozenset({"benchmark", "figure", "value", "unit", "machine_class", "notes"})


def commit_like(text: str) -> list[str]:
    """Every token of ``text`` that could be a commit hash: 7-40 hex digits with at least one
    digit and one letter (so that neither a number such as a seed nor a word made of a-f is
    taken for one)."""
    return [
        token
        for token in HEX_TOKEN.findall(text)
        if re.search(r"[0-9]", token) and re.search(r"[a-f]", token) and token not in NOT_COMMITS
    ]


def run_history(path: Path) -> list[str]:
    """What in the file at ``path`` belongs in a run log, not a user page: commit-like tokens
    (but the other projects' commits it is allowed) and phrases that speak of the machine."""
    text = path.read_text("utf-8")
    allowed = OTHER_PROJECTS.get(path.name, frozenset())
    hashes = [f"commit-like {t!r}" for t in commit_like(text) if t not in allowed]
    return hashes + [f"machine talk {m.group(0)!r}" for m in MACHINE_TALK.finditer(text)]


def _generated(path: Path) -> bool:
    """A file a tool writes: a page whose first line says it is generated, or a bundle's file."""
    if "quick-start-bundle" in path.relative_to(DOCS).parts:
        return True
    return path.suffix == ".md" and path.read_text("utf-8").startswith("> Generated")


def user_docs() -> list[Path]:
    """Every hand-written text file under docs/."""
    files = (p for p in sorted(DOCS.rglob("*")) if p.suffix in {".md", ".json", ".py"})
    return [p for p in files if not _generated(p)]


class TestRunHistoryCheck:
    """The check finds what it looks for, and only that."""

    def test_finds_commits_and_machine_talk(self) -> None:
        """A short and a full commit hash, and each phrase of machine talk, are found."""
        text = (
            "at 1b7482e; full 5401a18b2c3d4e5f60718293a4b5c6d7e8f90123; on this machine, "
            "on this 2-core machine, the host's noise, in its Slow State"
        )
        assert commit_like(text) == ["1b7482e", "5401a18b2c3d4e5f60718293a4b5c6d7e8f90123"]
        assert len(MACHINE_TALK.findall(text)) == 4

    def test_leaves_digests_numbers_and_words(self) -> None:
        """A sha256, a decimal seed, ed25519, a word of hex letters and a host name are not
        run history."""
        sha256 = "0f" * 32
        text = f"sha256 {sha256}, seed 20261130, ed25519, defaced, hostname, a host name"
        assert commit_like(text) == []
        assert MACHINE_TALK.findall(text) == []

    def test_other_projects_commits_still_named(self) -> None:
        """Every other project's commit allowed in a doc is still there (the allowance is
        needed), and the same token in any other doc would be found."""
        for name, tokens in OTHER_PROJECTS.items():
            assert tokens <= set(commit_like((DOCS / name).read_text("utf-8"))), name


@pytest.mark.parametrize("path", user_docs(), ids=lambda p: str(p.relative_to(DOCS)))
def test_user_doc_holds_no_run_history(path: Path) -> None:
    """A hand-written file under docs/ names no commit of repro and does not speak of the
    machine it was measured or written on."""
    assert run_history(path) == []


class TestPerformancePage:
    """docs/performance.md: targets, method and latest figures of every benchmark script."""

    def test_is_a_user_doc_and_clean(self) -> None:
        """The page is among the user docs checked, and holds no run history."""
        assert PERFORMANCE in user_docs()
        assert run_history(PERFORMANCE) == []

    def test_names_existing_scripts(self) -> None:
        """Every benchmarks/NAME.py the page names exists."""
        named = set(SCRIPT.findall(PERFORMANCE.read_text("utf-8")))
        assert named, "the page names no script"
        assert sorted(n for n in named if not (BENCHMARKS / n).is_file()) == []

    def test_links_within_the_page_resolve(self) -> None:
        """Every ``](#anchor)`` link on the page names one of its headings, slugged as GitHub
        does (lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``)."""
        text = PERFORMANCE.read_text("utf-8")
        headings = re.findall(r"^#+ (.+)$", text, re.M)
        slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
        links = set(re.findall(r"\]\(#([^)]+)\)", text))
        assert links
        assert sorted(links - slugs) == []

    def test_names_every_script(self) -> None:
        """Every benchmark script (not the helper modules, _*.py) is on the page."""
        named = set(SCRIPT.findall(PERFORMANCE.read_text("utf-8")))
        scripts = {p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")}
        assert sorted(scripts - named) == []


class TestResults:
    """benchmarks/results/: the history, one JSON Lines file per benchmark script."""

    def test_entries_well_formed(self) -> None:
        """Each line is a JSON object with the entry's keys, a number as its value, and the
        benchmark that names its file, which exists."""
        files = sorted(RESULTS.glob("*.jsonl"))
        assert files
        for path in files:
            lines = path.read_text("utf-8").splitlines()
            assert lines, path.name
            for number, line in enumerate(lines, 1):
                entry = json.loads(line)
                where = f"{path.name}:{number}"
                assert entry.keys() >= ENTRY_KEYS, where
                assert isinstance(entry["value"], int | float), where
                assert entry["benchmark"] == path.stem + ".py", where
                assert (BENCHMARKS / entry["benchmark"]).is_file(), where
