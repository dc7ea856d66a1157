"""Stage 2, integrity, cheapest first as bagit-python stages ``validate()``: the bag's layout,
its BagIt declaration, the manifests (each line well formed, each path safe), completeness
against the listing, every digest, and bag-info.txt."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from repro.bundle import layout
from repro.bundle.layout import CRATE, FIXED_PAYLOAD, MANIFEST, TAG_FILES, TAGMANIFEST
from repro.bundle.writer import BAGIT_TXT, MANIFEST_LINE
from repro.verify.findings import Finding, Location
from repro.verify.reader import BundleReader
from repro.verify.walk import Listing, unsafe_path

#: The payload files of every bundle besides those in data/plans/ and data/runs/ (which the seal
#: names): any other payload file is not part of a bundle, even when the manifest lists it.
_PAYLOAD = frozenset({*FIXED_PAYLOAD, CRATE})


#: Payload files only some bundles have: scores.json, in a bundle of a protocol with scoring;
#: contrasts.json, in one of a protocol that declares contrasts; rl-aggregates.json, in one of
#: a protocol with an ``rl`` section.
_OPTIONAL_PAYLOAD = frozenset({layout.SCORES, layout.CONTRASTS, layout.RL_AGGREGATES})


def _text_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` without their newlines, one at a time (a manifest may hold
    millions): a final newline ends the last line rather than starting an empty one, and empty
    text is one empty line."""
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            if start < len(text) or start == 0:
                yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def _manifest_line(name: str, number: int, line: str) -> tuple[str, str] | Finding:
    """The digest and path one manifest line gives, or the finding that it is malformed or
    names a path outside the bag."""
    match = MANIFEST_LINE.match(line)
    if not match:
        return Finding(
            "manifest-line-malformed",
            name,
            f"malformed manifest line {number}",
            "<sha256>  <path>",
            repr(line[:80]),
            Location(line=number),
        )
    digest, path = match.groups()
    unsafe = unsafe_path(path)
    if unsafe is not None:
        # Never looked up, let alone opened: only names the scan found are ever read.
        return Finding(
            "manifest-path-unsafe",
            name,
            f"unsafe path on line {number}: {unsafe}",
            "a relative path inside the bag",
            repr(path[:80]),
            Location(line=number),
        )
    return digest, path


