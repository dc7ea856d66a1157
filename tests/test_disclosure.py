"""The disclosure scanner, the disclosure tier, cause codes and the refusal of leaking protocols."""

from __future__ import annotations

import itertools
import json
import random
import re._constants as sre_constants
import re._parser as sre_parse
import traceback
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import repro._disclosure.scanner as scanner
from conftest import ROOT
from repro._cli.app import app
from repro._derive.derivation import derive, tally_records
from repro._derive.tiers import MAX_DISCLOSURES_LISTED
from repro._disclosure import (
    MAX_HITS_KEPT,
    WITHHELD_CAUSE,
    Disclosure,
    FileHits,
    Scanner,
    scan,
    scan_hits,
    short_cause,
)
from repro._disclosure.engine import BEHIND
from repro._disclosure.secrets import PATTERNS
from repro._json import canonical
from repro._json.serde import structure, to_bytes
from repro._layout import is_derivation_input
from repro._protocol.freeze import freeze
from repro._protocol.load import load_protocol
from repro.models import FrozenProtocol, Ledger, Partition, RunRecord, Seal

runner = CliRunner()

#: Top-level directories under which paths name something on one machine: the host roots the
#: scanner once listed, and others it must find by the shape of the path.
UNIX_ROOTS = (
    "home",
    "Users",
    "root",
    "tmp",
    "var",
    "private",
    "mnt",
    "media",
    "srv",
    "opt",
    "etc",
    "usr",
    "run",
    "nix",
    "Volumes",
    "scratch",
    "gpfs",
    "lustre",
    "data",
    "workspace",
    "proc",
    "dev/shm",
)
#: Characters of user, host and directory names as hypothesis draws them.
NAME = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=20,
)
#: The zero-width and invisible characters that could hide a path from the patterns.
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad")

#: One example of every credential pattern, none of them a real secret.
CREDENTIALS = {
    "aws-access-key-id": "AKIAIOSFODNN7EXAMPLE",
    "aws-secret-access-key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "pem-private-key": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "github-token": "ghp_" + "x1Y2z3" * 6,
    "openai-style-key": "sk-proj-" + "Ab3De6Gh9" * 5,
    "slack-token": "xoxb-123456789012-abcdefABCDEF",
    "secret-assignment": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "url-password": "postgres://bob:hunter22@db.example.org/x",
}
#: One example of every host-path pattern.
HOST_PATHS = {
    "posix-host-root": "/home/alice/x",
    "tilde-path": "~alice/notes",
    "unc-path": "\\\\server\\share\\x",
    "windows-drive": "C:\\Users\\bob",
    "file-url": "file:///srv/x",
}
#: One example of every traceback pattern.
TRACEBACKS = {
    "python-traceback-header": "Traceback (most recent call last)",
    "python-traceback-frame": 'File "/x.py", line 3',
}


def _kinds(data: bytes) -> set[str]:
    return {h.kind for h in scan("f", data)}


def _patterns(data: bytes) -> set[tuple[str, str]]:
    return {(h.kind, h.pattern) for h in scan("f", data)}


def _json_string(text: str) -> bytes:
    """``text`` as a JSON string inside a canonical object, as bundle files hold it."""
    return canonical.dumps({"value": text})


