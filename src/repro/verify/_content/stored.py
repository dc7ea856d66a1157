"""The bundle's fixed payload files parsed, and what is checked of them alone: the protocol's
digest and the seal's, the ledger's pins and facts against the protocol, and every file's
disclosure hits."""

from __future__ import annotations

from attrs import frozen

from repro import _layout as layout
from repro._derive.facts import ledger_fact_problems
from repro._disclosure import FileHits
from repro._json import canonical
from repro._json.serde import to_bytes
from repro._protocol.pins import ledger_problems
from repro.models import (
    Aggregates,
    Continuation,
    ContrastsFile,
    Environment,
    FrozenProtocol,
    Ledger,
    Protocol,
    RLAggregates,
    Scores,
    Seal,
    Tiers,
)
from repro.verify._findings import MAX_DIFFS, Finding
from repro.verify._reader import BundleReader


def disclosure_findings(hits: FileHits) -> list[Finding]:
    """One finding per disclosure hit in a file (at most MAX_DIFFS, the rest counted)."""
    out = [
        Finding(
            "disclosure",
            hits.file,
            f"disclosure: {hit.kind} at byte {hit.offset}",
            "no personal or host identity"
            if hit.kind == "identity"
            else "no host path, traceback or credential-looking string",
            hit.pattern,
        )
        for hit in hits.first[:MAX_DIFFS]
    ]
    shown = min(len(hits.first), MAX_DIFFS)
    if hits.count > shown:
        out.append(
            Finding(
                "disclosure-more",
                hits.file,
                f"{hits.count - shown} further disclosure hits",
                "none",
                "hits",
            )
        )
    return out


def scan_disclosures(read: BundleReader, findings: list[Finding]) -> list[FileHits]:
    """Scan every file, tag files too, each from the bytes read once; one finding per hit (at
    most MAX_DIFFS per file, the rest counted). Returns every file's hits. A signature file is
    base64 whose ``/`` make chance host paths: the signatures stage scans its decoded
    statement instead."""
    out: list[FileHits] = []
    for name in sorted(read.files):
        hits = None if layout.is_signature(name) else read.disclosures(name)
        if hits is None:
            continue
        findings.extend(disclosure_findings(hits))
        out.append(hits)
    return out


@frozen
class Stored:
    """The bundle's files as parsed: each None when it is missing or does not parse (which is
    named); ``scores`` is None too for a protocol without scoring, ``report`` the report's
    bytes."""

    protocol: FrozenProtocol | None
    seal: Seal | None
    ledger: Ledger | None
    aggregates: Aggregates | None
    tiers: Tiers | None
    environment: Environment | None
    scores: Scores | None
    report: bytes | None
    #: None too for a protocol that declares no contrasts.
    contrasts: ContrastsFile | None = None
    #: None too for a protocol without an ``rl`` section.
    rl: RLAggregates | None = None
    #: continuation.json, the account of a study continued from an interrupted one: None in
    #: any other bundle.
    continuation: Continuation | None = None


def _undeclared(read: BundleReader, name: str, code: str, what: str) -> None:
    """Name ``name`` when the bundle holds it though its protocol declares nothing it derives."""
    if name in read.files:
        read.findings.append(Finding(code, name, what, "absent", "present"))


def read_stored(read: BundleReader) -> Stored:
    """Parse every fixed payload file (and scores.json, contrasts.json and rl-aggregates.json,
    which only a scored protocol, one that declares contrasts and one with an ``rl`` section
    have, and continuation.json, which only a continued study's bundle has)."""
    fp = read.json(layout.PROTOCOL, "frozen-protocol", FrozenProtocol)
    scored = fp is not None and fp.protocol.scoring is not None
    seal = read.json(layout.SEAL, "seal", Seal)
    ledger = read.json(layout.LEDGER, "source-ledger", Ledger)
    aggregates = read.json(layout.AGGREGATES, "aggregates", Aggregates)
    tiers = read.json(layout.TIERS, "tiers", Tiers)
    environment = read.json(layout.ENVIRONMENT, "environment", Environment)
    scores = read.json(layout.SCORES, "scores", Scores) if scored else None
    if not scored:
        _undeclared(
            read,
            layout.SCORES,
            "scores-without-scoring",
            "scores of a protocol that declares no scoring",
        )
    compared = fp is not None and fp.protocol.contrasts is not None
    contrasts = read.json(layout.CONTRASTS, "contrasts", ContrastsFile) if compared else None
    if not compared:
        _undeclared(
            read,
            layout.CONTRASTS,
            "contrasts-without-contrasts",
            "contrasts of a protocol that declares none",
        )
    with_rl = fp is not None and fp.protocol.rl is not None
    rl = read.json(layout.RL_AGGREGATES, "rl-aggregates", RLAggregates) if with_rl else None
    if not with_rl:
        _undeclared(
            read,
            layout.RL_AGGREGATES,
            "rl-aggregates-without-rl",
            "rliable's aggregates of a protocol without an rl section",
        )
    report = read.raw(layout.REPORT)
    continuation = (
        read.json(layout.CONTINUATION, "continuation", Continuation)
        if layout.CONTINUATION in read.files
        else None
    )
    return Stored(
        fp,
        seal,
        ledger,
        aggregates,
        tiers,
        environment,
        scores,
        report,
        contrasts,
        rl,
        continuation,
    )


def check_digests(fp: FrozenProtocol, seal: Seal, findings: list[Finding]) -> None:
    """The protocol's digest is that of its canonical bytes, and the seal names it."""
    digest = canonical.sha256_hex(to_bytes(fp.protocol))
    if digest != fp.sha256:
        findings.append(
            Finding("protocol-digest", layout.PROTOCOL, "protocol digest", fp.sha256, digest)
        )
    if seal.protocol_sha256 != fp.sha256:
        findings.append(
            Finding(
                "seal-protocol-digest",
                layout.SEAL,
                "protocol digest in the seal",
                fp.sha256,
                seal.protocol_sha256,
            )
        )


def pin_findings(protocol: Protocol, ledger: Ledger) -> list[Finding]:
    """Each pin of the protocol that the ledger's sources do not record
    (:func:`repro._protocol.pins.ledger_problems`, the rule the adapter's freeze applied); none
    for an adapter without a rule there (a third party's: its pins are not checked)."""
    return [
        Finding(
            "ledger-pin",
            layout.LEDGER,
            f"{problem.what}: the ledger does not record the pin of {layout.PROTOCOL} "
            f"@ $.protocol{problem.path[1:]}",
            problem.expected,
            problem.found,
        )
        for problem in ledger_problems(protocol, ledger.sources) or []
    ]


def fact_findings(protocol: Protocol, seal: Seal, ledger: Ledger) -> list[Finding]:
    """Each fact of the ledger (the adapter's name and what it says of itself, the roles of
    its sources, each contract) that the protocol contradicts
    (:func:`repro._derive.facts.ledger_fact_problems`, the rules the study applied at freeze and
    as each session opened)."""
    return [
        Finding(
            "ledger-facts",
            layout.LEDGER,
            f"{problem.what}: the ledger contradicts {layout.PROTOCOL} @ {problem.path}",
            problem.expected,
            problem.found,
        )
        for problem in ledger_fact_problems(protocol, seal.conditions, ledger)
    ]
