"""Stage 2, integrity: the bag, cheapest first as bagit-python stages ``validate()``: its
declaration, its layout, fetch.txt, each manifest (each line well formed, each path safe; then
completeness against the listing; then every digest), and bag-info.txt.

One stage, read two ways. A repro bundle's bag (:func:`check_integrity`) is read as exactly what
a study writes: the declaration's bytes, one payload and one tag manifest of sha256 in repro's
line form, the bundle's layout, bag-info.txt with its Payload-Oxum. Any other bag
(:func:`check_bag`, ``repro verify --bagit-only``) is read as BagIt 1.0 (RFC 8493) and 0.97
allow (:mod:`~repro.verify._tagfiles`): the encoding bagit.txt declares, manifests of every
algorithm verify knows, each listing every payload file, fetch.txt, tag directories, and, as a
warning, what BagIt tolerates but a careful bag avoids (a leading ``./``, names one file on a
case-insensitive file system, a path listed twice with one digest in a draft's bag). Where the
two readings differ, the bundle's is the stricter: a bundle holds nothing a bag only
tolerates."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping

from repro import _layout as layout
from repro._layout import (
    BAGIT_TXT,
    CRATE,
    DATA,
    FIXED_PAYLOAD,
    MANIFEST,
    MANIFEST_LINE,
    TAG_FILES,
    TAGMANIFEST,
)
from repro.verify import _tagfiles as tagfiles
from repro.verify._findings import Finding, Location
from repro.verify._profile import check_profile
from repro.verify._reader import BundleReader, Reads
from repro.verify._tagfiles import ALGORITHMS, DEFAULT, FETCH, Declaration
from repro.verify._walk import Listing, folded

__all__ = ["TOLERATED", "bag_reads", "check_bag", "check_integrity"]

#: The payload files of every bundle besides those in data/plans/ and data/runs/ (which the seal
#: names): any other payload file is not part of a bundle, even when the manifest lists it.
_PAYLOAD = frozenset({*FIXED_PAYLOAD, CRATE})


#: Payload files only some bundles have: scores.json, in a bundle of a protocol with scoring;
#: contrasts.json, in one of a protocol that declares contrasts; rl-aggregates.json, in one of
#: a protocol with an ``rl`` section; continuation.json, in one of a study continued from an
#: interrupted one.
_OPTIONAL_PAYLOAD = frozenset(
    {layout.SCORES, layout.CONTRASTS, layout.RL_AGGREGATES, layout.CONTINUATION}
)

#: What the tree walk names that a bag may hold: an empty directory, which no manifest can list
#: (RFC 8493 section 2.1.3) and a study never writes. A warning in a bag, a fault in a bundle.
TOLERATED = frozenset({"empty-directory"})

#: A manifest's name at the bag's top: ``manifest-ALG.txt`` or ``tagmanifest-ALG.txt``.
_MANIFEST_NAME = re.compile(r"^(tag)?manifest-([^/]+)\.txt$")

#: Files operating systems make for themselves, which a bag's payload is better without.
_SYSTEM_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini", "ehthumbs.db"})


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
    """The digest and path one line of a bundle's manifest gives (repro's form: a lowercase
    sha256, two spaces, a path without whitespace), or the finding that it is malformed or
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
    unsafe = tagfiles.out_of_bag(path)
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


def _check_tag_text(name: str, data: bytes, findings: list[Finding]) -> None:
    """A bundle's tag file is UTF-8 text (bagit.txt declares that encoding) without NUL bytes,
    which stock BagIt tools fail on or cut text at."""
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


