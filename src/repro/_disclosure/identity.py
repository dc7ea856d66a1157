"""Who and where: the identity patterns, looked for only in the files that record the
environment a study ran in (:data:`IDENTITY_FILES`), and which patterns each bundle file gets
(:func:`prepared_for`)."""

from __future__ import annotations

import re

from repro import _layout as layout
from repro._disclosure.engine import Judge, Pattern, prepared
from repro._disclosure.secrets import PATTERNS

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
_IDENTITY: tuple[tuple[str, bytes, Judge, int, bytes], ...] = (
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


def identity_patterns(per_line: bool) -> tuple[Pattern, ...]:
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
            Pattern(name, "identity", re.compile(regex), reach=reach, judge=judge, gate=gate)
        )
    return tuple(out)


PREPARED = prepared(PATTERNS)
#: The files that record where, when and how a study ran (and so must name no one and no
#: machine), by bundle name, and what is looked for in each.
IDENTITY_FILES = {
    layout.ENVIRONMENT: prepared(PATTERNS + identity_patterns(per_line=False)),
    layout.BAG_INFO: prepared(PATTERNS + identity_patterns(per_line=True)),
}


def prepared_for(file: str) -> tuple[tuple[Pattern, str | int], ...]:
    """What is looked for in bundle file ``file``."""
    return IDENTITY_FILES.get(file, PREPARED)
