"""How the BagIt stage reads a bag's tag files as text: the declaration (bagit.txt), the
encoding it declares, the lines of a manifest and of fetch.txt, and bag-info.txt's metadata
elements, as BagIt 1.0 (RFC 8493) and its draft 0.97 write them. Each function reads only what
it is given and opens nothing: it returns what the text says, and adds a
:class:`~repro.verify._findings.Finding` for each fault to ``findings`` (a bag that does not
verify) and for each thing BagIt tolerates to ``warnings``."""

from __future__ import annotations

import codecs
import itertools
import re
from collections.abc import Iterator

from attrs import frozen

from repro import _layout as layout
from repro._layout import unsafe_path
from repro.verify._findings import Finding, Location

__all__ = [
    "ALGORITHMS",
    "DEFAULT",
    "FETCH",
    "OLDER_VERSIONS",
    "VERSIONS",
    "Declaration",
    "bag_path",
    "declaration",
    "decoded",
    "elements",
    "fetch_line",
    "lines",
    "manifest_line",
    "out_of_bag",
]

#: The manifest algorithms verify checks, by the name a manifest's file name gives (which is
#: hashlib's), with the hex digits of their digests: RFC 8493's own (md5, sha1, sha256, sha512)
#: and SHA-2's other two, which bags in the wild use (the conformance suite's sha224).
ALGORITHMS = {"md5": 32, "sha1": 40, "sha224": 56, "sha256": 64, "sha384": 96, "sha512": 128}

#: The versions whose rules verify applies: RFC 8493's and the last draft's.
VERSIONS = ("1.0", "0.97")

#: Earlier drafts, whose bags verify reads by the rules of 0.97, saying so in a warning (the
#: conformance suite labels their bags valid); what those drafts did otherwise is not checked.
OLDER_VERSIONS = ("0.93", "0.94", "0.95", "0.96")

#: The tag file that lists files to fetch before the bag is complete (RFC 8493 section 2.2.3).
FETCH = "fetch.txt"

_BOM = codecs.BOM_UTF8

#: Where a line of a tag file ends: LF, CR or CRLF, as RFC 8493 lets each tag file end its lines.
_LINE_END = re.compile(r"\r\n|\r|\n")

_VERSION_LINE = re.compile(r"^BagIt-Version: (\S(?:.*\S)?)$")
_ENCODING_LINE = re.compile(r"^Tag-File-Character-Encoding: (\S(?:.*\S)?)$")
_VERSION_LABEL = "BagIt-Version: "
_ENCODING_LABEL = "Tag-File-Character-Encoding: "

#: A manifest line as RFC 8493 section 2.1.3 writes it: a hex digest (either case), one or more
#: spaces or tabs, then the path (which may hold spaces).
_MANIFEST_LINE = re.compile(r"^([0-9A-Fa-f]+)([ \t]+)(.*)$")

#: A fetch.txt line (RFC 8493 section 2.2.3): a URL, its length in octets or "-", the path.
_FETCH_LINE = re.compile(r"^(\S+)[ \t]+([0-9]+|-)[ \t]+(.+)$")
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

#: The characters BagIt 1.0 percent-encodes in a path (and only those).
_PERCENT = re.compile(r"%(0[Aa]|0[Dd]|25)")
_DECODED = {"0a": "\n", "0d": "\r", "25": "%"}

#: Python's text codecs that are no character set of RFC 2978's registry: names a declaration
#: cannot mean (and punycode decodes in more than linear time).
_NOT_CHARSETS = frozenset({"idna", "punycode", "unicode-escape", "raw-unicode-escape", "undefined"})

#: A Windows drive, which a Windows reader takes as an absolute path.
_DRIVE = re.compile(r"^[A-Za-z]:")


@frozen
class Declaration:
    """What bagit.txt declares: the BagIt version and the encoding of the other tag files."""

    version: str
    encoding: str

    @property
    def draft(self) -> bool:
        """Whether the bag is read by the rules of the drafts before 1.0 (0.97's), which wrote
        paths without percent-encoding, allowed whitespace around a metadata label's colon and
        a path listed twice with the same digest."""
        return self.version != "1.0"


