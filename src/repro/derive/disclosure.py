"""What a bundle must never carry: host paths, tracebacks and credential-looking strings.

A bundle travels to reviewers and archives, so it must not say where or by whom it was made, nor
hold a secret. The scanner looks at the bytes of one bundle file and reports each hit as a
:class:`Disclosure`: the file, the kind, the byte offset and the name of the pattern that matched,
never the matched text, so that a report about a leak does not leak again.

``repro study`` scans the exact bytes it writes and ``repro verify`` the exact bytes it reads;
the hits in the derivation's input files (:func:`repro.layout.is_derivation_input`)
decide the disclosure tier on both sides, so a stored verdict that hides a hit fails re-derivation.

Design
------

*Linear time.* Every pattern starts only at a boundary (a ``/`` not inside a word or a relative
path, the start of an identifier, a token's first character) and every quantifier is bounded
(possessive where backtracking would only repeat work), so each possible start costs at most a
constant number of steps and no text, however hostile, makes a scan slower than linear. Patterns
without a rare literal to jump by are only run near what they need: the secret-sounding words of
``secret-assignment`` (found by plain substring search), the exactly-40-character runs of
``aws-secret-access-key``.

*Fast where there is nothing to find.* Most patterns name a byte every match holds (``/`` for
POSIX paths, ``@`` for a URL password, ``J`` for a JWT), and the AWS secret key wants an
upper-case letter: where a buffer lacks it (checked at memchr speed), the regex is not run. A
runs file of numbers, digests and identifiers runs only a few regexes at all.

*Bounded matches, hence streaming.* Because every pattern reads at most a fixed number of bytes
from where a match starts (its ``reach``), a :class:`Scanner` fed a file block by block needs to
carry only a short tail between blocks, and it finds exactly what :func:`scan` finds in the whole
file, whatever the blocks: a position is judged once the bytes it can read are all there. It
keeps the first :data:`MAX_HITS_KEPT` hits and counts the rest (:class:`FileHits`), so neither a
huge file nor a file full of hits holds more than a few blocks' worth of memory.

*Hidden spellings.* Zero-width characters (U+200B, U+200C, U+200D, U+2060, U+FEFF, U+00AD as
UTF-8) inside a path and percent-encoded separators (``%2F``, ``%5C``, ``%3A``, ``%7E``, either
case) would split or hide what the patterns look for. Where the data holds such a sequence
(found by substring search, and only where a ``%`` or the first byte of a zero-width character
occurs), the patterns run over a normalised view with the zero-width characters removed and
those escapes decoded, and each hit is mapped back to the offset of the byte it starts at in
the file.

No pattern reads across a newline, so scanning a JSON Lines file line by line (with each line's
offset) still gives the same hits as scanning the whole file.
"""

from __future__ import annotations

import re
from bisect import bisect_right, insort
from collections.abc import Callable, Iterator
from typing import Any, Literal

from attrs import frozen

from repro import layout
from repro.errors import BadInput
from repro.json import canonical
from repro.json.serde import to_bytes, unstructure
from repro.models import FrozenProtocol

__all__ = [
    "CONTACT_LABELS",
    "IDENTITY_FILES",
    "MAX_HITS_KEPT",
    "WITHHELD_CAUSE",
    "Disclosure",
    "FileHits",
    "Kind",
    "Scanner",
    "refuse_disclosing_protocol",
    "scan",
    "scan_hits",
    "short_cause",
    "withheld",
]

Kind = Literal["host-path", "traceback", "credential", "identity"]

#: How many hits of one file a :class:`Scanner` keeps (the first ones in sorted order); it counts
#: every other hit without keeping it.
MAX_HITS_KEPT = 25


@frozen(order=True)
class Disclosure:
    """One hit: ``file`` (bundle-relative), the byte ``offset`` where the match starts, its
    ``kind`` and the ``pattern`` that matched (a name, the only hint given about the content)."""

    file: str
    offset: int
    kind: Kind
    pattern: str

    def describe(self) -> str:
        """``file: kind at byte N (pattern)``, for tier evidence and messages."""
        return f"{self.file}: {self.kind} at byte {self.offset} ({self.pattern})"


@frozen
class FileHits:
    """The hits in one file: ``first``, the first hits in sorted order (by offset, then kind and
    pattern; at most the ``keep`` the scanner was given), ``count``, every hit in the file, and
    ``kinds``, the kinds of every hit."""

    file: str
    first: tuple[Disclosure, ...]
    count: int
    kinds: frozenset[Kind] = frozenset()


# --------------------------------------------------------------------------- patterns

#: A hit as the engine finds it: its offset (in the buffer, then in the file), kind and pattern.
_Hit = tuple[int, Kind, str]

#: A look at a match the regex alone cannot judge: the index in the scanned buffer where the hit
#: starts, or None to reject the match (which then consumes nothing: the search goes on from the
#: byte after its start).
_Judge = Callable[[re.Match[bytes]], int | None]


