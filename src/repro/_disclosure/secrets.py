"""What no bundle file may hold: host paths, tracebacks and credential-looking strings, as
patterns of the engine (:data:`PATTERNS`), with the looks at a match a regex alone cannot
judge."""

from __future__ import annotations

import re
from collections.abc import Iterator

from repro._disclosure.engine import NAME_CHAR, NOT_AFTER_NAME, Pattern, View

_AWS_SECRET_LENGTH = 40
_RUN_OF_40 = b"." + b"a" * _AWS_SECRET_LENGTH


def _exact_runs_of_40(view: View, lo: int, hi: int) -> Iterator[tuple[int, int]]:
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

PATTERNS: tuple[Pattern, ...] = (
    # An absolute POSIX path, by its shape: a root not inside a relative path or a URL, and at
    # least two components ("/home/alice", "/scratch/run", "/proc/self"). Any such path names a
    # place on one machine. (The pattern keeps the name it had when it looked for a list of host
    # roots.)
    Pattern(
        "posix-host-root",
        "host-path",
        re.compile(rb"/(?<!" + NOT_AFTER_NAME + rb"/)" + NAME_CHAR + rb"{1,255}+/" + NAME_CHAR),
        reach=1 + 255 + 1 + 1,
        gate=b"/",
    ),
    # A home directory by tilde: "~/x", "~alice/x".
    Pattern(
        "tilde-path",
        "host-path",
        re.compile(
            rb"~(?<!" + NOT_AFTER_NAME + rb"~)(?:[A-Za-z_][A-Za-z0-9_.-]{0,31}+)?/" + NAME_CHAR
        ),
        reach=1 + 32 + 1 + 1,
        gate=b"~",
    ),
    # A UNC path, "\\server\share", raw or JSON-escaped ("\\\\server\\share"). As for drive
    # paths, a single backslash followed by a JSON escape letter only starts an escape, as in a
    # literal "\n" written before a newline escape ("\\n.\n").
    Pattern(
        "unc-path",
        "host-path",
        re.compile(
            rb"\\\\(?<!" + NOT_AFTER_NAME + rb"\\\\)"
            rb"(?:\\\\[A-Za-z0-9_.$\x80-\xff-]{1,255}+\\\\"
            rb"|[A-Za-z0-9_.$\x80-\xff-]{1,255}+\\(?![\"\\/bfnrtu]))" + NAME_CHAR
        ),
        reach=4 + 255 + 2 + 1,
        gate=b"\\",
    ),
    # A Windows drive path. In JSON a backslash is written twice ("C:\\Users"), and an escaped
    # one again twice; a single backslash there only starts an escape such as \n or \u, so one
    # backslash followed by an escape letter is not taken for a path. Forward slashes are what
    # Python often prints. (The regex starts at the colon, a literal to jump by; the hit at the
    # drive letter before it.)
    Pattern(
        "windows-drive",
        "host-path",
        re.compile(
            rb":(?<=(?P<at>[A-Za-z]):)(?<![A-Za-z0-9_][A-Za-z]:)"
            rb"(?:(?:\\\\){1,4}+|\\(?![\"\\/bfnrtu])|/)" + NAME_CHAR
        ),
        reach=1 + 8 + 1,
    ),
    # A file URL names a local path whatever its spelling. (Case-insensitive, the regex has no
    # literal to jump by: it runs only near a "file:/" in the lower-cased data.)
    Pattern(
        "file-url",
        "host-path",
        re.compile(rb"(?i)f(?<![A-Za-z0-9+.-]f)ile:/[^\n\"' <>]"),
        reach=7,
        needles=((b"file:/", ()),),
        folded=True,
        gate=b"/",
    ),
    # The first line Python prints for an uncaught exception.
    Pattern(
        "python-traceback-header",
        "traceback",
        re.compile(rb"Traceback \(most recent call last\)"),
        reach=33,
        gate=b"(",
    ),
    # A traceback frame line, also when the quotes are JSON-escaped; it carries a source path.
    Pattern(
        "python-traceback-frame",
        "traceback",
        re.compile(rb'File \\?"[^"\n]{1,1024}?\\?", line [0-9]{1,9}'),
        reach=7 + 1024 + 9 + 9,
        gate=b"F",
    ),
    # AWS access key IDs (long-term AKIA, temporary ASIA): 20 upper-case letters and digits.
    Pattern(
        "aws-access-key-id",
        "credential",
        re.compile(rb"A(?<![A-Z0-9]A)[KS]IA[A-Z0-9]{16}(?![A-Z0-9])"),
        reach=20 + 1,
        gate=b"I",
    ),
    # A bare AWS secret access key: exactly 40 base64 characters, mixing cases and digits.
    Pattern(
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
    Pattern(
        "pem-private-key",
        "credential",
        re.compile(rb"-----BEGIN (?:[A-Z0-9]{1,32}+ ){0,4}PRIVATE KEY-----"),
        reach=11 + 4 * 33 + 16,
        needles=((b"-----BEGIN ", ()),),
        gate=b"G",
    ),
    # GitHub tokens: classic (ghp_, and gho_/ghu_/ghs_/ghr_ for OAuth, user, server, refresh)
    # and fine-grained personal access tokens.
    Pattern(
        "github-token",
        "credential",
        re.compile(
            rb"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,255}+|ithub_pat_[A-Za-z0-9_]{22,255}+)"
        ),
        reach=11 + 255,
    ),
    # OpenAI-style secret keys: "sk-" (or sk-proj-, sk-svcacct-, sk-admin-) and a long random
    # token.
    Pattern(
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
    Pattern(
        "slack-token",
        "credential",
        re.compile(rb"x(?<![A-Za-z0-9]x)ox[abposr]-[A-Za-z0-9-]{10,255}+"),
        reach=5 + 255,
        gate=b"x",
    ),
    # A JSON Web Token: a base64url header and payload, both JSON objects (so "eyJ", the
    # encoding of '{"'), and a signature.
    Pattern(
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
    Pattern(
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
    Pattern(
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
