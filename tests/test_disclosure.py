"""The disclosure scanner, the disclosure tier, cause codes and the refusal of leaking protocols."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import ROOT
from repro import canonical
from repro.cli import app
from repro.derive import derive, tally_records
from repro.disclosure import (
    WITHHELD_CAUSE,
    Disclosure,
    is_derivation_input,
    scan,
    short_cause,
)
from repro.judge import MAX_DISCLOSURES_LISTED
from repro.models import FrozenProtocol, Ledger, Partition, RunRecord, Seal
from repro.protocol import freeze, load_protocol
from repro.serde import structure, to_bytes

runner = CliRunner()

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
)
#: Characters of user, host and directory names as hypothesis draws them.
NAME = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=20,
)

#: One example of every credential pattern, none of them a real secret.
CREDENTIALS = {
    "aws-access-key-id": "AKIAIOSFODNN7EXAMPLE",
    "pem-private-key": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "github-token": "ghp_" + "x1Y2z3" * 6,
    "openai-style-key": "sk-proj-" + "Ab3De6Gh9" * 5,
    "slack-token": "xoxb-123456789012-abcdefABCDEF",
    "secret-assignment": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}


def _kinds(data: bytes) -> set[str]:
    return {h.kind for h in scan("f", data)}


def _json_string(text: str) -> bytes:
    """``text`` as a JSON string inside a canonical object, as bundle files hold it."""
    return canonical.dumps({"value": text})


class TestHostPaths:
    """Absolute paths under host roots are found, raw and JSON-encoded; URL paths are not."""

    @settings(max_examples=60)
    @given(
        root=st.sampled_from(UNIX_ROOTS),
        name=NAME,
        lead=st.sampled_from(["", "could not open ", "HOME=", "PATH=/bin:", "cwd ('", "[1,"]),
    )
    def test_posix_root_found_at_its_offset(self, root: str, name: str, lead: str) -> None:
        """A path under any host root, alone or after a space, '=', ':', a bracket or a quote,
        is a host-path hit starting at its first slash."""
        text = f"{lead}/{root}/{name}"
        data = _json_string(text)
        offset = data.index(f"/{root}/".encode())
        assert Disclosure("f", offset, "host-path", "posix-host-root") in scan("f", data)

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
            "/tmp",
            "/home/",
            "https://github.com/cage-challenge/cage-challenge-2",
            "Option A:\nthe first",
            "ratio 3:4",
        ],
    )
    def test_relative_paths_and_bare_roots_are_clean(self, text: str) -> None:
        """Relative paths, bare roots, URLs and a JSON escape after a colon are not hits."""
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
            assert ("credential", pattern) in {(h.kind, h.pattern) for h in scan("f", data)}

    @pytest.mark.parametrize(
        "data",
        [b'{"api_key":"a1b2c3d4"}', b"password = hunter22", b"x-api-key: 0123abcd4567"],
    )
    def test_secret_assignments(self, data: bytes) -> None:
        """A secret-sounding name given a value with digits is a secret-assignment hit."""
        assert {h.pattern for h in scan("f", data)} == {"secret-assignment"}

    @pytest.mark.parametrize(
        "text",
        [
            "secret: redacted",
            "token: none",
            "max_token_count: 128000",
            "tokenizer: bpe-2024",
            "sk-learn-baseline-comparison-variant-one",
            "AKIA",
        ],
    )
    def test_words_and_numbers_are_clean(self, text: str) -> None:
        """Plain words, numbers and lower-case identifiers after a secret-sounding name are not
        secrets."""
        assert scan("f", _json_string(text)) == []

    @settings(max_examples=100)
    @given(st.binary(min_size=32, max_size=32))
    def test_digests_are_clean(self, raw: bytes) -> None:
        """The sha256 digests that fill every bundle never look like a credential."""
        assert scan("f", _json_string(raw.hex())) == []


class TestNeverEchoes:
    """A hit names file, kind, offset and pattern, never the matched text."""

    @pytest.mark.parametrize("pattern", sorted(CREDENTIALS))
    def test_secret_not_in_hit(self, pattern: str) -> None:
        """No part of the secret longer than its prefix appears in the hit or its description."""
        secret = CREDENTIALS[pattern]
        for hit in scan("data/environment.json", secret.encode()):
            shown = repr(hit) + hit.describe()
            assert secret[-8:] not in shown


class TestLineByLine:
    """Scanning a JSON Lines file line by line, as the study writes it, equals scanning it
    whole, as verify reads it."""

    FRAGMENTS = (
        "/home/alice/x",
        r"C:\\Users\\bob",
        "Traceback (most recent call last)",
        'File "/x.py", line 3',
        *CREDENTIALS.values(),
        "https://example.org/usr/x",
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

    def test_small_bundle(self, small_bundle: Path) -> None:
        """Every file of a real bundle scans clean."""
        files = [p for p in small_bundle.rglob("*") if p.is_file()]
        assert files
        assert [h for p in files for h in scan(p.name, p.read_bytes())] == []


class TestShortCause:
    """Run causes reach the bundle only as short codes."""

    @pytest.mark.parametrize(
        "cause",
        [
            "environment-error:RuntimeError",
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
        fp, seal, parts, records, ledger = _bundle_inputs(small_bundle)
        derived = derive(fp, seal, tally_records(fp, parts, records, ledger), ledger, hits)
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
        runs = tally_records(cited, parts, records, ledger)

        def verdict(hits: list[Disclosure]) -> str:
            tiers = derive(cited, seal, runs, ledger, hits).tiers.tiers
            return next(t.verdict for t in tiers if t.name == "disclosure")

        assert verdict([]) == "weakened"
        assert verdict([hit]) == "fail"
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