class TestHostPaths:
    """Absolute paths are found by their shape, raw and JSON-encoded, also spelt with hidden
    characters or percent escapes; relative paths, URL paths and other slashes are not."""

    @settings(max_examples=80)
    @given(
        root=st.sampled_from(UNIX_ROOTS),
        name=NAME,
        lead=st.sampled_from(["", "could not open ", "HOME=", "PATH=/bin:", "cwd ('", "[1,"]),
    )
    def test_posix_path_found_at_its_offset(self, root: str, name: str, lead: str) -> None:
        """A path of two or more components under any root, alone or after a space, '=', ':',
        a bracket or a quote, is a host-path hit starting at its first slash."""
        text = f"{lead}/{root}/{name}"
        data = _json_string(text)
        offset = data.index(f"/{root}/".encode())
        assert Disclosure("f", offset, "host-path", "posix-host-root") in scan("f", data)

    @settings(max_examples=40)
    @given(first=NAME, second=NAME)
    def test_any_two_components(self, first: str, second: str) -> None:
        """Any absolute path of two components is a hit, whatever its names: the scanner keeps
        no list of roots."""
        assert ("host-path", "posix-host-root") in _patterns(_json_string(f"/{first}/{second}"))

    @pytest.mark.parametrize("text", ["~/x", "~/.ssh/id_rsa", "see ~alice/notes", "~bob_2/x"])
    def test_tilde_paths(self, text: str) -> None:
        """A home directory by tilde, one's own or a named user's, is a tilde-path hit at the
        tilde."""
        for data in (text.encode(), _json_string(text)):
            offset = data.index(b"~")
            assert Disclosure("f", offset, "host-path", "tilde-path") in scan("f", data)

    @pytest.mark.parametrize("text", ["\\\\server\\share", "at \\\\fs01.corp\\jobs\\x"])
    def test_unc_paths(self, text: str) -> None:
        """A UNC path is a unc-path hit at its first backslash, raw and JSON-escaped (where
        each backslash is written twice)."""
        for data in (text.encode(), _json_string(text)):
            offset = data.index(b"\\\\")
            assert Disclosure("f", offset, "host-path", "unc-path") in scan("f", data)

    @pytest.mark.parametrize(
        "text",
        [r"C:\Users\alice\run.py", "D:\\data\\x", "c:/Users/alice", r"E:\\share\\file"],
    )
    def test_windows_drive_paths(self, text: str) -> None:
        """Drive paths with backslashes (raw, and doubled as JSON writes them) or forward
        slashes are host-path hits starting at the drive letter."""
        for data in (text.encode(), _json_string(text)):
            offset = data.index(text[:2].encode())
            assert Disclosure("f", offset, "host-path", "windows-drive") in scan("f", data)

    def test_file_url(self) -> None:
        """A file URL is a host-path hit whatever its case."""
        assert _kinds(b"see FILE:///srv/x") == {"host-path"}
        assert _kinds(_json_string("file://server/share/x")) == {"host-path"}

    @pytest.mark.parametrize(
        ("text", "pattern", "at"),
        [
            ("%2Fhome%2Falice", "posix-host-root", "%2F"),
            ("path=%2fscratch%2fbob%2frun", "posix-host-root", "%2f"),
            ("%2F%2Fhome%2Fx", None, ""),
            ("C%3A%5CUsers%5Cbob", "windows-drive", "C%"),
            ("%7Ealice%2Fnotes", "tilde-path", "%7E"),
        ],
    )
    def test_percent_encoded_paths(self, text: str, pattern: str | None, at: str) -> None:
        """A path whose separators are percent-encoded (either case) is found as the decoded
        path would be, at the offset in the file of the byte it begins at; a decoded URL-like
        double slash is not a path."""
        for data in (text.encode(), _json_string(text)):
            hits = [(h.offset, h.pattern) for h in scan("f", data) if h.kind == "host-path"]
            assert hits == ([] if pattern is None else [(data.index(at.encode()), pattern)])

    @pytest.mark.parametrize("hidden", ZERO_WIDTH, ids=[f"U+{ord(c):04X}" for c in ZERO_WIDTH])
    @pytest.mark.parametrize("at", [1, 2, 3, 5, 6, 8])
    def test_zero_width_characters_inside(self, hidden: str, at: int) -> None:
        """A zero-width or invisible character anywhere inside a path (as UTF-8) does not hide
        it: the hit is at the path's first slash in the file."""
        path = "/home/alice"
        text = "x " + path[:at] + hidden + path[at:]
        for data in (text.encode(), _json_string(text)):
            offset = data.index(b"/")
            assert Disclosure("f", offset, "host-path", "posix-host-root") in scan("f", data)

    def test_zero_width_characters_before_and_around(self) -> None:
        """Hidden characters before a path's root and between its separators are skipped; the
        hit is at the root's own byte."""
        data = "\u200b\ufeff/\u00adhome/\u2060alice".encode()
        assert scan("f", data) == [Disclosure("f", 6, "host-path", "posix-host-root")]

    @pytest.mark.slow
    @settings(max_examples=60)
    @given(
        root=st.sampled_from(UNIX_ROOTS),
        host=st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5}){1,2}", fullmatch=True),
        name=NAME,
        scheme=st.sampled_from(["http", "https"]),
    )
    def test_url_paths_are_not_host_paths(
        self, root: str, host: str, name: str, scheme: str
    ) -> None:
        """The path of an http(s) URL is never a host path, whatever root it names."""
        data = _json_string(f"published at {scheme}://{host}/{root}/{name}")
        assert "host-path" not in _kinds(data)

    @pytest.mark.parametrize(
        "text",
        [
            "CybORG/CybORG/Evaluation/evaluation.py",
            "src/usr/lib/x",
            "data/runs/c00.jsonl",
            "a.tmp/x/y",
            "../x/y",
            "~5/10",
            "/tmp",
            "/home/",
            "/ a/b",
            "https://github.com/cage-challenge/cage-challenge-2",
            "https://example.org/home/x",
            "https://example.org/~alice/x",
            "application/json",
            "n/a",
            "2026/12/01",
            "km/h and m/s/s",
            "Option A:\nthe first",
            "ratio 3:4",
            "\\\\n.\n",
            "a\\\\b\\\\c",
        ],
    )
    def test_relative_paths_and_other_slashes_are_clean(self, text: str) -> None:
        """Relative paths, bare roots, URLs, media types, dates, units and JSON escapes after a
        colon or a backslash are not hits."""
        assert scan("f", _json_string(text)) == []