def _check_layout(files: Mapping[str, int], findings: list[Finding]) -> None:
    """Every file of a bundle is a tag file at the top, a signature file (``signatures/``, read
    by the signatures stage) or a payload file the bundle layout has a place for
    (:mod:`repro._layout`)."""
    for name in sorted(files):
        if ("/" not in name and name not in TAG_FILES) or (
            "/" in name and not name.startswith(DATA) and not layout.is_signature(name)
        ):
            findings.append(
                Finding(
                    "outside-bag-layout", name, "file outside the bag layout", "absent", "present"
                )
            )
        elif (
            name.startswith(DATA)
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


def _manifests(names: Iterable[str]) -> dict[str, tuple[bool, str]]:
    """The manifests at a bag's top, by name: whether each is a tag manifest, and its
    algorithm."""
    found = {}
    for name in names:
        match = _MANIFEST_NAME.match(name)
        if match is not None:
            found[name] = (match.group(1) is not None, match.group(2))
    return found


def bag_reads(names: Iterable[str]) -> Reads:
    """What a reader of a bag that is not read as a bundle reads: the digests its manifests'
    algorithms need, the tag files the stage parses held whole (so bounded by
    ``max_held_file_bytes``), no disclosure scan (which only a bundle's tiers judge)."""
    manifests = {
        name: algorithm
        for name, (_, algorithm) in _manifests(names).items()
        if algorithm in ALGORITHMS
    }
    return Reads(
        held=frozenset({layout.BAGIT, layout.BAG_INFO, FETCH, *manifests}),
        algorithms=frozenset(manifests.values()) - {"sha256"},
        scan=False,
    )


class _Bag:
    """One check of one bag: what it has read so far, and the findings and warnings it makes.
    ``bundle``: whether the bag is read as a repro bundle's."""

    def __init__(
        self, listing: Listing, read: BundleReader, findings: list[Finding], bundle: bool
    ) -> None:
        self.files = listing.sizes
        self.entries = listing.entries
        self.read = read
        self.findings = findings
        self.warnings: list[Finding] = []
        self.bundle = bundle
        self.declared = DEFAULT
        self.payload = {name for name in self.files if name.startswith(DATA)}
        self.tags = set(self.files) - self.payload
        #: In a bag, each name a payload file has once folded (see
        #: :func:`~repro.verify._walk.folded`), with the files that have it; a bundle's names are
        #: read as they are.
        self.folds: dict[str, list[str]] = defaultdict(list)
        for name in sorted(self.payload) if not bundle else ():
            self.folds[folded(name)].append(name)
        #: The payload files fetch.txt lists that the bag lacks (each named once).
        self.unfetched: set[str] = set()

    def check(self) -> None:
        """The stages, cheapest first."""
        self.declaration()
        fetched: set[str] = set()
        if self.bundle:
            _check_layout(self.files, self.findings)
        else:
            self.bag_layout()
            fetched = self.fetch()
        for name, tag, algorithm, covered in self.manifests():
            data = self.read.raw(name)
            if data is None:
                continue
            listed = self.listed(name, data, algorithm)
            resolved = self.resolve(listed, tag, covered)
            self.completeness(name, listed, resolved, tag, covered)
            if not (tag or self.bundle):
                self.fetched_listed(name, listed, fetched)
            self.digests(name, algorithm, listed, resolved)
        self.bag_info()

    # ----------------------------------------------------------------------- declaration

    def declaration(self) -> None:
        """bagit.txt is there, and is the declaration a study writes (a bundle) or one BagIt
        1.0 or 0.97 reads (a bag: :func:`~repro.verify._tagfiles.declaration`)."""
        if layout.BAGIT not in self.files:
            self.findings.append(
                Finding(
                    "bagit-txt-missing",
                    layout.BAGIT,
                    "missing BagIt declaration",
                    "present",
                    "missing",
                )
            )
            return
        data = self.read.raw(layout.BAGIT)
        if data is None:
            return
        if not self.bundle:
            self.declared = tagfiles.declaration(data, self.findings, self.warnings)
        elif data != BAGIT_TXT:
            self.findings.append(
                Finding(
                    "bagit-txt-content",
                    layout.BAGIT,
                    "BagIt declaration",
                    BAGIT_TXT.decode().strip(),
                    "other content",
                )
            )

    # ----------------------------------------------------------------------------- layout

    def bag_layout(self) -> None:
        """A bag has its payload directory (it may be empty); every other file is a tag file,
        in a tag directory or not. Files an operating system makes for itself, and names that
        are one file on a case-insensitive or normalizing file system, are warned of."""
        directory = DATA.rstrip("/")
        if directory not in self.entries or directory in self.files:
            self.findings.append(
                Finding(
                    "payload-directory-missing",
                    directory,
                    "no payload directory",
                    "a directory data/",
                    "a file" if directory in self.files else "missing",
                )
            )
        for name in sorted(self.payload):
            if name.rsplit("/", 1)[-1] in _SYSTEM_FILES:
                self.warnings.append(
                    Finding(
                        "bagit-system-file",
                        name,
                        "a file an operating system makes for itself, in the payload",
                        "the payload's own files",
                        name.rsplit("/", 1)[-1],
                    )
                )
        for names in self.folds.values():
            for other in names[1:]:
                self.warnings.append(self.collision(other, names[0]))

    @staticmethod
    def collision(name: str, other: str) -> Finding:
        """The warning that ``name`` and ``other`` name one file where names are compared
        case-folded and normalized (macOS, Windows)."""
        return Finding(
            "bagit-name-collision",
            name,
            f"the same name as {other!r} once case-folded and NFC-normalized: one file on a "
            "case-insensitive or normalizing file system",
            "names that differ there",
            other,
        )

    # ------------------------------------------------------------------------------ fetch

    def fetch(self) -> set[str]:
        """The payload paths fetch.txt lists (RFC 8493 section 2.2.3). verify fetches nothing:
        a listed file the bag lacks leaves it incomplete, and is named; so is a listed path
        outside the payload (fetch.txt lists no tag file)."""
        if FETCH not in self.files:
            return set()
        data = self.read.raw(FETCH)
        text = None if data is None else self.decoded(FETCH, data)
        if text is None:
            return set()
        paths = set()
        for number, line in enumerate(tagfiles.lines(text), 1):
            path = tagfiles.fetch_line(number, line, self.declared, self.findings, self.warnings)
            if path is None:
                continue
            if not path.startswith(DATA):
                self.findings.append(
                    Finding(
                        "fetch-path-outside-payload",
                        FETCH,
                        f"line {number} lists a path outside the payload directory",
                        "a path under data/",
                        repr(path[:80]),
                        Location(line=number),
                    )
                )
            elif self.present(path) is None and path not in self.unfetched:
                self.unfetched.add(path)
                self.findings.append(
                    Finding(
                        "fetch-file-missing",
                        path,
                        "listed in fetch.txt and not in the bag: the bag is incomplete (verify "
                        "fetches nothing)",
                        "present",
                        "missing",
                        Location(line=number),
                    )
                )
            paths.add(path)
        return paths

    def fetched_listed(self, name: str, listed: Mapping[str, str], fetched: set[str]) -> None:
        """Every path fetch.txt lists is listed in the payload manifest ``name`` too."""
        for path in sorted(fetched - set(listed)):
            self.findings.append(
                Finding(
                    "fetch-path-not-listed",
                    path,
                    f"listed in fetch.txt, not in {name}",
                    "listed in every payload manifest",
                    "not listed",
                )
            )

    # -------------------------------------------------------------------------- manifests

    def manifests(self) -> Iterator[tuple[str, bool, str, tuple[str, ...] | None]]:
        """Each manifest to check, payload manifests first: its name, whether it is a tag
        manifest, its algorithm, and for a bundle's tag manifest the tag files it must list. A
        bundle has one of each, of sha256; a bag one payload manifest at least, of any
        algorithm verify knows (one of another is named), and tag manifests if it likes."""
        if self.bundle:
            wanted = [
                (MANIFEST, False, "sha256", None),
                (TAGMANIFEST, True, "sha256", (layout.BAGIT, layout.BAG_INFO, MANIFEST)),
            ]
        else:
            found = _manifests(self.tags)
            wanted = [
                (name, tag, algorithm, None)
                for name, (tag, algorithm) in sorted(
                    found.items(), key=lambda kv: (kv[1][0], kv[0])
                )
            ]
            if not any(not tag for tag, _ in found.values()):
                wanted.insert(0, ("manifest-<algorithm>.txt", False, "", None))
        for name, tag, algorithm, covered in wanted:
            if name not in self.files:
                self.findings.append(
                    Finding("manifest-missing", name, "missing manifest", "present", "missing")
                )
            elif algorithm not in ALGORITHMS:
                self.findings.append(
                    Finding(
                        "manifest-algorithm",
                        name,
                        "manifest of an algorithm verify does not check",
                        ", ".join(ALGORITHMS),
                        algorithm,
                    )
                )
            else:
                yield name, tag, algorithm, covered

    def listed(self, name: str, data: bytes, algorithm: str) -> dict[str, str]:
        """The digest of each path a manifest lists. A path listed twice is named, but in a
        draft's bag (before 1.0) with the same digest both times, which is a warning."""
        out: dict[str, str] = {}
        for number, digest, path in self.lines(name, data, algorithm):
            if path in out:
                repeated = self.findings
                code, what = "manifest-path-repeated", f"path listed twice (line {number})"
                if self.declared.draft and out[path] == digest:
                    repeated = self.warnings
                    code = "bagit-path-repeated"
                    what += " with the same digest, which BagIt before 1.0 allows"
                repeated.append(Finding(code, name, what, "once", path, Location(line=number)))
            out[path] = digest
        return out

    def lines(self, name: str, data: bytes, algorithm: str) -> Iterator[tuple[int, str, str]]:
        """Each well-formed line of a manifest that names a path inside the bag: its number,
        digest and path; every other line is named (and, for a bundle, text that is not UTF-8
        and a missing final newline)."""
        if not self.bundle:
            text = self.decoded(name, data)
            for number, line in enumerate(tagfiles.lines(text or ""), 1):
                entry = tagfiles.manifest_line(
                    name, number, line, algorithm, self.declared, self.findings, self.warnings
                )
                if entry is not None:
                    yield number, *entry
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            self.findings.append(
                Finding(
                    "manifest-not-utf8",
                    name,
                    "manifest is not UTF-8",
                    "UTF-8 text",
                    "undecodable bytes",
                )
            )
            return
        for number, line in enumerate(_text_lines(text), 1):
            strict = _manifest_line(name, number, line)
            if isinstance(strict, Finding):
                self.findings.append(strict)
            else:
                yield number, *strict
        if text and not text.endswith("\n"):
            self.findings.append(
                Finding(
                    "manifest-no-final-newline",
                    name,
                    "manifest does not end with a newline",
                    "final newline",
                    "none",
                )
            )

    def decoded(self, name: str, data: bytes) -> str | None:
        """A bag's tag file as text, in the encoding its bagit.txt declares."""
        return tagfiles.decoded(name, data, self.declared.encoding, self.findings, self.warnings)

    def present(self, path: str) -> str | None:
        """The payload file ``path`` names: itself, or in a bag the one file whose name equals
        it once folded; None when there is none."""
        if path in self.files:
            return path
        if self.bundle:
            return None
        candidates = self.folds.get(folded(path), [])
        return candidates[0] if len(candidates) == 1 else None

    def resolve(
        self, listed: Mapping[str, str], tag: bool, covered: tuple[str, ...] | None
    ) -> dict[str, str]:
        """The file each listed path names where the manifest may list it: a bundle's tag
        manifest the tag files it must list (``covered``), a bag's the tag files; a payload
        manifest the payload. In a bag, a path that names no file but equals one file's name
        once folded names that file, as on macOS or Windows (a warning)."""
        out = {}
        for path in listed:
            if tag:
                if path in self.files and path in (self.tags if covered is None else covered):
                    out[path] = path
                continue
            found = self.present(path) if path.startswith(DATA) else None
            if found is None:
                continue
            if found != path:
                self.warnings.append(self.collision(path, found))
            out[path] = found
        return out

    def completeness(
        self,
        name: str,
        listed: Mapping[str, str],
        resolved: Mapping[str, str],
        tag: bool,
        covered: tuple[str, ...] | None,
    ) -> None:
        """What ``name`` lists against what the bag holds: every tag file a bundle's tag
        manifest must cover is listed, every listed file is there (a file fetch.txt lists and
        the bag lacks is named once, by the fetch check), a payload manifest lists the payload
        only and all of it, a bag's tag manifest lists no payload file."""
        for tag_file in covered or ():
            if tag_file not in listed:
                self.findings.append(
                    Finding(
                        "tag-file-not-listed",
                        name,
                        f"{tag_file} not listed",
                        "listed",
                        "not listed",
                    )
                )
        for path in sorted(set(listed) - set(resolved)):
            if not tag and not path.startswith(DATA):
                self.findings.append(
                    Finding(
                        "manifest-path-outside-payload",
                        path,
                        f"listed in {name}, outside the payload directory",
                        "a path under data/",
                        "a path outside it",
                    )
                )
            elif tag and not self.bundle and path.startswith(DATA):
                self.findings.append(
                    Finding(
                        "tagmanifest-lists-payload",
                        path,
                        f"payload file listed in {name}",
                        "tag files only",
                        "a payload file",
                    )
                )
            elif path not in self.unfetched:
                self.findings.append(
                    Finding(
                        "listed-but-missing",
                        path,
                        f"listed in {name} but missing",
                        "present",
                        "missing",
                    )
                )
        if not tag:
            for path in sorted(self.payload - set(resolved.values())):
                self.findings.append(
                    Finding("not-listed", path, f"not listed in {name}", "listed", "extra file")
                )

    def digests(
        self, name: str, algorithm: str, listed: Mapping[str, str], resolved: Mapping[str, str]
    ) -> None:
        """Each file a listed path names has the digest ``name`` gives."""
        for path in sorted(resolved):
            found = resolved[path]
            digest = self.read.digest(found, algorithm)
            if digest is not None and digest != listed[path]:
                self.findings.append(
                    Finding(
                        "digest-mismatch",
                        found,
                        f"{algorithm} differs from {name}",
                        listed[path],
                        digest,
                    )
                )

    # --------------------------------------------------------------------------- bag-info

    def bag_info(self) -> None:
        """bag-info.txt's metadata elements are well formed, and the Payload-Oxum it states is
        the payload's (octets and files). A bundle's is UTF-8 without NUL and states it, and
        when it names a BagIt profile it names repro's and has what the profile requires
        (:func:`~repro.verify._profile.check_profile`); a bag may have none, or state none, and
        name any profile (BagIt alone has no rule for one)."""
        if layout.BAG_INFO not in self.files:
            if self.bundle:
                self.findings.append(
                    Finding(
                        "bag-info-missing",
                        layout.BAG_INFO,
                        "missing bag-info.txt",
                        "present",
                        "missing",
                    )
                )
            return
        raw = self.read.raw(layout.BAG_INFO) or b""
        if self.bundle:
            _check_tag_text(layout.BAG_INFO, raw, self.findings)
            text: str | None = raw.decode("utf-8", "replace")
        else:
            text = self.decoded(layout.BAG_INFO, raw)
        if text is None:
            return
        payload = [size for name, size in self.files.items() if name.startswith(DATA)]
        oxum = f"{sum(payload)}.{len(payload)}"
        elements = list(tagfiles.elements(text, self.declared, self.findings))
        stated = [value.strip() for label, value in elements if label == "Payload-Oxum"]
        if stated != [oxum] and (stated or self.bundle):
            self.findings.append(
                Finding(
                    "payload-oxum",
                    layout.BAG_INFO,
                    "Payload-Oxum",
                    oxum,
                    ", ".join(stated) or "missing",
                )
            )
        if self.bundle:
            check_profile(elements, self.findings)


def check_integrity(listing: Listing, read: BundleReader, findings: list[Finding]) -> None:
    """The BagIt stage of a repro bundle, read as exactly what a study writes: the
    declaration, the layout, the manifests (parsed, then completeness, then digests),
    bag-info.txt."""
    bag = _Bag(listing, read, findings, bundle=True)
    bag.check()
    # A bundle's reading tolerates nothing: whatever a bag's would only warn of is a fault here.
    findings.extend(bag.warnings)


def check_bag(
    listing: Listing, read: BundleReader, findings: list[Finding]
) -> tuple[Declaration, list[Finding]]:
    """The BagIt stage of any bag, read as BagIt 1.0 and 0.97 allow: what its bagit.txt
    declares (as read), and the warnings; the faults go to ``findings``."""
    bag = _Bag(listing, read, findings, bundle=False)
    bag.check()
    return bag.declared, bag.warnings
