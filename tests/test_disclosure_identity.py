"""Personal and host identity in the files that record where a study ran: an email address, a
private IP address or a host name in environment.json or bag-info.txt is a disclosure (kind
``identity``), found by the scanner the study and verify share; the contact fields a bag's
maker fills in on purpose are not; the same strings in a study's own data (its protocol, its
runs) are the study's business. A study withholds a value of its environment that would
disclose, and refuses a title that would, so it never writes a bundle its verify rejects."""

from __future__ import annotations

import itertools
import platform
import re._parser as sre_parse
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import repro._disclosure as disclosure
import repro._disclosure.scanner as scanner_module
from conftest import run_study
from forge import reseal
from repro import _layout as layout
from repro._disclosure import CONTACT_LABELS, Scanner, scan, withheld
from repro._disclosure.engine import BEHIND
from repro._disclosure.identity import identity_patterns
from repro.verify import verify
from test_disclosure import _reads
from test_disclosure_linear import _linear, families

ENV = layout.ENVIRONMENT

#: Each identity pattern, with texts it must find in environment.json.
FOUND: dict[str, tuple[str, ...]] = {
    "email-address": ("alice@example.org", "a.b+tag@mail.cs.uni-x.edu", "root@node17.cluster"),
    "private-ip-address": (
        "10.1.2.3",
        "172.16.0.9",
        "172.31.255.255",
        "192.168.0.1",
        "169.254.10.20",
        "100.64.0.1",
    ),
    "private-ipv6-address": ("fd12:3456:789a::1", "fe80::1ff:fe23:4567:890a", "FC00:1::2"),
    "host-name": (
        "node17.cluster.internal",
        "login1.hpc.example.edu",
        "gpu-3.lan.corp",
        "worker.local",
    ),
}

#: What environment.json holds in genuine bundles, or could: versions, platforms, public
#: addresses of nothing. None is identity.
CLEAN = (
    "1.17.1",
    "2.4.6",
    "1.2.3.dev",
    "1.0.0rc1",
    "2024.8.0",
    "0.1.0.post1",
    "Linux 6.18.44-fc-v669",
    "Linux 4.18.0-372.el8.x86_64",
    "Linux 5.15.133.1-microsoft-standard-WSL2",
    "Darwin 23.4.0",
    "x86_64",
    "CPython",
    "8.8.8.8",
    "172.32.0.1",
    "999.1.1.1",
    "10.1.2",
    "1.2.3.4.5",
    "csle-cyborg",
    "2.1.0+cpu",
    "repro.environment/1",
    "ruamel.yaml",
    "zope.interface",
)


def _kinds(file: str, text: str) -> list[tuple[str, str]]:
    return [(d.kind, d.pattern) for d in scan(file, text.encode())]


class TestEnvironmentFiles:
    """What is found where."""

    @pytest.mark.parametrize(
        ("pattern", "text"), [(p, t) for p, texts in FOUND.items() for t in texts]
    )
    def test_found_in_environment_json(self, pattern: str, text: str) -> None:
        """Each identity in a value of environment.json is found once, at its first byte."""
        data = f'{{"platform":"Linux 6.1","note":"{text}"}}'
        hits = scan(ENV, data.encode())
        assert [(h.kind, h.pattern) for h in hits] == [("identity", pattern)]
        assert hits[0].offset == data.index(text)

    @pytest.mark.parametrize("text", CLEAN)
    def test_versions_and_platforms_are_clean(self, text: str) -> None:
        """Versions, platforms and public addresses are no identity."""
        assert _kinds(ENV, f'{{"v":"{text}"}}') == []

    @pytest.mark.parametrize("file", ["data/protocol.json", "data/runs/c00.jsonl"])
    def test_not_in_the_study_s_own_data(self, file: str) -> None:
        """In the study's own files the same strings are its data: no identity is looked for."""
        text = " ".join(t for texts in FOUND.values() for t in texts)
        assert _kinds(file, text) == []

    def test_bag_info(self) -> None:
        """In bag-info.txt every line but the contact fields is looked at: an address there is
        found; on a contact line (any case) it is what the bag's maker says on purpose."""
        lines = [f"{label}: alice@example.org 10.0.0.7" for label in CONTACT_LABELS]
        lines += ["contact-email:  bob@uni.example.edu", "Bag-Software-Agent: repro 0.1.0"]
        lines += ["Internal-Sender-Identifier: run on node17.cluster.internal"]
        data = ("\n".join(lines) + "\n").encode()
        hits = scan(layout.BAG_INFO, data)
        assert [(h.kind, h.pattern) for h in hits] == [("identity", "host-name")]
        assert data[hits[0].offset :].startswith(b"node17")

    @settings(max_examples=60, deadline=None)
    @given(
        parts=st.lists(
            st.sampled_from(
                [*itertools.chain(*FOUND.values()), *CLEAN, "\n", "Contact-Email: ", " ", '"']
            ),
            max_size=30,
        ),
        cuts=st.lists(st.integers(0, 2000), max_size=8),
        file=st.sampled_from([ENV, layout.BAG_INFO]),
    )
    def test_any_split(self, parts: list[str], cuts: list[int], file: str) -> None:
        """A scanner fed an environment file in blocks finds what scan() finds in it whole."""
        data = "".join(parts).encode()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(scanner_module, "GATHER", 1)
            patch.setattr(scanner_module, "ROUND", 7)
            scanner = Scanner(file)
            edges = [0, *sorted(c for c in cuts if c <= len(data)), len(data)]
            for a, b in itertools.pairwise(edges):
                scanner.feed(data[a:b])
            found = scanner.finish()
        assert list(found.first) == scan(file, data)[: disclosure.MAX_HITS_KEPT]