class TestTracebacks:
    """A Python traceback is found, printed or JSON-encoded."""

    def test_real_traceback(self) -> None:
        """The header and every frame line of a real traceback are traceback hits."""
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            text = traceback.format_exc()
        for data in (text.encode(), _json_string(text)):
            patterns = {h.pattern for h in scan("f", data) if h.kind == "traceback"}
            assert patterns == {"python-traceback-header", "python-traceback-frame"}


class TestCredentials:
    """Credential-looking strings are found; identifiers and words that resemble them are not."""

    @pytest.mark.parametrize("pattern", sorted(CREDENTIALS))
    def test_each_pattern(self, pattern: str) -> None:
        """Each example is a credential hit of its own pattern, raw and inside JSON."""
        for data in (CREDENTIALS[pattern].encode(), _json_string(CREDENTIALS[pattern])):
            assert ("credential", pattern) in _patterns(data)

    @pytest.mark.parametrize(
        "data",
        [b'{"api_key":"a1b2c3d4"}', b"password = hunter22", b"x-api-key: 0123abcd4567"],
    )
    def test_secret_assignments(self, data: bytes) -> None:
        """A secret-sounding name given a value with digits is a secret-assignment hit."""
        assert {h.pattern for h in scan("f", data)} == {"secret-assignment"}

    @pytest.mark.parametrize(
        ("text", "word"),
        [
            ("my_token=abc123x", "token"),
            ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "SECRET"),
            ("x-api-key: 0123abcd4567", "api-key"),
            ("tokenizer_secret=abc123", "secret"),
            ("db.Password: hunter22", "Password"),
            ("secret-key=abc123def", "secret"),
            ("token: aaaaaaaaaaaaaaaaaaaa", "token"),
        ],
    )
    def test_secret_assignment_at_the_secret_word(self, text: str, word: str) -> None:
        """The hit begins at the first secret-sounding word that is a word of its own in the
        name (followed by the end of the name, "_" or "-"), raw and inside JSON."""
        for data in (text.encode(), _json_string(text)):
            offset = data.index(word.encode())
            hits = [h for h in scan("f", data) if h.pattern == "secret-assignment"]
            assert hits == [Disclosure("f", offset, "credential", "secret-assignment")]

    @pytest.mark.parametrize(
        "text",
        [
            "secret: redacted",
            "token: none",
            "max_token_count: 128000",
            "tokenizer: bpe-2024",
            "tokenizer=abc123",
            "mytoken=abc123",
            "api_keys=abc123",
            "sk-learn-baseline-comparison-variant-one",
            "AKIA",
            "https://bob@example.org/x",
            "https://bob:***@example.org/x",
            "http://localhost:8080/x",
            "eyJhbGciOiJIUzI1NiJ9",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.short",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYZ",
            "wJalrXUtnFEMIxKzMDENGxbPxRfiCYEXAMPLEKEY",
        ],
    )
    def test_words_and_numbers_are_clean(self, text: str) -> None:
        """Plain words, numbers and lower-case identifiers after a secret-sounding name, URLs
        without a password or with a withheld one, a lone JWT header or one with a short
        signature, and 40-character runs that are part of a longer run or hold no digit are not
        secrets."""
        assert scan("f", _json_string(text)) == []

    @settings(max_examples=100)
    @given(st.binary(min_size=32, max_size=32))
    def test_digests_are_clean(self, raw: bytes) -> None:
        """The sha256 digests that fill every bundle never look like a credential."""
        assert scan("f", _json_string(raw.hex())) == []

    @settings(max_examples=100)
    @given(st.binary(min_size=20, max_size=20), st.sampled_from(["", "commit ", "@"]))
    def test_git_commit_ids_are_clean(self, raw: bytes, lead: str) -> None:
        """A 40-hex git commit ID is not an AWS secret access key (it has no upper-case
        letter), raw or in upper case."""
        for sha in (raw.hex(), raw.hex().upper()):
            assert scan("f", _json_string(lead + sha)) == []


