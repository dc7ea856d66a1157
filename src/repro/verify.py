"""The offline verifier: integrity, strict parse and schema, joins, and re-derivation.

It needs no simulator and no network. Cheap checks come first (structure, listing), then
completeness and digests, then parsing, then the joins and the re-derivations. Every problem is a
:class:`Finding`; nothing is logged and passed over.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import jsonschema
from attrs import frozen

from repro import canonical, schemas
from repro.bundle import BAGIT_TXT, MANIFEST, MANIFEST_LINE, TAG_FILES, TAGMANIFEST
from repro.derive import derive
from repro.disclosure import Disclosure, is_derivation_input, scan
from repro.errors import BadInput
from repro.judge import contract_sha256
from repro.models import (
    Aggregates,
    Environment,
    FrozenProtocol,
    Ledger,
    Partition,
    RunRecord,
    Seal,
    Tiers,
)
from repro.outcomes import join_problems, measure_of
from repro.plan import seal as seal_plan
from repro.protocol import check_consistency
from repro.serde import structure, to_bytes, unstructure

__all__ = ["BundleReader", "Finding", "verify"]

T = TypeVar("T")

MAX_FILE_BYTES = 1 << 30
#: At most this many findings of one kind in one file are listed one by one; the rest are counted.
MAX_DIFFS = 25


@frozen
class Finding:
    """One verification problem: which file, what, what was expected and what was found."""

    file: str
    what: str
    expected: str
    found: str

    def as_dict(self) -> dict[str, str]:
        """Plain data for ``--json``."""
        return {
            "file": self.file,
            "what": self.what,
            "expected": self.expected,
            "found": self.found,
        }


def _scan(root: Path) -> tuple[dict[str, Path], list[Finding]]:
    files: dict[str, Path] = {}
    findings: list[Finding] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        with os.scandir(directory) as it:
            for entry in it:
                rel = Path(entry.path).relative_to(root).as_posix()
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode):
                    findings.append(
                        Finding(rel, "symbolic link in the bundle", "a regular file", "a symlink")
                    )
                elif stat.S_ISDIR(mode):
                    stack.append(Path(entry.path))
                elif stat.S_ISREG(mode):
                    files[rel] = Path(entry.path)
                else:
                    findings.append(
                        Finding(
                            rel, "special file in the bundle", "a regular file", "a special file"
                        )
                    )
    return files, findings


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _parse_manifest(name: str, data: bytes, findings: list[Finding]) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        findings.append(Finding(name, "manifest is not UTF-8", "UTF-8 text", "undecodable bytes"))
        return out
    for number, line in enumerate(
        text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1
    ):
        match = MANIFEST_LINE.match(line)
        if not match:
            findings.append(
                Finding(
                    name, f"malformed manifest line {number}", "<sha256>  <path>", repr(line[:80])
                )
            )
            continue
        digest, path = match.groups()
        if path in out:
            findings.append(Finding(name, f"path listed twice (line {number})", "once", path))
        out[path] = digest
    if text and not text.endswith("\n"):
        findings.append(
            Finding(name, "manifest does not end with a newline", "final newline", "none")
        )
    return out


def _integrity(root: Path, files: dict[str, Path], findings: list[Finding]) -> None:
    if files.get("bagit.txt") is None:
        findings.append(Finding("bagit.txt", "missing BagIt declaration", "present", "missing"))
    elif files["bagit.txt"].read_bytes() != BAGIT_TXT:
        findings.append(
            Finding("bagit.txt", "BagIt declaration", BAGIT_TXT.decode().strip(), "other content")
        )
    for name in sorted(files):
        if ("/" not in name and name not in TAG_FILES) or (
            "/" in name and not name.startswith("data/")
        ):
            findings.append(Finding(name, "file outside the bag layout", "absent", "present"))
    for manifest, covered in (
        (MANIFEST, None),
        (TAGMANIFEST, ("bagit.txt", "bag-info.txt", MANIFEST)),
    ):
        if manifest not in files:
            findings.append(Finding(manifest, "missing manifest", "present", "missing"))
            continue
        listed = _parse_manifest(manifest, files[manifest].read_bytes(), findings)
        if covered is None:
            actual = {n for n in files if n.startswith("data/")}
        else:
            actual = {n for n in covered if n in files}
            for name in covered:
                if name not in listed:
                    findings.append(Finding(manifest, f"{name} not listed", "listed", "not listed"))
        for name in sorted(set(listed) - actual):
            findings.append(
                Finding(name, f"listed in {manifest} but missing", "present", "missing")
            )
        for name in sorted(actual - set(listed)):
            if covered is None:
                findings.append(Finding(name, f"not listed in {manifest}", "listed", "extra file"))
        for name in sorted(set(listed) & actual):
            digest = _sha256(files[name])
            if digest != listed[name]:
                findings.append(
                    Finding(name, f"sha256 differs from {manifest}", listed[name], digest)
                )
    if "bag-info.txt" in files:
        payload = [p for n, p in files.items() if n.startswith("data/")]
        oxum = f"{sum(p.stat().st_size for p in payload)}.{len(payload)}"
        info = files["bag-info.txt"].read_bytes().decode("utf-8", "replace").splitlines()
        stated = [
            line.split(":", 1)[1].strip() for line in info if line.startswith("Payload-Oxum:")
        ]
        if stated != [oxum]:
            findings.append(
                Finding("bag-info.txt", "Payload-Oxum", oxum, ", ".join(stated) or "missing")
            )
    else:
        findings.append(Finding("bag-info.txt", "missing bag-info.txt", "present", "missing"))


@functools.cache
def _validator(kind: str) -> Any:
    return jsonschema.Draft202012Validator(schemas.load(kind))


class BundleReader:
    """Reads bundle files strictly: canonical JSON, schema, model."""

    def __init__(self, files: dict[str, Path], findings: list[Finding]) -> None:
        self.files = files
        self.findings = findings
        self._read: dict[str, bytes | None] = {}

    def _validate(self, name: str, raw: Any, kind: str, cls: type[T], line: str = "") -> T | None:
        errors = sorted(
            _validator(kind).iter_errors(raw),
            key=lambda e: list(e.absolute_path),
        )
        for error in errors[:MAX_DIFFS]:
            where = "$" + "".join(
                f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
            )
            self.findings.append(
                Finding(name, f"schema {kind}{line} @ {where}", "valid", error.message[:200])
            )
        if errors:
            return None
        try:
            return structure(raw, cls, what=f"{name}{line}")
        except BadInput as exc:
            self.findings.append(Finding(name, f"model {cls.__name__}{line}", "valid", str(exc)))
            return None

    def raw(self, name: str) -> bytes | None:
        """The file's bytes, read once however often they are asked for; None (with a
        finding, made once) when missing or too large."""
        if name not in self._read:
            self._read[name] = self._load(name)
        return self._read[name]

    def _load(self, name: str) -> bytes | None:
        path = self.files.get(name)
        if path is None:
            self.findings.append(
                Finding(name, "expected bundle file is missing", "present", "missing")
            )
            return None
        if path.stat().st_size > MAX_FILE_BYTES:
            self.findings.append(
                Finding(
                    name, "file too large", f"<= {MAX_FILE_BYTES} bytes", str(path.stat().st_size)
                )
            )
            return None
        return path.read_bytes()

    def json(self, name: str, kind: str, cls: type[T]) -> T | None:
        data = self.raw(name)
        if data is None:
            return None
        try:
            raw = canonical.loads(data, what=name, max_bytes=MAX_FILE_BYTES)
        except BadInput as exc:
            self.findings.append(Finding(name, "strict JSON parse", "valid JSON", str(exc)))
            return None
        value = self._validate(name, raw, kind, cls)
        if value is not None and to_bytes(value) != data:
            self.findings.append(
                Finding(name, "bytes are not in canonical form", "canonical JSON", "other bytes")
            )
        return value

    def json_lines(self, name: str, kind: str, cls: type[T]) -> list[T] | None:
        data = self.raw(name)
        if data is None:
            return None
        if data and not data.endswith(b"\n"):
            self.findings.append(
                Finding(
                    name, "JSON Lines file does not end with a newline", "final newline", "none"
                )
            )
            return None
        out: list[T] = []
        ok = True
        for number, line in enumerate(data.splitlines(keepends=True), 1):
            try:
                raw = canonical.loads(line, what=f"{name} line {number}", max_bytes=MAX_FILE_BYTES)
            except BadInput as exc:
                self.findings.append(
                    Finding(name, f"strict JSON parse, line {number}", "valid JSON", str(exc))
                )
                ok = False
                continue
            value = self._validate(name, raw, kind, cls, f" line {number}")
            if value is None:
                ok = False
                continue
            if to_bytes(value) != line:
                self.findings.append(
                    Finding(
                        name,
                        f"line {number} is not in canonical form",
                        "canonical JSON",
                        "other bytes",
                    )
                )
            out.append(value)
        return out if ok else None


def _diff(expected: Any, found: Any, path: str = "$") -> Iterator[tuple[str, Any, Any]]:
    if isinstance(expected, dict) and isinstance(found, dict):
        for key in sorted(set(expected) | set(found)):
            yield from _diff(expected.get(key), found.get(key), f"{path}.{key}")
    elif isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        for i, (e, f) in enumerate(zip(expected, found, strict=True)):
            yield from _diff(e, f, f"{path}[{i}]")
    elif expected != found or type(expected) is not type(found):
        yield path, expected, found


def _short(value: Any) -> str:
    text = canonical.dumps(value, newline=False).decode() if value is not None else "absent"
    return text if len(text) <= 120 else text[:117] + "..."


def _compare(
    name: str, expected: Any, found_bytes: bytes | None, findings: list[Finding], found: Any
) -> None:
    if found_bytes is None or found is None:
        return
    expected_plain = unstructure(expected)
    if canonical.dumps(expected_plain) == found_bytes:
        return
    diffs = list(_diff(expected_plain, unstructure(found)))
    for path, e, f in diffs[:MAX_DIFFS]:
        findings.append(Finding(name, f"re-derived value differs @ {path}", _short(e), _short(f)))
    if len(diffs) > MAX_DIFFS:
        findings.append(
            Finding(
                name, f"{len(diffs) - MAX_DIFFS} further differing values", "none", "differences"
            )
        )
    if not diffs:
        findings.append(
            Finding(name, "re-derived bytes differ", "canonical re-derivation", "other bytes")
        )


def _disclosures(read: BundleReader, findings: list[Finding]) -> list[Disclosure]:
    """Scan every file, tag files too, each from the bytes read once; one finding per hit (at
    most MAX_DIFFS per file, the rest counted). Returns every hit."""
    hits: list[Disclosure] = []
    for name in sorted(read.files):
        data = read.raw(name)
        found = scan(name, data) if data is not None else []
        for hit in found[:MAX_DIFFS]:
            findings.append(
                Finding(
                    name,
                    f"disclosure: {hit.kind} at byte {hit.offset}",
                    "no host path, traceback or credential-looking string",
                    hit.pattern,
                )
            )
        if len(found) > MAX_DIFFS:
            findings.append(
                Finding(name, f"{len(found) - MAX_DIFFS} further disclosure hits", "none", "hits")
            )
        hits += found
    return hits


def verify(root: Path) -> list[Finding]:
    """Every finding for the bundle at ``root``; empty when it verifies. Raises
    :class:`BadInput` when ``root`` is not a directory at all."""
    if root.is_symlink() or not root.is_dir():
        raise BadInput(f"{root}: not a bundle directory")
    files, findings = _scan(root)
    _integrity(root, files, findings)
    read = BundleReader(files, findings)
    fp = read.json("data/protocol.json", "frozen-protocol", FrozenProtocol)
    seal = read.json("data/plans/seal.json", "seal", Seal)
    ledger = read.json("data/source-ledger.json", "source-ledger", Ledger)
    aggregates_found = read.json("data/aggregates.json", "aggregates", Aggregates)
    tiers_found = read.json("data/tiers.json", "tiers", Tiers)
    read.json("data/environment.json", "environment", Environment)
    report_bytes = read.raw("data/validation-report.md")
    disclosures = _disclosures(read, findings)

    if fp is None or seal is None:
        return findings
    if canonical.sha256_hex(to_bytes(fp.protocol)) != fp.sha256:
        findings.append(
            Finding(
                "data/protocol.json",
                "protocol digest",
                fp.sha256,
                canonical.sha256_hex(to_bytes(fp.protocol)),
            )
        )
    try:
        check_consistency(fp.protocol)
    except BadInput as exc:
        findings.append(
            Finding("data/protocol.json", "protocol consistency", "consistent", str(exc))
        )
        return findings
    if seal.protocol_sha256 != fp.sha256:
        findings.append(
            Finding(
                "data/plans/seal.json",
                "protocol digest in the seal",
                fp.sha256,
                seal.protocol_sha256,
            )
        )

    partitions: list[Partition] = []
    records: list[RunRecord] = []
    complete = True
    expected_files = {"data/plans/seal.json"}
    for ref in seal.partitions:
        name = f"data/{ref.file}"
        expected_files.add(name)
        data = read.raw(name)
        if data is not None and canonical.sha256_hex(data) != ref.sha256:
            findings.append(
                Finding(
                    name,
                    "partition digest differs from the seal",
                    ref.sha256,
                    canonical.sha256_hex(data),
                )
            )
        part = read.json(name, "partition", Partition)
        runs_name = f"data/runs/{ref.id}.jsonl"
        expected_files.add(runs_name)
        runs = read.json_lines(runs_name, "run-record", RunRecord)
        if part is None or runs is None:
            complete = False
            continue
        partitions.append(part)
        records.extend(runs)
    for name in sorted(
        n for n in files if n.startswith("data/plans/") or n.startswith("data/runs/")
    ):
        if name not in expected_files:
            findings.append(Finding(name, "file not named by the seal", "absent", "present"))
    if not complete or ledger is None:
        return findings

    resealed = seal_plan(fp.protocol, fp.sha256, ledger.sources)
    _compare(
        "data/plans/seal.json",
        resealed.seal,
        read.raw("data/plans/seal.json"),
        findings,
        seal,
    )
    for expected_part, part in zip(resealed.partitions, partitions, strict=False):
        _compare(f"data/plans/{part.id}.json", expected_part, to_bytes(part), findings, part)

    entries = [e for part in partitions for e in part.entries]
    for problem in join_problems(entries, records, fp.protocol.retry.max_attempts)[: MAX_DIFFS * 4]:
        findings.append(
            Finding(
                f"data/runs/{problem.where.split('-')[0]}.jsonl",
                f"{problem.where}: {problem.what}",
                problem.expected,
                problem.found,
            )
        )
    contracts = {c: contract_sha256(facts) for c, facts in ledger.contracts.items()}
    bad_measures = bad_contracts = 0
    for r in records:
        where = f"data/runs/{r.condition}.jsonl"
        if (
            r.step_rewards is not None
            and r.measure is not None
            and measure_of(r.step_rewards) != r.measure
        ):
            bad_measures += 1
            if bad_measures <= MAX_DIFFS:
                findings.append(
                    Finding(
                        where,
                        f"{r.attempt_id}: measure differs from the sum of its step rewards",
                        repr(measure_of(r.step_rewards)),
                        repr(r.measure),
                    )
                )
        if r.status in ("valid", "invalid") and r.contract_sha256 != contracts.get(r.condition):
            bad_contracts += 1
            if bad_contracts <= MAX_DIFFS:
                findings.append(
                    Finding(
                        where,
                        f"{r.attempt_id}: contract digest",
                        str(contracts.get(r.condition)),
                        str(r.contract_sha256),
                    )
                )

    inputs = [d for d in disclosures if is_derivation_input(d.file)]
    derived = derive(fp, seal, partitions, records, ledger, inputs)
    _compare(
        "data/source-ledger.json",
        derived.ledger,
        read.raw("data/source-ledger.json"),
        findings,
        ledger,
    )
    if aggregates_found is not None:
        _compare(
            "data/aggregates.json",
            derived.aggregates,
            read.raw("data/aggregates.json"),
            findings,
            aggregates_found,
        )
    if tiers_found is not None:
        _compare(
            "data/tiers.json",
            derived.tiers,
            read.raw("data/tiers.json"),
            findings,
            tiers_found,
        )
    if report_bytes is not None and report_bytes != derived.report.encode():
        findings.append(
            Finding(
                "data/validation-report.md",
                "report differs from its re-derivation",
                "re-derived text",
                "other text",
            )
        )
    return findings