def _parse_manifest(name: str, data: bytes, findings: list[Finding]) -> dict[str, str]:
    """The digest of each path a manifest lists; every line that is not a well-formed entry for
    a path inside the bag, every path listed twice and a missing final newline are named."""
    out: dict[str, str] = {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        findings.append(
            Finding(
                "manifest-not-utf8",
                name,
                "manifest is not UTF-8",
                "UTF-8 text",
                "undecodable bytes",
            )
        )
        return out
    for number, line in enumerate(_text_lines(text), 1):
        entry = _manifest_line(name, number, line)
        if isinstance(entry, Finding):
            findings.append(entry)
            continue
        digest, path = entry
        if path in out:
            findings.append(
                Finding(
                    "manifest-path-repeated",
                    name,
                    f"path listed twice (line {number})",
                    "once",
                    path,
                    Location(line=number),
                )
            )
        out[path] = digest
    if text and not text.endswith("\n"):
        findings.append(
            Finding(
                "manifest-no-final-newline",
                name,
                "manifest does not end with a newline",
                "final newline",
                "none",
            )
        )
    return out


def _check_tag_text(name: str, data: bytes, findings: list[Finding]) -> None:
    """A tag file is UTF-8 text (bagit.txt declares that encoding) without NUL bytes, which
    stock BagIt tools fail on or cut text at."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        findings.append(
            Finding(
                "tag-file-not-utf8",
                name,
                f"tag file is not UTF-8 (byte {exc.start})",
                "UTF-8 text, as bagit.txt declares",
                "undecodable bytes",
            )
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        findings.append(
            Finding(
                "tag-file-nul",
                name,
                f"tag file holds a NUL byte (byte {nul})",
                "text without NUL",
                "a NUL byte",
            )
        )


def _check_declaration(
    files: Mapping[str, int], read: BundleReader, findings: list[Finding]
) -> None:
    """bagit.txt is there and is the declaration a study writes."""
    if layout.BAGIT not in files:
        findings.append(
            Finding(
                "bagit-txt-missing", layout.BAGIT, "missing BagIt declaration", "present", "missing"
            )
        )
        return
    declaration = read.raw(layout.BAGIT)
    if declaration is not None and declaration != BAGIT_TXT:
        findings.append(
            Finding(
                "bagit-txt-content",
                layout.BAGIT,
                "BagIt declaration",
                BAGIT_TXT.decode().strip(),
                "other content",
            )
        )


def _check_layout(files: Mapping[str, int], findings: list[Finding]) -> None:
    """Every file is a tag file at the top, a signature file (``signatures/``, read by the
    signatures stage) or a payload file the bundle layout has a place for
    (:mod:`repro.bundle.layout`)."""
    for name in sorted(files):
        if ("/" not in name and name not in TAG_FILES) or (
            "/" in name and not name.startswith(layout.DATA) and not layout.is_signature(name)
        ):
            findings.append(
                Finding(
                    "outside-bag-layout", name, "file outside the bag layout", "absent", "present"
                )
            )
        elif (
            name.startswith(layout.DATA)
            and name not in _PAYLOAD
            and name not in _OPTIONAL_PAYLOAD
            and not layout.is_partitioned(name)
        ):
            findings.append(
                Finding(
                    "outside-bundle-layout",
                    name,
                    "payload file outside the bundle layout",
                    "absent",
                    "present",
                )
            )


def _check_completeness(
    manifest: str,
    listed: Mapping[str, str],
    actual: set[str],
    covered: tuple[str, ...] | None,
    findings: list[Finding],
) -> None:
    """What ``manifest`` lists against what the bag holds: every tag file the tag manifest
    must cover is listed, every listed file is there, every payload file is listed."""
    for name in covered or ():
        if name not in listed:
            findings.append(
                Finding(
                    "tag-file-not-listed", manifest, f"{name} not listed", "listed", "not listed"
                )
            )
    for name in sorted(set(listed) - actual):
        findings.append(
            Finding(
                "listed-but-missing",
                name,
                f"listed in {manifest} but missing",
                "present",
                "missing",
            )
        )
    if covered is None:
        for name in sorted(actual - set(listed)):
            findings.append(
                Finding("not-listed", name, f"not listed in {manifest}", "listed", "extra file")
            )


def _check_digests(
    manifest: str,
    listed: Mapping[str, str],
    actual: set[str],
    read: BundleReader,
    findings: list[Finding],
) -> None:
    """Each listed file the bag holds has the digest ``manifest`` gives."""
    for name in sorted(set(listed) & actual):
        digest = read.sha256(name)
        if digest is not None and digest != listed[name]:
            findings.append(
                Finding(
                    "digest-mismatch", name, f"sha256 differs from {manifest}", listed[name], digest
                )
            )


def _check_manifests(files: Mapping[str, int], read: BundleReader, findings: list[Finding]) -> None:
    """The payload manifest and the tag manifest: each parsed strictly, then completeness, then
    every digest."""
    for manifest, covered in (
        (MANIFEST, None),
        (TAGMANIFEST, (layout.BAGIT, layout.BAG_INFO, MANIFEST)),
    ):
        if manifest not in files:
            findings.append(
                Finding("manifest-missing", manifest, "missing manifest", "present", "missing")
            )
            continue
        data = read.raw(manifest)
        if data is None:
            continue
        listed = _parse_manifest(manifest, data, findings)
        if covered is None:
            actual = {n for n in files if n.startswith(layout.DATA)}
        else:
            actual = {n for n in covered if n in files}
        _check_completeness(manifest, listed, actual, covered, findings)
        _check_digests(manifest, listed, actual, read, findings)


def _check_bag_info(files: Mapping[str, int], read: BundleReader, findings: list[Finding]) -> None:
    """bag-info.txt is there, is UTF-8 text without NUL, and states the payload's Payload-Oxum."""
    if layout.BAG_INFO not in files:
        findings.append(
            Finding(
                "bag-info-missing", layout.BAG_INFO, "missing bag-info.txt", "present", "missing"
            )
        )
        return
    payload = [size for name, size in files.items() if name.startswith(layout.DATA)]
    oxum = f"{sum(payload)}.{len(payload)}"
    raw_info = read.raw(layout.BAG_INFO) or b""
    _check_tag_text(layout.BAG_INFO, raw_info, findings)
    info = raw_info.decode("utf-8", "replace").splitlines()
    stated = [line.split(":", 1)[1].strip() for line in info if line.startswith("Payload-Oxum:")]
    if stated != [oxum]:
        findings.append(
            Finding(
                "payload-oxum",
                layout.BAG_INFO,
                "Payload-Oxum",
                oxum,
                ", ".join(stated) or "missing",
            )
        )


def check_integrity(listing: Listing, read: BundleReader, findings: list[Finding]) -> None:
    """The BagIt layer, cheapest first: the declaration, the layout, the manifests
    (parsed, then completeness, then digests), bag-info.txt."""
    files = listing.sizes
    _check_declaration(files, read, findings)
    _check_layout(files, findings)
    _check_manifests(files, read, findings)
    _check_bag_info(files, read, findings)