class TestNeverEchoes:
    """A hit names file, kind, offset and pattern, never the matched text."""

    @pytest.mark.parametrize("pattern", sorted(CREDENTIALS))
    def test_secret_not_in_hit(self, pattern: str) -> None:
        """No part of the secret longer than its prefix appears in the hit or its description."""
        secret = CREDENTIALS[pattern]
        for hit in scan("data/environment.json", secret.encode()):
            shown = repr(hit) + hit.describe()
            assert secret[-8:] not in shown


#: Examples of every pattern.
EXAMPLES = (*HOST_PATHS.values(), *TRACEBACKS.values(), *CREDENTIALS.values())


class TestLineByLine:
    """Scanning a JSON Lines file line by line, as the study writes it, equals scanning it
    whole, as verify reads it: no pattern reads across a newline."""

    FRAGMENTS = (
        *EXAMPLES,
        r"C:\\Users\\bob",
        'File "/x.py", line 3',
        "https://example.org/usr/x",
        "%2Fhome%2Fx",
        "/ho\u200bme/x",
        "plain",
    )

    @settings(max_examples=80)
    @given(
        st.lists(
            st.lists(
                st.sampled_from(FRAGMENTS) | st.text(alphabet=" :=\"'/\\abcXYZ019", max_size=6),
                max_size=6,
            ).map("".join),
            max_size=6,
        )
    )
    def test_same_hits(self, lines: list[str]) -> None:
        """The per-line hits, offset by each line's start, are the whole file's hits."""
        encoded = [line.encode() + b"\n" for line in lines]
        whole = scan("f", b"".join(encoded))
        pieces: list[Disclosure] = []
        start = 0
        for data in encoded:
            pieces += scan("f", data, start)
            start += len(data)
        assert sorted(pieces) == whole


def _clean_json_files() -> list[Path]:
    return sorted(
        [
            *(ROOT / "protocols").glob("*.json"),
            *(ROOT / "docs" / "examples").glob("*.json"),
            *(ROOT / "src" / "repro" / "templates").glob("*.json"),
        ]
    )


class TestCleanInputs:
    """Protocols as shipped and bundles as made scan clean: no false positives."""

    @pytest.mark.parametrize(
        "path", sorted((ROOT / "protocols").glob("*.json")), ids=lambda p: p.name
    )
    def test_shipped_protocols(self, path: Path) -> None:
        """Every protocol in protocols/ (the CAGE-2 ones with their citation URLs too) scans
        clean as authored and as frozen into protocol.json."""
        assert scan(path.name, path.read_bytes()) == []
        assert scan("data/protocol.json", to_bytes(freeze(load_protocol(path)))) == []

    @pytest.mark.parametrize("path", _clean_json_files(), ids=lambda p: p.name)
    def test_shipped_json(self, path: Path) -> None:
        """Every JSON file shipped as a protocol, an example or a template scans clean."""
        assert scan(path.name, path.read_bytes()) == []

    def test_small_bundle(self, small_bundle: Path) -> None:
        """Every file of a real bundle scans clean."""
        files = [p for p in small_bundle.rglob("*") if p.is_file()]
        assert files
        assert [h for p in files for h in scan(p.name, p.read_bytes())] == []