#: What a bag is read as when its declaration is missing or says nothing verify can use (each
#: named): the version and encoding RFC 8493 recommends.
DEFAULT = Declaration("1.0", "UTF-8")


def lines(text: str) -> Iterator[str]:
    """The lines of a tag file's text, one at a time (a manifest may hold millions), each
    without its LF, CR or CRLF; a last line may end without one, and text that ends with one
    ends with that line."""
    start = 0
    for end in _LINE_END.finditer(text):
        yield text[start : end.start()]
        start = end.end()
    if start < len(text):
        yield text[start:]


def _not_utf8(name: str, start: int) -> Finding:
    if name.startswith(("manifest-", "tagmanifest-")):
        return Finding(
            "manifest-not-utf8", name, "manifest is not UTF-8", "UTF-8 text", "undecodable bytes"
        )
    return Finding(
        "tag-file-not-utf8",
        name,
        f"tag file is not UTF-8 (byte {start})",
        "UTF-8 text, as bagit.txt declares",
        "undecodable bytes",
    )


def declaration(data: bytes, findings: list[Finding], warnings: list[Finding]) -> Declaration:
    """What bagit.txt declares, read as RFC 8493 section 2.1.1 writes it: UTF-8 without a
    byte-order mark, exactly two lines, ``BagIt-Version: M.N`` then
    ``Tag-File-Character-Encoding: ENCODING``, one space after each colon and none elsewhere (so
    ``BagIt-Version : 1.0`` is a fault). A version verify does not read is named (an earlier
    draft's is a warning), and so is an encoding Python does not know; what cannot be read is
    taken as :data:`DEFAULT`."""
    name = layout.BAGIT
    if data.startswith(_BOM):
        findings.append(
            Finding(
                "bagit-txt-bom",
                name,
                "BagIt declaration begins with a byte-order mark",
                "UTF-8 without a byte-order mark",
                "a byte-order mark",
            )
        )
        data = data[len(_BOM) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        findings.append(_not_utf8(name, exc.start))
        return DEFAULT
    found = list(itertools.islice(lines(text), 3))
    if len(found) != 2:
        findings.append(
            Finding(
                "bagit-txt-content",
                name,
                "BagIt declaration",
                f"two lines: {_VERSION_LABEL}M.N, {_ENCODING_LABEL}ENCODING",
                f"{len(found)} line(s)" if len(found) < 3 else "more than two lines",
            )
        )
        return DEFAULT
    version, encoding = _VERSION_LINE.match(found[0]), _ENCODING_LINE.match(found[1])
    for number, (match, form) in enumerate(
        ((version, f"{_VERSION_LABEL}M.N"), (encoding, f"{_ENCODING_LABEL}ENCODING")), 1
    ):
        if match is None:
            findings.append(
                Finding(
                    "bagit-txt-content",
                    name,
                    f"BagIt declaration line {number}",
                    form,
                    repr(found[number - 1][:80]),
                    Location(line=number),
                )
            )
    if version is None or encoding is None:
        return DEFAULT
    return Declaration(
        _version(version.group(1), findings, warnings), _encoding(encoding.group(1), findings)
    )


def _version(version: str, findings: list[Finding], warnings: list[Finding]) -> str:
    """The version a bag is read by: its own, 0.97 for an earlier draft's (a warning), 1.0 for
    one verify does not read (named)."""
    if version in VERSIONS:
        return version
    if version in OLDER_VERSIONS:
        warnings.append(
            Finding(
                "bagit-version-older",
                layout.BAGIT,
                f"BagIt {version}, a draft before 0.97: read by the rules of 0.97",
                " or ".join(VERSIONS),
                version,
            )
        )
        return "0.97"
    findings.append(
        Finding(
            "bagit-version",
            layout.BAGIT,
            "a BagIt version verify does not read",
            f"{' or '.join(VERSIONS)} (or a draft from {OLDER_VERSIONS[0]})",
            version,
        )
    )
    return DEFAULT.version


def _charset(encoding: str) -> bool:
    """Whether ``encoding`` is a character set Python decodes bytes from: not a bytes-to-bytes
    codec (zlib, base64), nor one of Python's own text codecs that are no character set."""
    try:
        if codecs.lookup(encoding).name in _NOT_CHARSETS:
            return False
        b"x".decode(encoding)
    except LookupError:
        return False
    except (UnicodeError, ValueError):
        pass  # a character set that cannot decode this one byte: still one
    return True


def _encoding(encoding: str, findings: list[Finding]) -> str:
    """The declared encoding, when it is a character set Python knows (else named, and UTF-8
    read)."""
    if not _charset(encoding):
        findings.append(
            Finding(
                "bagit-encoding-unknown",
                layout.BAGIT,
                "Tag-File-Character-Encoding names an encoding verify does not know",
                "an encoding of the IANA registry (RFC 2978), UTF-8 preferred",
                encoding,
            )
        )
        return DEFAULT.encoding
    return encoding


def decoded(
    name: str, data: bytes, encoding: str, findings: list[Finding], warnings: list[Finding]
) -> str | None:
    """A tag file's text in the encoding bagit.txt declares, or None (named) when its bytes are
    not in it. A UTF-8 file that begins with a byte-order mark is read past it (a warning: RFC
    8493 forbids one in bagit.txt, which is read otherwise); a UTF-16 or UTF-32 file without
    one is big-endian (RFC 2781). A NUL character is named: stock BagIt tools fail on it or cut
    the text there."""
    codec = codecs.lookup(encoding).name
    if codec == "utf-8" and data.startswith(_BOM):
        warnings.append(
            Finding(
                "bagit-tag-file-bom",
                name,
                "tag file begins with a byte-order mark: read past it",
                "UTF-8 without a byte-order mark",
                "a byte-order mark",
            )
        )
        data = data[len(_BOM) :]
    elif codec in ("utf-16", "utf-32") and not data.startswith(
        (codecs.BOM_UTF32_BE, codecs.BOM_UTF32_LE)
        if codec == "utf-32"
        else (codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE)
    ):
        codec += "-be"
    try:
        text = data.decode(codec)
    except (UnicodeError, ValueError) as exc:
        start = getattr(exc, "start", 0)
        if codec == "utf-8":
            findings.append(_not_utf8(name, start))
        else:
            findings.append(
                Finding(
                    "tag-file-not-decodable",
                    name,
                    f"tag file is not {encoding} (byte {start})",
                    f"{encoding} text, as bagit.txt declares",
                    "undecodable bytes",
                )
            )
        return None
    nul = text.find("\x00")
    if nul >= 0:
        findings.append(
            Finding(
                "tag-file-nul",
                name,
                f"tag file holds a NUL character (character {nul})",
                "text without NUL",
                "a NUL character",
            )
        )
    return text


def out_of_bag(path: str, *, controls: bool = False) -> str | None:
    """Why a path a manifest or fetch.txt gives is not a place inside the bag on every system,
    or None: what :func:`~repro._layout.unsafe_path` refuses (a backslash among it, which a
    Windows reader takes as a separator), a path a shell reads as a home directory (``~``,
    ``~user``) and one a Windows reader reads as a drive (``C:``). ``controls``: whether a
    control character is a name's own (a BagIt 1.0 path's, percent-encoded)."""
    why = unsafe_path(path, controls=controls)
    if why is not None:
        return why
    if path.startswith("~"):
        return "home directory shortcut (~)"
    if _DRIVE.match(path):
        return "Windows drive"
    return None


def bag_path(
    name: str,
    number: int,
    raw: str,
    declared: Declaration,
    findings: list[Finding],
    warnings: list[Finding],
) -> str | None:
    """The path line ``number`` of tag file ``name`` gives, as the bag names the file: a BagIt
    1.0 path percent-decoded (``%0A``, ``%0D``, ``%25``, and only those), a leading ``./`` read
    past (a warning); None (named) when it leaves the bag (:func:`out_of_bag`). A control
    character is the name's own (BagIt 1.0 percent-encodes a line feed). Never looked up, let
    alone opened: only names the scan found are ever read."""
    path = raw if declared.draft else _PERCENT.sub(lambda m: _DECODED[m.group(1).lower()], raw)
    if path.startswith("./"):
        warnings.append(
            Finding(
                "bagit-path-dot-slash",
                name,
                f"line {number} begins its path with './': read without it",
                "a path relative to the bag, without './'",
                repr(raw[:80]),
                Location(line=number),
            )
        )
        path = path[2:]
    why = out_of_bag(path, controls=True)
    if why is None:
        return path
    code = "fetch-path-unsafe" if name == FETCH else "manifest-path-unsafe"
    findings.append(
        Finding(
            code,
            name,
            f"unsafe path on line {number}: {why}",
            "a relative path inside the bag",
            repr(raw[:80]),
            Location(line=number),
        )
    )
    return None


def manifest_line(
    name: str,
    number: int,
    line: str,
    algorithm: str,
    declared: Declaration,
    findings: list[Finding],
    warnings: list[Finding],
) -> tuple[str, str] | None:
    """The digest (in lowercase) and path a manifest line gives, read as RFC 8493 section 2.1.3
    writes it: a digest of the algorithm's length in hex of either case, one or more spaces or
    tabs, the path (:func:`bag_path`). A single space then ``*`` is md5sum's binary-mode flag,
    read past (a warning). None when the line is malformed or its path unsafe (each named)."""
    match = _MANIFEST_LINE.match(line)
    if match is None or len(match.group(1)) != ALGORITHMS[algorithm] or not match.group(3):
        findings.append(
            Finding(
                "manifest-line-malformed",
                name,
                f"malformed manifest line {number}",
                f"<{algorithm} digest> <path>",
                repr(line[:80]),
                Location(line=number),
            )
        )
        return None
    digest, separator, raw = match.groups()
    if separator == " " and raw.startswith("*"):
        warnings.append(
            Finding(
                "bagit-md5sum-binary-flag",
                name,
                f"line {number} marks its path with md5sum's binary-mode flag '*': read without it",
                "<digest> <path>",
                repr(line[:80]),
                Location(line=number),
            )
        )
        raw = raw[1:]
    path = bag_path(name, number, raw, declared, findings, warnings)
    return None if path is None else (digest.lower(), path)


def fetch_line(
    number: int,
    line: str,
    declared: Declaration,
    findings: list[Finding],
    warnings: list[Finding],
) -> str | None:
    """The path a fetch.txt line lists (RFC 8493 section 2.2.3: a URL with its scheme, the
    length in octets or ``-``, the path), or None when the line is malformed or its path unsafe
    (each named). The URL is read, never fetched."""
    match = _FETCH_LINE.match(line)
    if match is None or not _URL_SCHEME.match(match.group(1)):
        findings.append(
            Finding(
                "fetch-line-malformed",
                FETCH,
                f"malformed fetch line {number}",
                "<url> <length or -> <path>",
                repr(line[:80]),
                Location(line=number),
            )
        )
        return None
    return bag_path(FETCH, number, match.group(3), declared, findings, warnings)


def elements(
    text: str, declared: Declaration, findings: list[Finding]
) -> Iterator[tuple[str, str]]:
    """bag-info.txt's metadata elements, label and value, in order (RFC 8493 section 2.2.2): a
    label without a colon that neither starts nor ends with whitespace, a colon, one space or
    tab, the value; a line that starts with a space or tab continues the value before it. The
    drafts before 1.0 allow whitespace around the colon. Each other line is named."""
    label: str | None = None
    value: list[str] = []
    for number, line in enumerate(lines(text), 1):
        if line[:1] in (" ", "\t") and label is not None:
            value.append(line.strip(" \t"))
            continue
        if label is not None:
            yield label, " ".join(value)
            label = None
        element = _element(line, declared)
        if element is None:
            findings.append(
                Finding(
                    "bag-info-line-malformed",
                    layout.BAG_INFO,
                    f"malformed metadata line {number}",
                    "LABEL: VALUE, or a continuation indented by whitespace",
                    repr(line[:80]),
                    Location(line=number),
                )
            )
            continue
        label, value = element[0], [element[1]]
    if label is not None:
        yield label, " ".join(value)


def _element(line: str, declared: Declaration) -> tuple[str, str] | None:
    """The label and value of a line that starts a metadata element, or None."""
    label, colon, value = line.partition(":")
    if not colon:
        return None
    if declared.draft:
        label, value = label.strip(" \t"), value.strip(" \t")
    elif label != label.strip(" \t") or (value and value[0] not in " \t"):
        return None
    else:
        value = value[1:]
    return (label, value) if label else None