@pytest.mark.slow
class TestBounds:
    """The identity patterns read as far as they declare, and scan in linear time."""

    @pytest.mark.parametrize("per_line", [False, True], ids=["environment", "bag-info"])
    def test_reach_declared(self, per_line: bool) -> None:
        """Each pattern's reach is what its regex reads; no lookbehind reads past the tail."""
        for pattern in identity_patterns(per_line):
            parsed = sre_parse.parse(pattern.regex.pattern, pattern.regex.flags)
            _, reach, behind = _reads(parsed)
            assert pattern.reach == reach, pattern.name
            assert behind <= BEHIND

    @pytest.mark.parametrize(
        ("literal", "filler"),
        [
            ("a@", "b."),
            ("a", "@"),
            ("10.", "1"),
            ("1.", "1."),
            ("fd00:", "a"),
            ("a.", "b-"),
            ("Contact-Email:", " "),
        ],
    )
    @pytest.mark.parametrize("file", [ENV, layout.BAG_INFO])
    def test_linear(self, literal: str, filler: str, file: str) -> None:
        """Hostile texts of the identity patterns' pieces scan in time linear in their length."""
        for make in families(literal, filler).values():
            _linear(make, file)


@pytest.mark.slow
class TestStudyAndVerify:
    """The study never writes what its verify names; verify names what a forger plants."""

    def test_planted_identity_is_named(self, small_bundle: Path, tmp_path: Path) -> None:
        """An email address, a private address and a host name planted in environment.json,
        the manifests regenerated, are each a disclosure finding of kind identity."""
        root = tmp_path / "b"
        shutil.copytree(small_bundle, root)
        path = root / ENV
        text = path.read_text("utf-8").replace(
            '"backend":"local"',
            '"backend":"local","x":"alice@example.org 10.2.3.4 n1.hpc.example.edu"',
        )
        path.write_text(text, "utf-8")
        reseal(root)
        found = [f for f in verify(root) if f.code == "disclosure"]
        assert sorted(f.found for f in found) == [
            "email-address",
            "host-name",
            "private-ip-address",
        ]
        assert all("identity" in f.what for f in found)

    def test_a_host_name_in_the_platform_is_withheld(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        small_protocol: dict[str, Any],
        write_protocol: Callable[..., Path],
    ) -> None:
        """A kernel release that names the machine is recorded as withheld, and the bundle
        verifies."""
        monkeypatch.setattr(platform, "release", lambda: "6.1.0-build.node7.corp.internal")
        small_protocol["runs_per_condition"] = 2
        bundle = run_study(write_protocol(small_protocol), tmp_path / "bundle")
        assert '"platform":"withheld"' in (bundle / ENV).read_text("utf-8")
        assert verify(bundle) == []

    def test_withheld(self) -> None:
        """The rule the study applies to each value it records of its machine."""
        assert withheld(ENV, "Linux 6.1") == "Linux 6.1"
        assert withheld(ENV, "1.0+node3.cluster.lan") == "withheld"
        assert withheld(ENV, "/home/alice/python") == "withheld"

    def test_a_title_is_the_maker_s_own_words(
        self,
        tmp_path: Path,
        small_protocol: dict[str, Any],
        write_protocol: Callable[..., Path],
    ) -> None:
        """A title, which bag-info.txt carries as the bag's description, is text the study's
        author chose, as the protocol that holds it too: an address in it is no disclosure."""
        small_protocol["title"] = "Baselines, ask alice@example.org"
        small_protocol["runs_per_condition"] = 2
        bundle = run_study(write_protocol(small_protocol), tmp_path / "bundle")
        assert "alice@example.org" in (bundle / layout.BAG_INFO).read_text("utf-8")
        assert verify(bundle) == []

    def test_a_clean_title_with_dots(
        self, small_protocol: dict[str, Any], write_protocol: Callable[..., Path], tmp_path: Path
    ) -> None:
        """A title with version numbers and abbreviations is no identity."""
        small_protocol["title"] = "Baselines v1.2.3, e.g. CartPole-v1 (rev. 2)"
        small_protocol["runs_per_condition"] = 2
        bundle = run_study(write_protocol(small_protocol), tmp_path / "bundle")
        assert verify(bundle) == []