#: Near misses: text that resembles a hit and is none.
NEAR_MISSES = (
    "https://example.org/usr/x",
    "data/runs/c00.jsonl",
    "application/json",
    "tokenizer=abc123",
    "secret: redacted",
    "max_token_count: 128000",
    "sk-learn-baseline-comparison-variant-one",
    "0123456789abcdef0123456789abcdef01234567",
    "https://bob:***@example.org",
)
#: Pieces of patterns and of hidden spellings, which joined at random make hits, near misses
#: and hostile runs, and split sequences a block boundary may cut.
PIECES = (
    *("/", "~", "\\", "\\\\", ":", "C:", "%", "%2", "F", "%2F", "%5c", "%3A", "@", "://"),
    *ZERO_WIDTH,
    *("\u200b"[:1], "\xe2", "token_", "Secret_", "token", "=", ": ", " ", "\n", '"', '\\"'),
    *("eyJ", "A", "Ab1", "a", "0", "-----BEGIN ", "PRIVATE KEY-----", "file:", "-", "AKIA", "_"),
)
#: Matches at the bounds of their patterns, just within and just past, and long enough that a
#: block boundary falls inside them.
LONG = (
    "/" + "a" * 255 + "/b",
    "/" + "a" * 256 + "/b",
    "x" * 120 + "_token=abc123",
    "x" * 130 + "_token=abc123",
    "api_key=" + "x1" * 140,
    "eyJ" + "a" * 1020 + ".eyJ" + "b" * 8000 + "." + "c" * 20,
    'File "' + "p" * 1000 + '", line 12',
    'File "' + "p" * 1030 + '", line 12',
    "sk-" + "Ab3" * 90,
    "\u200b" * 50 + "/home/x" + "%2F" * 40 + "y",
)
#: What the random texts are made of.
FRAGMENT = (
    st.sampled_from(EXAMPLES + NEAR_MISSES + PIECES)
    | st.sampled_from(LONG)
    | st.text(alphabet=" :=\"'/\\~%2FaAZ09_-.@\n\u200b", max_size=8)
)


def _expected(data: bytes, keep: int, start: int = 0) -> FileHits:
    """What a scanner must give: scan()'s hits, the first ``keep``, the count and the kinds."""
    hits = scan("f", data, start)
    return FileHits("f", tuple(hits[:keep]), len(hits), frozenset(h.kind for h in hits))


def _fed(data: bytes, cuts: list[int], keep: int = MAX_HITS_KEPT, start: int = 0) -> FileHits:
    """A scanner's result for ``data`` fed in the blocks between the sorted ``cuts``."""
    scanner = Scanner("f", start, keep)
    edges = [0, *sorted(cuts), len(data)]
    for a, b in itertools.pairwise(edges):
        scanner.feed(data[a:b])
    return scanner.finish()


