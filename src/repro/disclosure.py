"""What a bundle must never carry: host paths, tracebacks and credential-looking strings.

A bundle travels to reviewers and archives, so it must not say where or by whom it was made, nor
hold a secret. :func:`scan` looks at the bytes of one bundle file and reports every hit as a
:class:`Disclosure`: the file, the kind, the byte offset and the name of the pattern that matched,
never the matched text, so that a report about a leak does not leak again.

``repro study`` scans the exact bytes it writes and ``repro verify`` the exact bytes it reads;
the hits in the derivation's input files (:func:`is_derivation_input`) decide the disclosure tier
on both sides, so a stored verdict that hides a hit fails re-derivation.

No pattern matches across a newline, so scanning a JSON Lines file line by line (with each line's
offset) gives the same hits as scanning the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Literal

from attrs import frozen

from repro import canonical
from repro.errors import BadInput
from repro.models import FrozenProtocol
from repro.serde import to_bytes, unstructure

__all__ = [
    "WITHHELD_CAUSE",
    "Disclosure",
    "Kind",
    "is_derivation_input",
    "refuse_disclosing_protocol",
    "scan",
    "short_cause",
]

Kind = Literal["host-path", "traceback", "credential"]


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
class _Pattern:
    name: str
    kind: Kind
    regex: re.Pattern[bytes]
    #: A second look at a match the regex alone cannot judge; None accepts every match.
    accept: Callable[[re.Match[bytes]], bool] | None = None
    #: Lower-case bytes of which the lower-cased data must hold one for a match to be possible;
    #: when none is there, the regex (slow where it has no rare literal to jump by) is not run.
    needles: tuple[bytes, ...] = ()


# Each regex begins with a literal where it can, because the engine then jumps from one
# occurrence of it to the next: a run file scans some fifty times faster than with a leading
# class or lookbehind. The character before the hit is checked by a lookbehind just after that
# literal. A hit that begins before its literal marks where it begins with a group named "at".

# Not in the middle of a word, a relative path or a URL: "src/usr/x", "a.tmp/x" and the path part
# of "https://host/home/x" all have a name character, a dot or a slash just before the root.
_NOT_INSIDE_A_PATH = rb"(?<![A-Za-z0-9_.~/\\-]/)"
# One character that can begin a file or directory name (bytes >= 0x80: UTF-8 names).
_NAME_START = rb"[A-Za-z0-9_.~$@%+=\x80-\xff-]"
# The top-level directories under which a host keeps user, temporary, mounted, installed or
# configuration files: any path below them names something on one machine.
_UNIX_ROOTS = rb"(?:home|Users|root|tmp|var|private|mnt|media|srv|opt|etc|usr|run|nix|Volumes)"


def _mixed_token(match: re.Match[bytes]) -> bool:
    # Keys are random: letters of both cases and digits. A long lower-case identifier that
    # happens to start with "sk-" (a protocol or participant ID) is not one.
    token = match.group("token")
    return (
        len(token) >= 32
        and re.search(rb"[0-9]", token) is not None
        and re.search(rb"[A-Z]", token) is not None
        and re.search(rb"[a-z]", token) is not None
    )


def _secret_value(match: re.Match[bytes]) -> bool:
    # "secret: redacted" and "token: none" are words, and "max_token_count: 128000" is a number,
    # not secrets; a value with a letter and a digit, or a long one, is taken for a secret.
    value = match.group("value")
    try:
        float(value)
    except ValueError:
        return re.search(rb"[0-9]", value) is not None or len(value) >= 16
    return False


_PATTERNS: tuple[_Pattern, ...] = (
    # An absolute POSIX path under a host root: reveals user names (/home/alice, /Users/alice),
    # working and temporary directories, mount points and install locations.
    _Pattern(
        "posix-host-root",
        "host-path",
        re.compile(rb"/" + _NOT_INSIDE_A_PATH + _UNIX_ROOTS + rb"/" + _NAME_START),
    ),
    # A Windows drive path. In JSON a backslash is written twice ("C:\\Users"), and an escaped
    # one again twice; a single backslash there only starts an escape such as \n or \u, so one
    # backslash followed by an escape letter is not taken for a path. Forward slashes are what
    # Python often prints.
    _Pattern(
        "windows-drive",
        "host-path",
        re.compile(
            rb":(?<=(?P<at>[A-Za-z]):)(?<![A-Za-z0-9_][A-Za-z]:)"
            rb"(?:(?:\\\\)+|\\(?![\"\\/bfnrtu])|/)" + _NAME_START
        ),
    ),
    # A file URL names a local path whatever its spelling. (Case-insensitive, the regex has no
    # literal to jump by: the needle spares it a crawl through every file without one.)
    _Pattern(
        "file-url",
        "host-path",
        re.compile(rb"(?i)f(?<![A-Za-z0-9+.-]f)ile:/[^\n\"' <>]"),
        needles=(b"file:/",),
    ),
    # The first line Python prints for an uncaught exception.
    _Pattern(
        "python-traceback-header",
        "traceback",
        re.compile(rb"Traceback \(most recent call last\)"),
    ),
    # A traceback frame line, also when the quotes are JSON-escaped; it carries a source path.
    _Pattern(
        "python-traceback-frame",
        "traceback",
        re.compile(rb'File \\?"[^"\n]{1,1024}?\\?", line [0-9]+'),
    ),
    # AWS access key IDs (long-term AKIA, temporary ASIA): 20 upper-case letters and digits.
    _Pattern(
        "aws-access-key-id",
        "credential",
        re.compile(rb"A(?<![A-Z0-9]A)[KS]IA[A-Z0-9]{16}(?![A-Z0-9])"),
    ),
    # The armour line of any PEM private key (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8). (Its
    # literal begins with a minus sign, which every negative number in a runs file holds: the
    # needle spares the regex a stop at each.)
    _Pattern(
        "pem-private-key",
        "credential",
        re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
        needles=(b"-----begin ",),
    ),
    # GitHub tokens: classic (ghp_, and gho_/ghu_/ghs_/ghr_ for OAuth, user, server, refresh)
    # and fine-grained personal access tokens.
    _Pattern(
        "github-token",
        "credential",
        re.compile(
            rb"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})"
        ),
    ),
    # OpenAI-style secret keys: "sk-" (or sk-proj-, sk-svcacct-, sk-admin-) and a long random
    # token.
    _Pattern(
        "openai-style-key",
        "credential",
        re.compile(
            rb"s(?<![A-Za-z0-9_-]s)k-(?:proj-|svcacct-|admin-)?(?P<token>[A-Za-z0-9_-]{20,})"
        ),
        _mixed_token,
    ),
    # Slack tokens: bot, user, app, config and refresh ("xoxb-", "xoxp-", ...).
    _Pattern(
        "slack-token",
        "credential",
        re.compile(rb"x(?<![A-Za-z0-9]x)ox[abposr]-[A-Za-z0-9-]{10,}"),
    ),
    # A secret-sounding name given a value: "password=...", "API_KEY: ...", JSON
    # "token":"...", AWS_SECRET_ACCESS_KEY=... (the hit begins at the secret-sounding word; the
    # name may go on with "_" and more words).
    _Pattern(
        "secret-assignment",
        "credential",
        re.compile(
            rb"(?i)(?<![A-Za-z0-9])(?:password|passwd|secret|api[_-]?key|token)"
            rb"(?:_[A-Za-z0-9]+)*\\?\"?[ \t]*[:=][ \t]*\\?[\"']?"
            rb"(?P<value>[^ \t\n\"'\\,;&<>]{6,})"
        ),
        _secret_value,
        needles=(b"passw", b"secret", b"api", b"token"),
    ),
)


def scan(file: str, data: bytes, start: int = 0) -> list[Disclosure]:
    """Every hit in ``data``, the bytes of bundle file ``file`` from byte ``start`` on, sorted by
    offset."""
    lowered = data.lower()
    hits = [
        Disclosure(
            file, start + match.start("at" if "at" in p.regex.groupindex else 0), p.kind, p.name
        )
        for p in _PATTERNS
        if not p.needles or any(n in lowered for n in p.needles)
        for match in p.regex.finditer(data)
        if p.accept is None or p.accept(match)
    ]
    return sorted(hits)


def is_derivation_input(file: str) -> bool:
    """Whether the derivations read ``file``: the protocol, the plan, the runs, the source
    ledger (which carries the facts gathered at run time) and the environment. The derived
    files repeat what these hold, and the tag files are checked by ``verify`` alone."""
    return file in (
        "data/protocol.json",
        "data/source-ledger.json",
        "data/environment.json",
    ) or file.startswith(("data/plans/", "data/runs/"))


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
    hits = scan("data/protocol.json", to_bytes(frozen_protocol))
    if not hits:
        return
    located = next(_locate(unstructure(frozen_protocol.protocol)), None)
    first = located[1] if located else hits[0]
    where = located[0] if located else f"byte {first.offset} of protocol.json"
    raise BadInput(
        f"protocol: would write {first.kind} content ({first.pattern}) into the bundle; keep "
        "host paths, tracebacks and credentials out of the protocol (host-specific adapter "
        f"options can be given with --option) @ {where}"
    )


#: What a cause code may look like: short, one line, no quotes, slashes or backslashes (so no
#: path and no traceback frame), e.g. ``environment-error:RuntimeError``.
_CAUSE_CODE = re.compile(r"[A-Za-z0-9_.:;,=+ -]{1,120}")
#: Recorded instead of an adapter's cause that is no short code or would disclose something.
WITHHELD_CAUSE = "cause-withheld"


def short_cause(cause: str) -> str:
    """``cause`` when it is a short code that discloses nothing, else :data:`WITHHELD_CAUSE`:
    an adapter's message never reaches the bundle as it is."""
    if _CAUSE_CODE.fullmatch(cause) and not scan("", cause.encode()):
        return cause
    return WITHHELD_CAUSE