class _View:
    """One buffer being scanned, with the derived copies some patterns search instead of it,
    each made at most once and only when a pattern asks."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._lowered: bytes | None = None
        self._runs: bytes | None = None

    @property
    def lowered(self) -> bytes:
        """The data in lower case, for case-insensitive substring search."""
        if self._lowered is None:
            self._lowered = self.data.lower()
        return self._lowered

    @property
    def runs(self) -> bytes:
        """The data with each character of a base64 run (``[A-Za-z0-9/+]``) as ``a`` and every
        other byte as ``.``: runs of exactly 40 are then found by substring search."""
        if self._runs is None:
            self._runs = self.data.translate(_RUNS_TABLE)
        return self._runs


#: Where matches of a pattern may start: ranges ``(a, b)`` (both included), increasing and
#: disjoint, of the positions in ``[lo, hi)`` at which the pattern can match at all. A pattern
#: without it may start anywhere.
_Starts = Callable[[_View, int, int], Iterator[tuple[int, int]]]


@frozen
class _Pattern:
    """One way a disclosure shows: a bounded regex, how far it reads, and what lets the
    scanner skip it or run it only where it can match."""

    name: str
    kind: Kind
    regex: re.Pattern[bytes]
    #: How many bytes from where a match starts the regex may read (its longest match and any
    #: lookahead after it): a position is judged once that many bytes follow it, or the data ends.
    reach: int
    judge: _Judge | None = None
    starts: _Starts | None = None
    #: A byte every match holds: where the data holds none (found at memchr speed, where even
    #: a regex that jumps by a literal reads every byte), the regex is not run.
    gate: bytes = b""
    #: Every match holds an upper-case letter: where the data holds none (its lower-cased copy,
    #: made for other patterns anyway, is equal to it), the regex is not run.
    cased: bool = False
    #: For a regex without a literal to jump by: every match starts at most ``before`` bytes
    #: before an occurrence of one of these (in the lower-cased data if ``folded``), and the
    #: regex runs only there (see :func:`_needle_ranges`). Each comes with a gate of its own,
    #: bytes of which the data must hold one for it to be looked for (none: always).
    needles: tuple[tuple[bytes, tuple[bytes, ...]], ...] = ()
    before: int = 0
    folded: bool = False


#: Lookbehinds read at most this many bytes before a match's start, and a hit starts at most
#: this many bytes before its match (``windows-drive`` reports the drive letter before the
#: colon its regex starts at); a margin on the largest, two.
_BEHIND = 8
#: One character that can be part of a file or directory name (bytes >= 0x80: UTF-8 names).
_NAME = rb"[A-Za-z0-9_.~$@%+=\x80-\xff-]"
#: Not in the middle of a word, a relative path or a URL: the byte before a path's root is no
#: name character, dot, tilde, hyphen, slash or backslash ("src/usr/x", "a.tmp/x" and the path
#: part of "https://host/home/x" all have one there).
_NOT_AFTER_NAME = rb"[A-Za-z0-9_.~/\\-]"


def _present(pattern: _Pattern, view: _View) -> list[bytes]:
    """The needles of ``pattern`` that occur in the data, each looked for only where the data
    holds a byte of its gate: where there are none, the pattern cannot match."""
    data = view.data
    haystack = view.lowered if pattern.folded else data
    present = []
    for needle, gate in pattern.needles:
        # A loop, not any(): this runs for every line of a file scanned line by line.
        for byte in gate:
            if byte in data:
                break
        else:
            if gate:
                continue
        if needle in haystack:
            present.append(needle)
    return present


def _needle_ranges(
    view: _View, needles: list[bytes], before: int, folded: bool, lo: int, hi: int
) -> Iterator[tuple[int, int]]:
    """The starts in ``[lo, hi)`` within ``before`` bytes before an occurrence of one of the
    ``needles`` (in the lower-cased data if ``folded``).

    Occurrences within :data:`_SPAN` bytes of one another share one range, so that a text full
    of them costs one regex search per span rather than one call per occurrence.
    """
    data = view.lowered if folded else view.data
    # The next occurrence of each needle at or after ``pos``, searched again only once ``pos``
    # has passed it, so that each needle's occurrences are found in one sweep.
    upcoming = [data.find(n, lo) for n in needles]
    pos = lo
    while pos < hi:
        found = [q for q in upcoming if q >= 0]
        if not found:
            return
        q = min(found)
        if q - before >= hi:
            return
        a = max(pos, q - before)
        b = min(hi - 1, q + _SPAN)
        yield a, b
        pos = b + 1
        upcoming = [
            p if p < 0 or p >= pos else data.find(n, pos)
            for p, n in zip(upcoming, needles, strict=True)
        ]


#: See :func:`_needle_ranges`.
_SPAN = 512


#: ``a`` for the characters of a base64 run, ``.`` for every other byte.
_RUNS_TABLE = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "/+") else ord(".")
    for i in range(256)
)
_AWS_SECRET_LENGTH = 40
_RUN_OF_40 = b"." + b"a" * _AWS_SECRET_LENGTH


def _exact_runs_of_40(view: _View, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """The starts of the runs of exactly 40 base64 characters: a 40-character secret key is not
    part of a longer run (a 64-character digest is not one), so only those can match."""
    runs = view.runs
    end = len(runs)

    def exact(s: int) -> bool:
        return s + _AWS_SECRET_LENGTH == end or runs[s + _AWS_SECRET_LENGTH] != ord("a")

    if lo == 0 and runs.startswith(_RUN_OF_40[1:]) and exact(0):
        yield 0, 0
    q = runs.find(_RUN_OF_40, max(lo - 1, 0))
    while q >= 0 and q + 1 < hi:
        if exact(q + 1):
            yield q + 1, q + 1
        # A longer run holds no "." before its end: the next search jumps past it.
        q = runs.find(_RUN_OF_40, q + 1)


def _mixed(token: bytes) -> bool:
    # Keys are random: letters of both cases and digits.
    return (
        re.search(rb"[0-9]", token) is not None
        and re.search(rb"[A-Z]", token) is not None
        and re.search(rb"[a-z]", token) is not None
    )


def _mixed_token(match: re.Match[bytes]) -> int | None:
    # A long lower-case identifier that happens to start with "sk-" (a protocol or participant
    # ID) is not a key.
    token = match.group("token")
    return match.start() if len(token) >= 32 and _mixed(token) else None


def _aws_secret(match: re.Match[bytes]) -> int | None:
    # A 40-character git commit ID is lower-case hex; a secret access key mixes cases and digits.
    return match.start() if _mixed(match.group()) else None


def _secret_value(match: re.Match[bytes]) -> int | None:
    # "max_token_count: 128000" is a number, not a secret. (The regex wants a value with a
    # digit, or a long one: "secret: redacted" and "token: none" are words and never get here.)
    try:
        float(match.group("value"))
    except ValueError:
        return match.start("word")
    return None


def _real_password(match: re.Match[bytes]) -> int | None:
    # "user:***@host" is how logs print a URL whose password they withheld.
    return None if match.group("password").strip(b"*") == b"" else match.start("at")


# Bounds, written into the regexes below (and into their ``reach``): a path component of 255
# bytes (the longest name most file systems allow), an identifier of 128, a value of 256, a
# token of 255, 16 blanks around "=" or ":", a JWT header of 1024 and payload of 8192, a traceback
# frame's path of 1024. Past them a match is cut short (a value) or not made (a longer name).

_PATTERNS: tuple[_Pattern, ...] = (
    # An absolute POSIX path, by its shape: a root not inside a relative path or a URL, and at
    # least two components ("/home/alice", "/scratch/run", "/proc/self"). Any such path names a
    # place on one machine. (The pattern keeps the name it had when it looked for a list of host
    # roots.)
    _Pattern(
        "posix-host-root",
        "host-path",
        re.compile(rb"/(?<!" + _NOT_AFTER_NAME + rb"/)" + _NAME + rb"{1,255}+/" + _NAME),
        reach=1 + 255 + 1 + 1,
        gate=b"/",
    ),
    # A home directory by tilde: "~/x", "~alice/x".
    _Pattern(
        "tilde-path",
        "host-path",
        re.compile(
            rb"~(?<!" + _NOT_AFTER_NAME + rb"~)(?:[A-Za-z_][A-Za-z0-9_.-]{0,31}+)?/" + _NAME
        ),
        reach=1 + 32 + 1 + 1,
        gate=b"~",
    ),
    # A UNC path, "\\server\share", raw or JSON-escaped ("\\\\server\\share"). As for drive
    # paths, a single backslash followed by a JSON escape letter only starts an escape, as in a
    # literal "\n" written before a newline escape ("\\n.\n").
    _Pattern(
        "unc-path",
        "host-path",
        re.compile(
            rb"\\\\(?<!" + _NOT_AFTER_NAME + rb"\\\\)"
            rb"(?:\\\\[A-Za-z0-9_.$\x80-\xff-]{1,255}+\\\\"
            rb"|[A-Za-z0-9_.$\x80-\xff-]{1,255}+\\(?![\"\\/bfnrtu]))" + _NAME
        ),
        reach=4 + 255 + 2 + 1,
        gate=b"\\",
    ),
    # A Windows drive path. In JSON a backslash is written twice ("C:\\Users"), and an escaped
    # one again twice; a single backslash there only starts an escape such as \n or \u, so one
    # backslash followed by an escape letter is not taken for a path. Forward slashes are what
    # Python often prints. (The regex starts at the colon, a literal to jump by; the hit at the
    # drive letter before it.)
    _Pattern(
        "windows-drive",
        "host-path",
        re.compile(
            rb":(?<=(?P<at>[A-Za-z]):)(?<![A-Za-z0-9_][A-Za-z]:)"
            rb"(?:(?:\\\\){1,4}+|\\(?![\"\\/bfnrtu])|/)" + _NAME
        ),
        reach=1 + 8 + 1,
    ),
    # A file URL names a local path whatever its spelling. (Case-insensitive, the regex has no
    # literal to jump by: it runs only near a "file:/" in the lower-cased data.)
    _Pattern(
        "file-url",
        "host-path",
        re.compile(rb"(?i)f(?<![A-Za-z0-9+.-]f)ile:/[^\n\"' <>]"),
        reach=7,
        needles=((b"file:/", ()),),
        folded=True,
        gate=b"/",
    ),
    # The first line Python prints for an uncaught exception.
    _Pattern(
        "python-traceback-header",
        "traceback",
        re.compile(rb"Traceback \(most recent call last\)"),
        reach=33,
        gate=b"(",
    ),
    # A traceback frame line, also when the quotes are JSON-escaped; it carries a source path.
    _Pattern(
        "python-traceback-frame",
        "traceback",
        re.compile(rb'File \\?"[^"\n]{1,1024}?\\?", line [0-9]{1,9}'),
        reach=7 + 1024 + 9 + 9,
        gate=b"F",
    ),
    # AWS access key IDs (long-term AKIA, temporary ASIA): 20 upper-case letters and digits.
    _Pattern(
        "aws-access-key-id",
        "credential",
        re.compile(rb"A(?<![A-Z0-9]A)[KS]IA[A-Z0-9]{16}(?![A-Z0-9])"),
        reach=20 + 1,
        gate=b"I",
    ),
    # A bare AWS secret access key: exactly 40 base64 characters, mixing cases and digits.
    _Pattern(
        "aws-secret-access-key",
        "credential",
        re.compile(rb"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"),
        reach=40 + 1,
        judge=_aws_secret,
        starts=_exact_runs_of_40,
        cased=True,
    ),
    # The armour line of any PEM private key (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8). (Its
    # literal begins with a minus sign, which every negative number in a runs file holds: it
    # runs only near a "-----BEGIN ".)
    _Pattern(
        "pem-private-key",
        "credential",
        re.compile(rb"-----BEGIN (?:[A-Z0-9]{1,32}+ ){0,4}PRIVATE KEY-----"),
        reach=11 + 4 * 33 + 16,
        needles=((b"-----BEGIN ", ()),),
        gate=b"G",
    ),
    # GitHub tokens: classic (ghp_, and gho_/ghu_/ghs_/ghr_ for OAuth, user, server, refresh)
    # and fine-grained personal access tokens.
    _Pattern(
        "github-token",
        "credential",
        re.compile(
            rb"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,255}+|ithub_pat_[A-Za-z0-9_]{22,255}+)"
        ),
        reach=11 + 255,
    ),
    # OpenAI-style secret keys: "sk-" (or sk-proj-, sk-svcacct-, sk-admin-) and a long random
    # token.
    _Pattern(
        "openai-style-key",
        "credential",
        re.compile(
            rb"s(?<![A-Za-z0-9_-]s)k-(?:proj-|svcacct-|admin-)?(?P<token>[A-Za-z0-9_-]{20,255}+)"
        ),
        reach=3 + 8 + 255,
        judge=_mixed_token,
        gate=b"k",
    ),
    # Slack tokens: bot, user, app, config and refresh ("xoxb-", "xoxp-", ...).
    _Pattern(
        "slack-token",
        "credential",
        re.compile(rb"x(?<![A-Za-z0-9]x)ox[abposr]-[A-Za-z0-9-]{10,255}+"),
        reach=5 + 255,
        gate=b"x",
    ),
    # A JSON Web Token: a base64url header and payload, both JSON objects (so "eyJ", the
    # encoding of '{"'), and a signature.
    _Pattern(
        "jwt",
        "credential",
        re.compile(
            rb"e(?<![A-Za-z0-9_.=+/-]e)yJ[A-Za-z0-9_-]{8,1024}+\.eyJ[A-Za-z0-9_-]{8,8192}+\."
            rb"[A-Za-z0-9_-]{16}"
        ),
        reach=3 + 1024 + 4 + 8192 + 1 + 16,
        gate=b"J",
    ),
    # A URL that carries a password: "scheme://user:password@host", the user and the password
    # made of RFC 3986 unreserved characters, sub-delimiters and percent escapes. (The hit is at
    # the user.)
    _Pattern(
        "url-password",
        "credential",
        re.compile(
            rb"://(?<=[A-Za-z0-9+.-]://)(?P<at>[A-Za-z0-9._~%!$&'()*+,;=-]{1,128}+)"
            rb":(?P<password>[A-Za-z0-9._~%!$&'()*+,;=:-]{1,128}+)@[A-Za-z0-9\[]"
        ),
        reach=3 + 128 + 1 + 128 + 1 + 1,
        judge=_real_password,
        gate=b"@",
    ),
    # A secret-sounding name given a value: "password=...", "API_KEY: ...", JSON
    # "token":"...", AWS_SECRET_ACCESS_KEY=... The regex starts only where an identifier
    # starts and reads at most a bounded identifier (a "token_token_..." of any length costs one
    # look), in which a secret-sounding word must stand as a word of its own: "my_token",
    # "x-api-key", "AWS_SECRET_ACCESS_KEY", not "tokenizer" or "mytoken". The hit begins at the
    # first such word. The value must hold a digit or be long, and the judge refuses a number.
    # It runs only near those words.
    _Pattern(
        "secret-assignment",
        "credential",
        re.compile(
            rb"(?<![A-Za-z0-9_-])"
            rb"(?=[A-Za-z0-9_-]{0,127}?(?<![A-Za-z0-9])"
            rb"(?P<word>(?i:passw(?:or)?d|secret|api[_-]?key|token))(?![A-Za-z0-9]))"
            rb"[A-Za-z0-9_-]{1,128}+"
            rb"\\?\"?[ \t]{0,16}+[:=][ \t]{0,16}+\\?[\"']?"
            rb"(?=[^ \t\n\"'\\,;&<>]{0,255}?[0-9]|[^ \t\n\"'\\,;&<>]{16})"
            rb"(?P<value>[^ \t\n\"'\\,;&<>]{6,256}+)"
        ),
        reach=128 + 2 + 16 + 1 + 16 + 2 + 256,
        judge=_secret_value,
        needles=(
            (b"passw", (b"w", b"W")),
            (b"secret", ()),
            (b"api", (b"k", b"K")),
            (b"token", (b"k", b"K")),
        ),
        before=128,
        folded=True,
    ),
)


# Who and where: in the files that record the environment a study ran in, an address that names a
# person or a machine. Elsewhere (a harness's outcome, a protocol's text) such strings are the
# study's own data. Each is judged by :func:`_identity`, which wants a name, not a version
# number: a domain's last label is a word of letters, and some label before it holds a letter.

#: The labels of bag-info.txt whose text its maker chose: those the BagIt specification gives
#: them to name themselves, and the description (a study writes its protocol's title there).
#: What is on their lines is said on purpose, and is not a disclosure.
CONTACT_LABELS = (
    "Source-Organization",
    "Organization-Address",
    "Contact-Name",
    "Contact-Phone",
    "Contact-Email",
    layout.DESCRIPTION_LABEL,
)
#: A DNS label, at most 63 bytes.
_LABEL = rb"[A-Za-z0-9-]{1,63}+"
#: Characters of a line read before an address on it, at most: an address further along a
#: longer line of bag-info.txt is not looked for.
_LINE = 1024


def _named(match: re.Match[bytes]) -> int | None:
    """The start of an email address's hit: its domain ends in a word of 2 to 24 letters, and
    a label before that holds a letter ("1.2.3.dev" is a version)."""
    labels = match.group("domain").split(b".")
    if len(labels) < 2 or not (labels[-1].isalpha() and 2 <= len(labels[-1]) <= 24):
        return None
    if not any(any(c in _LETTERS for c in label) for label in labels[:-1]):
        return None
    return match.start("at")


#: The top-level domains a bare host name is taken to end in: every two-letter country code,
#: the generic ones hosts are named under, and the suffixes of private networks. A dotted name
#: ending otherwise ("repro.environment", a schema's; "ruamel.yaml", a package's) is no host.
_HOST_DOMAINS = frozenset(
    b"com org net edu gov mil int info biz dev app cloud "
    b"local localdomain internal intranet lan home corp private cluster".split()
)


def _host(match: re.Match[bytes]) -> int | None:
    """The start of a host name's hit: an email address's domain rule (:func:`_named`), and a
    top-level domain of :data:`_HOST_DOMAINS` (or two letters)."""
    last = match.group("domain").rpartition(b".")[2].lower()
    if not (len(last) == 2 or last in _HOST_DOMAINS):
        return None
    return _named(match)


_LETTERS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _private_ipv4(match: re.Match[bytes]) -> int | None:
    """The start of a private, link-local or shared-space IPv4 address (every part <= 255)."""
    parts = [int(p) for p in match.group("address").split(b".")]
    if any(p > 255 for p in parts):
        return None
    a, b = parts[0], parts[1]
    private = (
        a == 10
        or (a == 172 and 16 <= b <= 31)
        or (a == 192 and b == 168)
        or (a == 169 and b == 254)
        or (a == 100 and 64 <= b <= 127)
    )
    return match.start("at") if private else None


#: What the identity patterns match, by name: each regex begins at the address (group "at"),
#: with its kind, what its judge reads, and how far it reads.
_IDENTITY: tuple[tuple[str, bytes, _Judge, int, bytes], ...] = (
    (
        "email-address",
        rb"(?P<at>(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}+@(?P<domain>"
        + _LABEL
        + rb"(?:\."
        + _LABEL
        + rb"){1,8}+))(?![A-Za-z0-9-])",
        _named,
        64 + 1 + 63 + 8 * 64 + 1,
        b"@",
    ),
    (
        "private-ip-address",
        rb"(?P<at>(?<![0-9.])(?P<address>[0-9]{1,3}+(?:\.[0-9]{1,3}+){3}+))(?![0-9]|\.[0-9])",
        _private_ipv4,
        15 + 2,
        b".",
    ),
    (
        "private-ipv6-address",
        rb"(?P<at>(?<![0-9A-Fa-f:])(?i:f[cd][0-9a-f]{2}|fe[89ab][0-9a-f]):"
        rb"[0-9A-Fa-f]{0,4}+:[0-9A-Fa-f:]{0,32}+)",
        lambda match: match.start("at"),
        4 + 1 + 4 + 1 + 32,
        b":",
    ),
    (
        "host-name",
        rb"(?P<at>(?<![A-Za-z0-9.@-])(?P<domain>" + _LABEL + rb"(?:\." + _LABEL + rb"){1,8}+))"
        rb"(?![A-Za-z0-9@-]|\.[A-Za-z0-9])",
        _host,
        63 + 8 * 64 + 2,
        b".",
    ),
)


def _identity_patterns(per_line: bool) -> tuple[_Pattern, ...]:
    """The identity patterns; ``per_line`` (bag-info.txt): each looked for from the start of a
    line, on a line that is none of :data:`CONTACT_LABELS` (one hit per line and pattern at
    most, within its first :data:`_LINE` characters)."""
    contact = b"|".join(label.encode() for label in CONTACT_LABELS)
    out = []
    for name, body, judge, reach, gate in _IDENTITY:
        if per_line:
            regex = rb"(?m)^(?!(?i:" + contact + rb")[ \t]{0,16}:)[^\n]{0," + str(_LINE).encode()
            regex += rb"}?" + body
            reach += _LINE
        else:
            regex = body
        out.append(
            _Pattern(name, "identity", re.compile(regex), reach=reach, judge=judge, gate=gate)
        )
    return tuple(out)


def _prepared(patterns: tuple[_Pattern, ...]) -> tuple[tuple[_Pattern, str | int], ...]:
    """Per pattern, the group where its hits start (0: the match)."""
    return tuple((p, "at" if "at" in p.regex.groupindex else 0) for p in patterns)


_PREPARED = _prepared(_PATTERNS)
#: The files that record where, when and how a study ran (and so must name no one and no
#: machine), by bundle name, and what is looked for in each.
IDENTITY_FILES = {
    layout.ENVIRONMENT: _prepared(_PATTERNS + _identity_patterns(per_line=False)),
    layout.BAG_INFO: _prepared(_PATTERNS + _identity_patterns(per_line=True)),
}


def _prepared_for(file: str) -> tuple[tuple[_Pattern, str | int], ...]:
    """What is looked for in bundle file ``file``."""
    return IDENTITY_FILES.get(file, _PREPARED)


def _search(
    pattern: _Pattern,
    at: str | int,
    view: _View,
    pos: int,
    limit: int,
    hits: list[_Hit],
    needles: list[bytes] | None = None,
) -> int:
    """Append to ``hits`` (as buffer index, kind, pattern) the hits of ``pattern`` in
    ``view.data`` whose matches start in ``[pos, limit)``; return the position its next search
    must start at, ``limit`` or the end of a hit past it. ``at`` names the group where a hit
    starts (0: the match); ``needles`` are the pattern's needles that occur in the data.

    A hit consumes its match, as :func:`re.finditer` does; a rejected match consumes nothing.
    """
    data = view.data
    regex = pattern.regex
    judge = pattern.judge
    ranges: Iterator[tuple[int, int]]
    reach = pattern.reach
    if needles:
        ranges = _needle_ranges(view, needles, pattern.before, pattern.folded, pos, limit)
    elif pattern.starts is not None:
        ranges = pattern.starts(view, pos, limit)
    elif judge is None and limit == len(data):
        # Every match to the end is a hit: finditer finds them as the loop below would.
        kind, name = pattern.kind, pattern.name
        hits.extend((match.start(at), kind, name) for match in regex.finditer(data, pos))
        return limit
    else:
        ranges = iter(((pos, limit - 1),))
        reach = len(data)
    for a, b in ranges:
        q = max(a, pos)
        # No match that starts at or before b reads past b + reach: searching a string cut
        # there finds the same matches there, and spares a crawl to the next range.
        end = min(len(data), b + reach)
        while q <= b:
            match = regex.search(data, q, end)
            if match is None or match.start() > b:
                q = b + 1
                break
            offset = match.start(at) if judge is None else judge(match)
            if offset is None:
                q = match.start() + 1
            else:
                hits.append((offset, pattern.kind, pattern.name))
                q = match.end()
        pos = max(pos, q)
    return max(pos, limit)


# --------------------------------------------------------------------------- normalised view

#: Zero-width and invisible characters (as UTF-8), removed, and the percent escapes of the
#: characters that separate path components and drives ("/", "\", ":", "~"), decoded.
_HIDDEN = re.compile(
    rb"(?:\xe2\x80[\x8b-\x8d]|\xe2\x81\xa0|\xef\xbb\xbf|\xc2\xad)++"
    rb"|(?:%(?:2[Ff]|5[Cc]|3[Aa]|7[Ee]))++"
)
#: Each escape :data:`_HIDDEN` decodes, decoded.
_DECODED = {
    b"%" + hi + lo: bytes.fromhex((hi + lo).decode("ascii"))
    for hi, lows in ((b"2", b"Ff"), (b"3", b"Aa"), (b"5", b"Cc"), (b"7", b"Ee"))
    for lo in (lows[:1], lows[1:])
}
#: The proper prefixes of what :data:`_HIDDEN` removes or decodes: a block ending in one is cut
#: before it, and the rest waits for the next block. (Each starts with a byte that none of them
#: holds elsewhere, so nothing whole is ever cut.)
_HIDDEN_PREFIXES = frozenset(
    (
        b"\xe2",
        b"\xe2\x80",
        b"\xe2\x81",
        b"\xef",
        b"\xef\xbb",
        b"\xc2",
        b"%",
        b"%2",
        b"%3",
        b"%5",
        b"%7",
    )
)


#: The zero-width characters :data:`_HIDDEN` removes, by their first byte.
_ZERO_WIDTH = (
    (b"\xe2", (b"\xe2\x80\x8b", b"\xe2\x80\x8c", b"\xe2\x80\x8d", b"\xe2\x81\xa0")),
    (b"\xef", (b"\xef\xbb\xbf",)),
    (b"\xc2", (b"\xc2\xad",)),
)


def _hides(raw: bytes) -> bool:
    """Whether ``raw`` holds something :data:`_HIDDEN` removes or decodes, by substring checks
    (the regex itself would crawl through every byte, slower than all the checks together)."""
    if b"%" in raw and any(escape in raw for escape in _DECODED):
        return True
    if raw.isascii():
        return False
    return any(lead in raw and any(z in raw for z in chars) for lead, chars in _ZERO_WIDTH)


def _held_back(raw: bytes) -> int:
    """How many bytes at the end of ``raw`` may begin something :data:`_HIDDEN` changes."""
    for k in (2, 1):
        if len(raw) >= k and raw[-k:] in _HIDDEN_PREFIXES:
            return k
    return 0


class _Offsets:
    """The map from offsets in the normalised view to offsets in the file: from view offset
    ``view[i]`` on (up to the next), a view byte is ``shift[i]`` bytes further on in the file,
    the bytes removed before it. One entry per removed or decoded sequence."""

    def __init__(self) -> None:
        self.view: list[int] = [0]
        self.shift: list[int] = [0]

    def __call__(self, view: int) -> int:
        # Entries may share a view offset (a zero-width run just after an escape); the last
        # one holds.
        return view + self.shift[bisect_right(self.view, view) - 1]

    def forget_before(self, view: int) -> None:
        """Drop the entries that no view offset from ``view`` on needs."""
        i = bisect_right(self.view, view) - 1
        if i > 0:
            del self.view[:i], self.shift[:i]


def _normalise(raw: bytes, file_at: int, offsets: _Offsets) -> bytes:
    """The normalised view of ``raw`` (the file's bytes from offset ``file_at`` on), recording
    in ``offsets`` where its bytes come from."""
    if not _hides(raw):
        return raw
    pieces: list[bytes] = []
    views, shifts = offsets.view, offsets.shift
    removed = shifts[-1]
    copied = 0
    for match in _HIDDEN.finditer(raw):
        start, end = match.span()
        pieces.append(raw[copied:start])
        if end - start == 3 and raw[start] == 0x25:  # "%": one escape, three bytes for one
            pieces.append(_DECODED[raw[start:end]])
            removed += 2
            views.append(file_at + end - removed)
            shifts.append(removed)
        elif raw[start] == 0x25:  # a run of escapes
            escapes = (end - start) // 3
            pieces.append(bytes.fromhex(match.group().replace(b"%", b"").decode("ascii")))
            # The view byte after each decoded one is two bytes further on in the file.
            after = file_at + start - removed + 1
            views.extend(range(after, after + escapes))
            shifts.extend(range(removed + 2, removed + 2 * escapes + 1, 2))
            removed += 2 * escapes
        else:
            removed += end - start
            # The view byte after the removed run comes from file offset file_at + end.
            views.append(file_at + end - removed)
            shifts.append(removed)
        copied = end
    pieces.append(raw[copied:])
    return b"".join(pieces)


# --------------------------------------------------------------------------- the scanner

#: Blocks smaller than this are gathered before they are scanned, so that feeding a byte at a
#: time does not scan the carried tail again at every byte.
GATHER = 1 << 16
#: Blocks larger than this are scanned this much at a time, so that the copies a scan makes
#: (lower case, base64 runs, normalised view) stay small however large the block.
ROUND = 1 << 20


class _Stream:
    """The hits in a stream of bytes, fed in blocks of any size: the engine under
    :class:`Scanner` and :func:`scan`. Hits come out as (file offset, kind, pattern), in no
    particular order, once nothing that follows can change them."""

    def __init__(self, prepared: tuple[tuple[_Pattern, str | int], ...] = _PREPARED) -> None:
        self._prepared = prepared
        self._gathered = bytearray()
        #: File bytes not yet normalised: the end of a block that may begin a hidden character.
        self._held = b""
        self._file_at = 0
        self._offsets = _Offsets()
        #: The normalised view from ``_tail_at`` on that positions still to be judged may read.
        self._tail = b""
        self._tail_at = 0
        #: Per pattern, the view offset its next search starts at.
        self._resume = [0] * len(prepared)

    def feed(self, block: bytes) -> list[_Hit]:
        """The hits that ``block`` (the next bytes of the stream) settles."""
        if len(self._gathered) + len(block) < GATHER:
            self._gathered += block
            return []
        hits: list[_Hit] = []
        if self._gathered:
            hits += self._round(bytes(self._gathered), final=False)
            self._gathered.clear()
        if len(block) <= ROUND:
            hits += self._round(bytes(block), final=False)
        else:
            view = memoryview(block)
            for i in range(0, len(block), ROUND):
                hits += self._round(bytes(view[i : i + ROUND]), final=False)
        return hits

    def finish(self) -> list[_Hit]:
        """The hits still to come, the stream having ended."""
        hits = self._round(bytes(self._gathered), final=True)
        self._gathered.clear()
        return hits

    def _round(self, block: bytes, *, final: bool) -> list[_Hit]:
        raw = self._held + block if self._held else block
        cut = len(raw) - (0 if final else _held_back(raw))
        body, self._held = (raw, b"") if cut == len(raw) else (raw[:cut], raw[cut:])
        normalised = _normalise(body, self._file_at, self._offsets)
        self._file_at += len(body)
        data = self._tail + normalised if self._tail else normalised
        base = self._tail_at
        end = base + len(data)
        view = _View(data)
        found: list[_Hit] = []
        resume = self._resume
        for i, (pattern, at) in enumerate(self._prepared):
            limit = end if final else end - pattern.reach
            pos = resume[i]
            if pos >= limit:
                continue
            skipped = bool(pattern.gate and pattern.gate not in data) or (
                pattern.cased and view.lowered == data
            )
            # Looking for needles costs a search through the data each: only where the gates
            # leave the pattern to run (a runs file holds no "/" for file URLs).
            needles = _present(pattern, view) if pattern.needles and not skipped else []
            if skipped or (pattern.needles and not needles):
                # No match lies wholly in ``data``, so none starts before ``limit``.
                resume[i] = limit
            else:
                resume[i] = base + _search(
                    pattern, at, view, pos - base, limit - base, found, needles
                )
        keep_from = min(max(min(self._resume) - _BEHIND, base), end)
        self._tail = data[keep_from - base :]
        self._tail_at = keep_from
        to_file = self._offsets
        if len(to_file.view) == 1:
            # Nothing removed or decoded since the tail began: one shift for every hit.
            at = base + to_file.shift[0]
            hits = [(at + offset, kind, name) for offset, kind, name in found]
        else:
            hits = [(to_file(base + offset), kind, name) for offset, kind, name in found]
        to_file.forget_before(keep_from)
        return hits


class Scanner:
    """The hits in bundle file ``file``, fed as blocks of its bytes from byte ``start`` on:
    :meth:`feed` each block in order (of any size, empty too), then :meth:`finish` once.

    The result is exactly what :func:`scan` finds in the bytes fed, joined, however they were
    cut; it keeps the first ``keep`` hits in sorted order and counts the rest. Memory is bounded
    by the largest block plus a constant: between blocks only a short tail is carried.
    """

    def __init__(self, file: str, start: int = 0, keep: int = MAX_HITS_KEPT) -> None:
        self._file = file
        self._start = start
        self._keep = keep
        self._stream = _Stream(_prepared_for(file))
        #: The first ``keep`` hits so far, sorted, as (offset, kind, pattern).
        self._first: list[_Hit] = []
        self._count = 0
        self._kinds: set[Kind] = set()

    def _take(self, hits: list[_Hit]) -> None:
        self._count += len(hits)
        if hits:
            self._kinds.update(kind for _, kind, _ in hits)
        first, keep = self._first, self._keep
        for hit in hits:
            if len(first) < keep:
                insort(first, hit)
            elif first and hit < first[-1]:
                insort(first, hit)
                first.pop()

    def feed(self, block: bytes) -> None:
        """Scan ``block``, the next bytes of the file."""
        self._take(self._stream.feed(block))

    def finish(self) -> FileHits:
        """The hits in everything fed: the first ``keep`` and how many there are in all."""
        self._take(self._stream.finish())
        first = tuple(_disclosure(self._file, self._start, hit) for hit in self._first)
        return FileHits(self._file, first, self._count, frozenset(self._kinds))


def _disclosure(file: str, start: int, hit: _Hit) -> Disclosure:
    offset, kind, pattern = hit
    return Disclosure(file, start + offset, kind, pattern)


def scan_hits(file: str, data: bytes, start: int = 0, keep: int = MAX_HITS_KEPT) -> FileHits:
    """The hits in ``data``, the bytes of bundle file ``file`` from byte ``start`` on: the first
    ``keep`` in sorted order and how many there are (a :class:`Scanner` fed ``data`` once)."""
    scanner = Scanner(file, start, keep)
    scanner.feed(data)
    return scanner.finish()


def _whole(data: bytes, prepared: tuple[tuple[_Pattern, str | int], ...]) -> list[_Hit]:
    """The hits in ``data``, a whole stream: what a :class:`_Stream` fed it and finished finds,
    without the stream's bookkeeping (which a scan of one line at a time would pay for)."""
    if len(data) > ROUND:
        stream = _Stream(prepared)
        return stream.feed(data) + stream.finish()
    offsets = _Offsets()
    normalised = _normalise(bytes(data), 0, offsets)
    view = _View(normalised)
    found: list[_Hit] = []
    for pattern, at in prepared:
        if (pattern.gate and pattern.gate not in normalised) or (
            pattern.cased and view.lowered == normalised
        ):
            continue
        if pattern.needles:
            needles = _present(pattern, view)
            if needles:
                _search(pattern, at, view, 0, len(normalised), found, needles)
        elif pattern.starts is None and pattern.judge is None:
            kind, name = pattern.kind, pattern.name
            found += [(match.start(at), kind, name) for match in pattern.regex.finditer(normalised)]
        else:
            _search(pattern, at, view, 0, len(normalised), found)
    if len(offsets.view) == 1:
        return found
    return [(offsets(offset), kind, name) for offset, kind, name in found]


def scan(file: str, data: bytes, start: int = 0) -> list[Disclosure]:
    """Every hit in ``data``, the bytes of bundle file ``file`` from byte ``start`` on, sorted by
    offset (then kind and pattern). For small inputs: a :class:`Scanner` keeps a bounded number
    of hits of a file of any size."""
    return sorted(_disclosure(file, start, hit) for hit in _whole(data, _prepared_for(file)))


# --------------------------------------------------------------------------- callers' helpers


def _locate(value: Any, path: str = "$") -> Iterator[tuple[str, Disclosure]]:
    """The JSON path of every key or string in plain JSON data ``value`` that holds a hit, each
    scanned as the JSON string it is written as (so escapes count as in the file)."""
    if isinstance(value, str):
        for hit in scan("", canonical.dumps(value, newline=False)):
            yield path, hit
    elif isinstance(value, dict):
        for key, item in value.items():
            for hit in scan("", canonical.dumps(key, newline=False)):
                yield f"{path}.{key}", hit
            yield from _locate(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _locate(item, f"{path}[{i}]")


def refuse_disclosing_protocol(frozen_protocol: FrozenProtocol) -> None:
    """Refuse, before anything is written, a protocol whose protocol.json would disclose
    something: raise :class:`BadInput` naming the first hit's JSON path (or, for a hit that
    spans a key and its value, its byte in protocol.json)."""
    hits = scan_hits("data/protocol.json", to_bytes(frozen_protocol), keep=1)
    if not hits.count:
        return
    located = next(_locate(unstructure(frozen_protocol.protocol)), None)
    first = located[1] if located else hits.first[0]
    where = located[0] if located else f"byte {first.offset} of protocol.json"
    raise BadInput(
        f"protocol: would write {first.kind} content ({first.pattern}) into the bundle; keep "
        "host paths, tracebacks and credentials out of the protocol (host-specific adapter "
        f"options can be given with --option) @ {where}"
    )


#: What a cause code may look like: short, one line, no quotes, slashes or backslashes (so no
#: path and no traceback frame), e.g. ``policy-error:RuntimeError``.
_CAUSE_CODE = re.compile(r"[A-Za-z0-9_.:;,=+ -]{1,120}")
#: Recorded instead of an adapter's cause that is no short code or would disclose something.
WITHHELD_CAUSE = "cause-withheld"


def withheld(file: str, value: str) -> str:
    """``value``, a string a study writes into bundle file ``file``, or ``"withheld"`` when it
    would disclose there (:func:`scan`, as verify scans the file): what a study records of the
    machine it ran on (its platform, its packages' versions) never names the machine."""
    return "withheld" if scan(file, canonical.dumps(value, newline=False)) else value


def short_cause(cause: str) -> str:
    """``cause`` when it is a short code that discloses nothing, else :data:`WITHHELD_CAUSE`:
    an adapter's message never reaches the bundle as it is."""
    if _CAUSE_CODE.fullmatch(cause) and not scan("", cause.encode()):
        return cause
    return WITHHELD_CAUSE