class TestScanner:
    """A scanner fed a file in blocks gives exactly what scan() finds in the whole file (the
    first hits in sorted order, and the count of all), however the file is cut, in memory
    bounded by a block and a constant."""

    @pytest.mark.slow
    @settings(max_examples=150, deadline=None)
    @given(
        fragments=st.lists(FRAGMENT, max_size=40),
        keep=st.sampled_from([0, 1, 3, MAX_HITS_KEPT, 10**6]),
        gather_round=st.sampled_from(
            [(1, 7), (1, 300), (1, 5000), (1, 1 << 20), (1 << 16, 1 << 20)]
        ),
        data=st.data(),
    )
    def test_any_split(
        self, fragments: list[str], keep: int, gather_round: tuple[int, int], data: st.DataObject
    ) -> None:
        """Texts made of examples of every pattern, near misses, hidden characters, pieces of
        patterns and matches at their bounds, cut at random points (empty blocks and single
        bytes too), and scanned in rounds of any size, give scan()'s hits."""
        text = "".join(fragments).encode()
        expected = _expected(text, keep)
        cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts")
        gather, rounds = gather_round
        with (
            mock.patch.object(scanner, "GATHER", gather),
            mock.patch.object(scanner, "ROUND", rounds),
        ):
            assert _fed(text, cuts, keep) == expected

    @pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.name)
    @pytest.mark.parametrize("lead", ["a", " "])
    def test_cut_where_a_search_resumes(self, pattern: Any, lead: str) -> None:
        """An example of each pattern after a letter (which most patterns' lookbehinds refuse)
        or a space, in a long file cut just where that pattern's next search starts (its reach
        before the end of the first block), gives scan()'s hits: the byte before a resumed
        search is still there to look behind at."""
        example = {**HOST_PATHS, **TRACEBACKS, **CREDENTIALS}[pattern.name].encode()
        text = b" " * 10_000 + lead.encode() + example + b" " * 10_000
        start = 10_001 + pattern.regex.search(example).start()
        with mock.patch.object(scanner, "GATHER", 1):
            for shift in range(-3, 4):
                cut = start + pattern.reach + shift
                assert _fed(text, [cut]) == _expected(text, MAX_HITS_KEPT), shift

    def test_byte_by_byte(self) -> None:
        """A file fed one byte at a time, with empty blocks between, gives scan()'s hits."""
        text = "\n".join([*EXAMPLES, *NEAR_MISSES, *LONG]).encode()
        scanner = Scanner("f")
        for i in range(len(text)):
            scanner.feed(text[i : i + 1])
            scanner.feed(b"")
        assert scanner.finish() == _expected(text, MAX_HITS_KEPT)

    @pytest.mark.slow
    def test_large_file_in_blocks(self) -> None:
        """Three MiB of random fragments fed in blocks of random sizes, at the scanner's own
        settings, give scan()'s hits (scanned as one piece)."""
        rng = random.Random(20_260_101)
        choices = [*EXAMPLES, *NEAR_MISSES, *PIECES, *LONG, "plain text ", '{"x":1}\n']
        parts: list[str] = []
        size = 0
        while size < 3 << 20:
            parts.append(rng.choice(choices))
            size += len(parts[-1])
        text = "".join(parts).encode()
        with mock.patch.object(scanner, "ROUND", 1 << 30):
            expected = _expected(text, 500)
        assert expected.count > 500
        cuts: list[int] = []
        while not cuts or cuts[-1] < len(text):
            cuts.append((cuts[-1] if cuts else 0) + rng.randrange(1, 300_000))
        assert _fed(text, [c for c in cuts if c < len(text)], 500) == expected

    def test_start_offsets_every_hit(self) -> None:
        """Hits are offset by ``start``, the file offset of the first byte fed."""
        text = "\n".join(EXAMPLES).encode()
        assert _fed(text, [5, 50], start=1000) == _expected(text, MAX_HITS_KEPT, start=1000)
        assert scan_hits("f", text, 1000) == _expected(text, MAX_HITS_KEPT, start=1000)

    def test_keeps_the_first_and_counts_all(self) -> None:
        """Of a file with more hits than it keeps, the scanner keeps the first ones in sorted
        order and counts all."""
        data = b"C:/a\n" * 1000
        hits = scan_hits("f", data)
        assert hits.count == 1000
        assert hits.first == tuple(
            Disclosure("f", 5 * i, "host-path", "windows-drive") for i in range(MAX_HITS_KEPT)
        )

    @pytest.mark.slow
    def test_memory_bounded_with_many_hits(self) -> None:
        """Two MiB of "C:/a" lines (419,424 hits) fed in 64 KiB blocks are counted in a few MiB
        at most: only the first hits are kept. (A scanner that kept every hit would peak at about
        87 MiB on this input, far above the bound.)"""
        block = b"C:/a\n" * ((1 << 16) // 5)
        scanner = Scanner("f")
        tracemalloc.start()
        try:
            for _ in range((2 << 20) // len(block)):
                scanner.feed(block)
            hits = scanner.finish()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert hits.count == (2 << 20) // len(block) * len(block) // 5 == 419_424
        assert len(hits.first) == MAX_HITS_KEPT
        assert peak < 6 << 20, peak

    @pytest.mark.slow
    @pytest.mark.parametrize("block_mib", [1, 32])
    def test_memory_bounded_without_newlines(self, block_mib: int) -> None:
        """64 MiB without a newline, fed in blocks of 1 or 32 MiB, are scanned in a few MiB
        beyond the block itself: a large block is scanned a part at a time."""
        block = (b"ab/c:d\\e%2" * ((block_mib << 20) // 10 + 1))[: block_mib << 20]
        scanner = Scanner("f")
        tracemalloc.start()
        try:
            for _ in range(64 // block_mib):
                scanner.feed(block)
            scanner.finish()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 8 << 20, peak

    def test_scan_hits_is_a_scanner_fed_once(self) -> None:
        """scan_hits() is a scanner fed the data once."""
        text = "\n".join([*EXAMPLES, *LONG]).encode()
        assert scan_hits("f", text, keep=3) == _fed(text, [], keep=3)


def _reads(pattern: sre_parse.SubPattern) -> tuple[int, int, int]:
    """For a parsed regex: the most bytes a match consumes, the most bytes from its start the
    regex reads (lookaheads included), and the most bytes before its start a lookbehind reads.
    Fails on an unbounded quantifier."""
    width = reach = behind = 0
    for op, av in pattern:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL", "IN", "ANY"):
            w, r, b = 1, 1, 0
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            _, most, item = av
            assert most != sre_constants.MAXREPEAT, "unbounded quantifier"
            iw, ir, b = _reads(item)
            w, r = most * iw, (most - 1) * iw + ir if most else 0
        elif name == "SUBPATTERN":
            w, r, b = _reads(av[-1])
        elif name == "ATOMIC_GROUP":
            w, r, b = _reads(av)
        elif name == "BRANCH":
            each = [_reads(branch) for branch in av[1]]
            w, r, b = (max(x[i] for x in each) for i in range(3))
        elif name in ("ASSERT", "ASSERT_NOT"):
            direction, inner = av
            iw, ir, ib = _reads(inner)
            w, r, b = (0, ir, ib) if direction == 1 else (0, 0, iw)
        elif name == "AT":
            w = r = b = 0
        else:
            raise AssertionError(f"unexpected regex node {name}")
        reach, behind = max(reach, width + r), max(behind, b - width)
        width += w
    return width, reach, behind


class TestPatternBounds:
    """What lets a scanner carry only a short tail: every pattern's matches are bounded and
    each pattern declares how far it reads."""

    @pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.name)
    def test_reach_declared(self, pattern: Any) -> None:
        """Every quantifier is bounded, the declared reach is what the regex reads from a match
        start (lookaheads included), and no lookbehind reads further back than the scanner
        keeps."""
        _, reach, behind = _reads(sre_parse.parse(pattern.regex.pattern, pattern.regex.flags))
        assert pattern.reach == reach
        assert behind <= BEHIND

    def test_names_and_kinds(self) -> None:
        """Each pattern has a name of its own and the examples here cover every one."""
        names = [p.name for p in PATTERNS]
        assert len(set(names)) == len(names)
        covered = {**HOST_PATHS, **TRACEBACKS, **CREDENTIALS}
        assert sorted(covered) == sorted(names)
        for pattern in PATTERNS:
            assert (pattern.kind, pattern.name) in _patterns(covered[pattern.name].encode())


class TestShortCause:
    """Run causes reach the bundle only as short codes."""

    @pytest.mark.parametrize(
        "cause",
        [
            "policy-error:RuntimeError",
            "simulator-error:KeyError; reset failed",
            "session-open-failed:FileNotFoundError",
        ],
    )
    def test_codes_kept(self, cause: str) -> None:
        """A short code made of a name and an exception type name is kept as it is."""
        assert short_cause(cause) == cause

    @pytest.mark.parametrize(
        "cause",
        [
            "cannot open /home/alice/data.bin",
            'File "x.py", line 3',
            "first line\nsecond line",
            "password=hunter22",
            "x" * 121,
            "could not read 'config'",
        ],
    )
    def test_messages_withheld(self, cause: str) -> None:
        """Paths, tracebacks, several lines, credentials, long or quoted messages are withheld."""
        assert short_cause(cause) == WITHHELD_CAUSE


def _bundle_inputs(
    bundle: Path,
) -> tuple[FrozenProtocol, Seal, list[Partition], list[RunRecord], Ledger]:
    def read(name: str, cls: type[Any]) -> Any:
        return structure(
            canonical.loads((bundle / name).read_bytes(), max_bytes=1 << 30), cls, what=name
        )

    fp = read("data/protocol.json", FrozenProtocol)
    seal = read("data/plans/seal.json", Seal)
    parts = [read(f"data/{ref.file}", Partition) for ref in seal.partitions]
    records = [
        structure(json.loads(line), RunRecord, what="run")
        for ref in seal.partitions
        for line in (bundle / f"data/runs/{ref.id}.jsonl").read_text().splitlines()
    ]
    return fp, seal, parts, records, read("data/source-ledger.json", Ledger)


class TestDisclosureTier:
    """The disclosure tier fails on any hit in the input files and lists them, bounded."""

    def test_inputs(self) -> None:
        """The protocol, plans, runs, source ledger and environment are derivation inputs; the
        derived files and the tag files are not."""
        inputs = ["data/protocol.json", "data/plans/seal.json", "data/plans/c00.json"]
        inputs += ["data/runs/c00.jsonl", "data/source-ledger.json", "data/environment.json"]
        others = ["data/tiers.json", "data/aggregates.json", "data/validation-report.md"]
        others += ["bag-info.txt", "bagit.txt", "manifest-sha256.txt", "tagmanifest-sha256.txt"]
        assert all(is_derivation_input(n) for n in inputs)
        assert not any(is_derivation_input(n) for n in others)

    def test_hits_fail_the_tier_and_the_report_says_so(self, small_bundle: Path) -> None:
        """With hits, the tier is 'fail', names each hit up to the bound and counts the rest,
        and the report shows the verdict and the reason."""
        hits = [
            Disclosure("data/environment.json", offset, "host-path", "posix-host-root")
            for offset in range(MAX_DISCLOSURES_LISTED + 5)
        ]
        found = FileHits("data/environment.json", tuple(hits), len(hits), frozenset({"host-path"}))
        fp, seal, parts, records, ledger = _bundle_inputs(small_bundle)
        derived = derive(fp, seal, tally_records(fp, parts, records, ledger), ledger, [found])
        tier = next(t for t in derived.tiers.tiers if t.name == "disclosure")
        assert tier.verdict == "fail"
        assert tier.reason is not None and tier.reason.startswith(f"{len(hits)} hit(s) in 1 input")
        assert "data/environment.json: host-path at byte 0 (posix-host-root)" in tier.evidence
        assert "5 further hit(s)" in tier.evidence
        listed = [e for e in tier.evidence if "at byte" in e]
        assert len(listed) == MAX_DISCLOSURES_LISTED
        assert f"- **disclosure**: fail: {tier.reason}" in derived.report
        assert "- That this bundle is fit to share:" in derived.report

    def test_hits_override_weakened(self, small_bundle: Path) -> None:
        """A citation without commit or locator weakens a clean bundle's tier; a hit fails it.
        Only a failed tier says the bundle is unfit to share."""
        fp, seal, parts, records, ledger = _bundle_inputs(small_bundle)
        published = {"citation": {"title": "t", "url": "https://example.org"}, "decimals": 1}
        raw = {**json.loads(to_bytes(fp.protocol)), "published": published}
        cited = structure(
            {"schema": fp.schema, "sha256": fp.sha256, "protocol": raw},
            FrozenProtocol,
            what="protocol",
        )
        hit = Disclosure("data/runs/c00.jsonl", 9, "credential", "github-token")
        found = FileHits(hit.file, (hit,), 1, frozenset({"credential"}))
        runs = tally_records(cited, parts, records, ledger)

        def verdict(hits: list[FileHits]) -> str:
            tiers = derive(cited, seal, runs, ledger, hits).tiers.tiers
            return next(t.verdict for t in tiers if t.name == "disclosure")

        assert verdict([]) == "weakened"
        assert verdict([found]) == "fail"
        report = derive(cited, seal, runs, ledger, []).report
        assert "fit to share" not in report


class TestLeakingProtocolRefused:
    """A protocol that would put host-specific or secret content into the bundle is refused
    before anything is written."""

    @pytest.mark.parametrize(
        ("edit", "where"),
        [
            (lambda p: p.update(description="notes in /home/alice/notes.txt"), "@ $.description"),
            (
                lambda p: p["measure"].update(description="api_key: a1b2c3d4e5"),
                "@ $.measure.description",
            ),
        ],
        ids=["path-in-description", "credential-in-measure-description"],
    )
    def test_refused_with_exit_2(
        self,
        write_protocol: Callable[..., Path],
        small_protocol: dict[str, Any],
        tmp_path: Path,
        edit: Callable[[dict[str, Any]], None],
        where: str,
    ) -> None:
        """study exits 2 naming the kind and where it is, without echoing the value, and
        creates no output root."""
        edit(small_protocol)
        out = tmp_path / "bundle"
        result = runner.invoke(
            app, ["study", str(write_protocol(small_protocol)), "--out", str(out)]
        )
        assert result.exit_code == 2, result.output
        message = " ".join(result.stderr.split())
        assert "would write" in message and where in message
        assert "alice" not in message and "a1b2c3d4e5" not in message
        assert not out.exists()
