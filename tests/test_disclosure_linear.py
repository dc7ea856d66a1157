"""The disclosure scanner takes time linear in its input, whatever the input: no hostile text
(a pattern's literal repeated, followed by long runs of the characters it goes on with, or the
two alternating) makes it crawl.

These tests time :func:`repro._disclosure.scan_hits` (the bounded scan a large file gets), or
:func:`repro._disclosure.scan` where there is no such function, and
:func:`repro._disclosure.refuse_disclosing_protocol`, so that they can be run against an older
scanner too. A timer interrupts a scan that runs past its bound (the regex engine checks for
signals), so a quadratic scanner fails them in seconds instead of hanging.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import repro._disclosure
from repro._disclosure import refuse_disclosing_protocol
from repro._json.serde import structure
from repro._protocol.freeze import freeze
from repro.models import Protocol

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="the time bound is kept by a SIGALRM interval timer"
)

#: The scan timed: the first hits and a count where the scanner offers it, else every hit.
SCAN: Callable[[str, bytes], object] = getattr(
    repro._disclosure, "scan_hits", repro._disclosure.scan
)
MIB = 1 << 20
#: A MiB of any of these texts must scan within this many seconds (the scanner takes well under
#: a tenth of it on an idle machine; the bound is wide because the machine may be busy).
BOUND = 3.0
#: Scanning four times as much may take at most this many times as long: linear, with room for
#: noise (a quadratic scanner takes sixteen times as long).
RATIO = 8.0
#: Times below this are taken as this when comparing, so that noise on a scan of a few
#: milliseconds cannot fail the ratio.
FLOOR = 0.02

#: Per pattern, pairs of a literal that starts (or may start) its matches and a filler that
#: continues them, from which the hostile texts are built (see :func:`families`).
ADVERSARIES: dict[str, tuple[tuple[str, str], ...]] = {
    "posix-host-root": (("/", "a"), (" /a", "/"), ("%2F", "home"), ("/ho\u200b", "a")),
    "tilde-path": (("~", "a"), (" ~a", "/")),
    "unc-path": (("\\\\", "a"), (" \\\\a", "\\"), (" \\\\\\\\a", "\\\\")),
    "windows-drive": (("C:", "\\"), (" C:", "/"), ("C%3A", "%5C")),
    "file-url": (("file:/", "x"), ("FILE:", "/")),
    "python-traceback-header": (("Traceback (most recent call last)", "Traceback "),),
    "python-traceback-frame": (('File "', "x"), ('File \\"', '\\", line ')),
    "aws-access-key-id": (("AKIA", "A"), (" ASIA", "0")),
    "aws-secret-access-key": (
        ("Ab1", "A"),
        (" Ab1/", "a"),
        ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEX", " "),
    ),
    "pem-private-key": (("-----BEGIN ", "A "), ("-", "-")),
    "github-token": (("ghp_", "a"), ("github_pat_", "_")),
    "openai-style-key": (("sk-", "a"), (" sk-proj-", "Ab1")),
    "slack-token": (("xoxb-", "1"), (" xoxp-", "-")),
    "jwt": (("eyJ", "a"), (" eyJhbGciOi.eyJ", "a")),
    "url-password": (("://", "a"), ("https://a:", "b"), ("://a:", "@")),
    "secret-assignment": (
        ("token_", "token_"),
        ("Secret_", "Secret_"),
        ("token", "_"),
        ("token=", "a"),
        ("x_token ", " "),
        ("token: ", "1"),
        ("api", "-"),
    ),
}


def families(literal: str, filler: str) -> dict[str, Callable[[int], bytes]]:
    """The hostile texts of ``size`` bytes made of ``literal`` and ``filler``: the literal
    repeated; the literal then one long run of the filler; the literal and a few fillers in turn,
    repeated."""
    lit, fill = literal.encode(), filler.encode()

    def repeated(piece: bytes) -> Callable[[int], bytes]:
        return lambda size: (piece * (size // len(piece) + 1))[:size]

    return {
        "repeated": repeated(lit),
        "run": lambda size: lit + repeated(fill)(size - len(lit)),
        "alternating": repeated(lit + fill * 3),
    }


def _cases() -> Iterator[Any]:
    for pattern, pairs in ADVERSARIES.items():
        for literal, filler in pairs:
            for family, make in families(literal, filler).items():
                yield pytest.param(make, id=f"{pattern}-{literal.strip()!r}-{family}")


class _TooSlow(Exception):
    pass


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt what runs inside with :class:`_TooSlow` once ``seconds`` have passed."""

    def expire(signum: int, frame: Any) -> None:
        raise _TooSlow(f"still scanning after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _seconds(data: bytes, bound: float, file: str = "f") -> float:
    """CPU seconds to scan ``data`` as bundle file ``file`` (CPU time, so that a busy machine
    counts less), failing once ``bound`` seconds of wall time have passed."""
    with _deadline(bound):
        started = time.process_time()
        SCAN(file, data)
        return time.process_time() - started


def _linear(make: Callable[[int], bytes], file: str = "f") -> tuple[float, float]:
    """The time for a MiB of ``make``'s text, and for four, scanned as bundle file ``file``;
    asserts the bounds."""
    small, large = make(MIB), make(4 * MIB)
    one = _seconds(small, BOUND, file)
    assert one < BOUND
    four = _seconds(large, 4 * RATIO * BOUND, file)
    if four > RATIO * max(one, FLOOR):
        # Once more, in case a burst of other work fell into one of them.
        one, four = _seconds(small, BOUND, file), _seconds(large, 4 * RATIO * BOUND, file)
    assert four <= RATIO * max(one, FLOOR), (one, four)
    return one, four


@pytest.mark.slow
class TestLinearTime:
    """Every pattern scans hostile texts in time linear in their length."""

    @pytest.mark.parametrize("make", list(_cases()))
    def test_hostile_text(self, make: Callable[[int], bytes]) -> None:
        """A MiB of the text scans within the bound, and four MiB within RATIO times that."""
        _linear(make)

    @pytest.mark.parametrize(
        ("piece", "size"),
        [("token_", 30_000), ("token_", 240_000), ("Secret_", 240_000)],
        ids=["token_-30KB", "token_-240KB", "Secret_-240KB"],
    )
    def test_reported_inputs(self, piece: str, size: int) -> None:
        """The texts that took 10 s and more than 120 s (an identifier of "token_" or "Secret_"
        repeated, alone or in a manifest line) scan in a fraction of a second."""
        text = (piece * (size // len(piece))).encode()
        assert _seconds(text, 1.0) < 1.0
        line = b"0123abcd" * 8 + b"  data/" + text + b".json\n"
        assert _seconds(line, 1.0) < 1.0

    def test_long_protocol_description(self) -> None:
        """A protocol with a 120 KB description of "token_" repeated is judged (and found clean)
        in well under a second, where the study used to hang."""
        protocol = {
            "schema": "repro.protocol/1",
            "id": "long-description",
            "title": "A study with a long description",
            "description": "token_" * 20_000,
            "adapter": {"name": "synthetic", "options": {}},
            "matrix": [{"name": "arm", "levels": ["a", "b"]}],
            "participants": [{"id": "sleep", "kind": "constant", "params": {"action": 0}}],
            "runs_per_condition": 2,
            "seeding": {"mode": "stream", "seed": 1},
            "measure": {"name": "episode_return", "description": "sum of step rewards"},
            "estimand": "sum-of-condition-means",
            "interval": {"method": "normal", "level": 0.95},
        }
        frozen_protocol = freeze(structure(json.loads(json.dumps(protocol)), Protocol, what="p"))
        with _deadline(2.0):
            started = time.process_time()
            refuse_disclosing_protocol(frozen_protocol)
            assert time.process_time() - started < 1.0
