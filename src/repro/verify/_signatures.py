"""The last stage, signatures: each envelope in the tag directory ``signatures/`` read strictly
within the limits, and, against the keys a reader trusts, its signature, its subject (the
bundle as it is now) and, for each kind of statement ``repro sign`` writes (repro's own, SLSA
provenance, the in-toto test-result), its predicate (what the bundle's files claim, derived again
by :func:`repro._bundle.signatures.claims`). Without a trusted key each signature is listed, its
key named, as not checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

from repro import _layout as layout
from repro._disclosure import scan_hits
from repro.errors import BadInput
from repro.models import Checkpoint, Partition
from repro.verify._content import disclosure_findings
from repro.verify._findings import Finding

if TYPE_CHECKING:
    from repro._bundle.signatures import PublicKey, SignedStatement
    from repro._derive.audit import AuditPlan
    from repro.verify._content import Stored
    from repro.verify._limits import Limits
    from repro.verify._reader import BundleReader
    from repro.verify._walk import Listing

__all__ = ["SignatureStatus", "SignerStatus", "check_signatures"]


@frozen
class SignerStatus:
    """What verify says of one signature inside an envelope: its keyid as written (None when it
    has none: a hint, never trusted), and ``not-checked`` (no key given), ``verified`` (a
    trusted key's valid signature: ``key`` is that key's fingerprint), ``invalid`` (not valid,
    though its keyid names a trusted key) or ``untrusted`` (no trusted key's)."""

    keyid: str | None
    status: Literal["not-checked", "verified", "invalid", "untrusted"]
    key: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        """Plain data for ``--json``."""
        return {"keyid": self.keyid, "status": self.status, "key": self.key}


@frozen
class SignatureStatus:
    """What verify says of one signature file: its key's fingerprint (the trusted key that
    verified it; else the one the file is named after when a keyid says it; else None) and the
    statement's kind (None when the file could not be read as an envelope), and whether it was
    checked against a trusted key: ``not-checked`` (no key given), ``verified``, or ``failed``
    with the finding's ``code``; and each signature in its envelope (``signers``)."""

    file: str
    keyid: str | None
    kind: str | None
    status: Literal["not-checked", "verified", "failed"]
    code: str | None = None
    #: An audit statement's result in one line (:func:`audit_summary`), whatever its status.
    summary: str | None = None
    #: Each signature of the envelope, in its order (empty when it could not be read).
    signers: tuple[SignerStatus, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        out: dict[str, Any] = {
            "file": self.file,
            "keyid": self.keyid,
            "kind": self.kind,
            "status": self.status,
            "code": self.code,
            "signers": [s.as_dict() for s in self.signers],
        }
        return out if self.summary is None else out | {"summary": self.summary}


def audit_summary(predicate: dict[str, Any]) -> str:
    """An audit statement's claims in one line: ``59 of 9000 slot(s) drawn, 412 re-executed
    (412 attempt(s)), 52 kept state(s) chained: identical``."""
    p = predicate
    said = (
        "identical"
        if p.get("identical") is True
        else (f"{p.get('differing')} slot(s) differ, {p.get('broken')} link(s) broken")
    )
    drawn = "every one" if p.get("sample") == "all" else f"{p.get('sampled')}"
    return (
        f"{drawn} of {p.get('population')} slot(s) drawn, {p.get('reexecuted_slots')} "
        f"re-executed ({p.get('attempts')} attempt(s)), {p.get('chained')} kept state(s) "
        f"chained: {said}"
    )


def _summary(signed: SignedStatement) -> str | None:
    """An audit statement's one line, None for any other kind."""
    # Lazy: the audit plan brings NumPy; only an audit statement needs it.
    from repro._derive.audit import AUDIT

    predicate = signed.statement["predicate"]
    if signed.kind != AUDIT or not isinstance(predicate, dict):
        return None
    return audit_summary(predicate)


def _finding(code: str, name: str, what: str, expected: str, found: str) -> Finding:
    return Finding(code, name, what, expected, found)


def _read(
    name: str, size: int, read: BundleReader, limits: Limits, findings: list[Finding]
) -> SignedStatement | None:
    """The envelope in ``name``, or None with a finding: past the size limit (not read), or not
    an envelope repro reads."""
    # Lazy: cryptography only for a bundle that carries signatures.
    from repro._bundle.signatures import parse_envelope

    if size > limits.max_signature_bytes:
        findings.append(
            _finding(
                "signature-file-limit",
                name,
                "signature file larger than the limit max_signature_bytes: not read",
                f"<= {limits.max_signature_bytes} bytes",
                f"{size} bytes",
            )
        )
        return None
    data = read.raw(name)
    if data is None:
        return None
    if len(data) > limits.max_signature_bytes:  # it grew after the scan
        findings.append(
            _finding(
                "signature-file-limit",
                name,
                "signature file larger than the limit max_signature_bytes: not parsed",
                f"<= {limits.max_signature_bytes} bytes",
                f"{len(data)} bytes",
            )
        )
        return None
    try:
        signed = parse_envelope(name, data, max_signatures=limits.max_envelope_signatures)
    except BadInput as exc:
        findings.append(
            _finding(
                "signature-malformed",
                name,
                "not a DSSE envelope of an in-toto statement about a bundle",
                "an envelope as repro sign writes it",
                str(exc),
            )
        )
        return None
    # The statement is what a reader sees, as the bundle's files are: it discloses nothing.
    findings.extend(disclosure_findings(scan_hits(name, signed.envelope.payload)))
    # So is the rest of the envelope someone wrote (keyids, fields DSSE does not define).
    findings.extend(disclosure_findings(scan_hits(name, signed.rest)))
    return signed


def _expected_predicate(kind: str, stored: Stored | None) -> dict[str, object] | None:
    """What the bundle's files claim in a statement of ``kind`` (one ``repro sign`` writes), or
    None when verify could not parse them (named already)."""
    # Lazy: cryptography only for a bundle that carries signatures.
    from repro._bundle.signatures import claims

    if stored is None:
        return None
    s = stored
    if (
        s.protocol is None
        or s.ledger is None
        or s.aggregates is None
        or s.tiers is None
        or s.environment is None
    ):
        return None
    if s.protocol.protocol.contrasts is not None and s.contrasts is None:
        return None
    if s.protocol.protocol.scoring is not None and s.scores is None:
        return None
    found = claims(
        s.protocol, s.ledger, s.aggregates, s.tiers, s.environment, s.contrasts, s.scores
    )
    return found[kind]


def _check(signed: SignedStatement, digest: str | None, facts: _BundleFacts) -> Finding | None:
    """The first thing wrong with a statement a trusted key signed: what it states
    (:func:`_statement_problem`), then, for an audit, whether the trusted auditor found the
    slots it re-executed byte-identical."""
    # Lazy: the audit plan (NumPy) only for signed bundles.
    from repro._derive.audit import AUDIT

    name = signed.file
    problem = _statement_problem(signed, digest, facts)
    if problem is not None or signed.kind != AUDIT:
        return problem
    predicate = signed.statement["predicate"]
    if predicate.get("identical") is not True:
        return _finding(
            "audit-differs",
            name,
            "a trusted auditor re-executed slots that differ from the bundle's: "
            + audit_summary(predicate),
            "every re-executed slot byte-identical",
            ", ".join(predicate.get("differing_slots") or []) or "broken links",
        )
    return None


def _statement_problem(
    signed: SignedStatement, digest: str | None, facts: _BundleFacts
) -> Finding | None:
    """What a statement says that the bundle as it is now contradicts, whoever signed it (no
    key is needed to see it): its subject, another bundle (the bundle changed after it was
    signed); for repro's own statement, claims other than the bundle's files make; for an
    audit, figures other than its own facts and the bundle give (:func:`_audit_problem`)."""
    # Lazy: cryptography and the audit plan (NumPy) only for signed bundles.
    from repro._bundle.signatures import SIGNED_KINDS
    from repro._derive.audit import AUDIT

    name = signed.file
    if digest is not None and signed.subject_sha256 != digest:
        return _finding(
            "signature-subject",
            name,
            "the signed statement is about another bundle: the bundle changed after it was signed",
            f"bundle sha256 {signed.subject_sha256}",
            f"bundle sha256 {digest}",
        )
    if signed.kind == AUDIT:
        return _audit_problem(signed, digest, facts)
    if signed.kind in SIGNED_KINDS:
        expected = _expected_predicate(signed.kind, facts.stored)
        found = signed.statement["predicate"]
        if expected is not None and found != expected:
            differ = ", ".join(
                sorted(k for k in {*expected, *found} if expected.get(k) != found.get(k))
            )
            return _finding(
                "signature-predicate",
                name,
                f"the signed claims are not what the bundle's files say (differ: {differ})",
                "the predicate derived from the bundle's files",
                "another predicate",
            )
    return None


@frozen
class _BundleFacts:
    """What the statements are checked against: the parsed files, the reader to read the plan,
    checkpoints and run records an audit statement's figures are derived again from, and
    whether the bundle verified so far (else those are not read again: it fails anyway)."""

    stored: Stored | None
    read: BundleReader
    clean: bool

    def audit_plan(self, drawn: Sequence[str]) -> tuple[AuditPlan, int] | None:
        """What an audit of ``drawn`` re-executes (:func:`repro._derive.audit.audit_plan`) and
        the bundle's records of those slots; None when the bundle did not verify so far."""
        # Lazy: the audit plan brings NumPy; only an audit statement needs it.
        from repro._derive.audit import audit_plan

        s = self.stored
        if not self.clean or s is None or s.protocol is None or s.seal is None:
            return None
        read = self.read
        stream = s.protocol.protocol.seeding.mode == "stream"

        def every(partition: str) -> int | None:
            checkpoint = read.json(layout.checkpoint_file(partition), "checkpoint", Checkpoint)
            return None if checkpoint is None else checkpoint.every

        partitions = (
            read.json(layout.DATA + ref.file, "partition", Partition) for ref in s.seal.partitions
        )
        plan = audit_plan(
            (p for p in partitions if p is not None), drawn, every if stream else None
        )
        slots, attempts = set(plan.slots), 0
        for partition in plan.partitions:
            for record in read.run_records(layout.runs_file(partition)) or ():
                attempts += record is not None and record.slot in slots
        return plan, attempts


def _audit_problem(
    signed: SignedStatement, digest: str | None, facts: _BundleFacts
) -> Finding | None:
    """An audit statement, whoever signed it: its sample must be the one the bundle's identity
    draws (:func:`repro._derive.audit.sample_problems`), and every other figure it carries what
    that sample, its own counts and the bundle give (:func:`repro._derive.audit.
    statement_problems`): the slots it re-executed and links it chained, ``identical``, the
    named slots and links, the bound of a clean sample, the attempts."""
    # Lazy: the audit plan brings NumPy; only an audit statement needs it.
    from repro._derive.audit import (
        audit_population,
        audit_sample,
        sample_problems,
        statement_problems,
    )

    predicate = signed.statement["predicate"]
    name = signed.file
    if not isinstance(predicate, dict):
        return _finding(
            "signature-predicate",
            name,
            "the audit's predicate is not an object",
            "an object",
            type(predicate).__name__,
        )
    stored = facts.stored
    if stored is None or stored.protocol is None or digest is None:
        return None
    protocol = stored.protocol.protocol
    problems = sample_problems(protocol, digest, predicate)
    if not problems:
        population = audit_population(protocol)
        requested = predicate["sample"]
        drawn = population if requested == "all" else audit_sample(digest, population, requested)
        derived = facts.audit_plan(drawn)
        if derived is not None:
            plan, attempts = derived
            max_attempts = protocol.retry.max_attempts
            problems = statement_problems(predicate, plan, len(population), attempts, max_attempts)
    if problems:
        return _finding(
            "signature-predicate",
            name,
            "the audit's statement is not what its sample, its own counts and the bundle give: "
            + "; ".join(problems),
            "the figures derived from the bundle's sha256 and files",
            "other figures",
        )
    return None


def _signature_files(listing: Listing, limits: Limits, findings: list[Finding]) -> list[str]:
    """The signature files read, in name order: at most ``limits.max_signatures`` (more are
    named, and not read)."""
    names = sorted(n for n in listing.sizes if layout.is_signature(n))
    if len(names) > limits.max_signatures:
        findings.append(
            _finding(
                "signature-count-limit",
                layout.SIGNATURES.rstrip("/"),
                f"more signature files than the limit max_signatures: "
                f"{len(names) - limits.max_signatures} not read",
                f"<= {limits.max_signatures} signature files",
                f"{len(names)} signature files",
            )
        )
        names = names[: limits.max_signatures]
    return names


@frozen
class _Signed:
    """Who signed one envelope, as far as the trusted keys say: each signature's status, the
    trusted keys whose valid signatures it holds, and the trusted key the file is named after
    (None when that key is not trusted, or no key was given)."""

    signers: tuple[SignerStatus, ...]
    valid: tuple[PublicKey, ...]
    named: PublicKey | None


def _who_signed(signed: SignedStatement, trusted: Sequence[PublicKey]) -> _Signed:
    """Each of the envelope's signatures checked against the trusted keys
    (:func:`repro._bundle.signatures.signers`)."""
    # Lazy: cryptography only for a bundle that carries signatures.
    from repro._bundle.signatures import key_digits, signers

    sigs = signed.envelope.signatures
    if not trusted:
        return _Signed(tuple(SignerStatus(s.keyid, "not-checked") for s in sigs), (), None)
    by_key = {key.fingerprint: key for key in trusted}
    found = signers(signed.envelope, trusted)
    statuses = tuple(
        SignerStatus(s.keyid, "verified", key.fingerprint)
        if key is not None
        else SignerStatus(s.keyid, "invalid" if s.keyid in by_key else "untrusted")
        for s, key in zip(sigs, found, strict=True)
    )
    valid = tuple({k.fingerprint: k for k in found if k is not None}.values())
    named = next((k for k in trusted if key_digits(k.fingerprint) == signed.named), None)
    return _Signed(statuses, valid, named)


def _signature_problem(
    signed: SignedStatement,
    who: _Signed,
    by_key: Mapping[str, PublicKey],
    digest: str | None,
    facts: _BundleFacts,
) -> Finding | None:
    """What is wrong with one signature file, checked against the trusted keys ``by_key``: the
    file named after a trusted key whose valid signature it does not hold, or a keyid naming a
    trusted key with none valid (``signature-invalid``); no trusted key's valid signature at all
    (``signature-untrusted``); then what the statement says. With no keys given, only what it
    states is checked."""
    if not by_key:
        # No key says who signed it, but what it states is checked all the same.
        return _statement_problem(signed, digest, facts)
    name = signed.file
    claimed = [s.keyid for s in who.signers if s.status == "invalid"]
    named = who.named
    if named is not None and named.fingerprint not in {k.fingerprint for k in who.valid}:
        return _finding(
            "signature-invalid",
            name,
            f"the file is named after {named.fingerprint} ({named.source}), and holds no valid "
            "signature of that key over this envelope",
            "a valid Ed25519 signature by the key the file is named after",
            "a signature that does not verify" if claimed else "no signature by that key",
        )
    if not who.valid:
        if claimed:
            return _finding(
                "signature-invalid",
                name,
                f"the signature is not {claimed[0]}'s over this envelope "
                f"({by_key[str(claimed[0])].source})",
                "a valid Ed25519 signature over the envelope's payload",
                "a signature that does not verify",
            )
        keyids = ", ".join(str(s.keyid) for s in who.signers)
        return _finding(
            "signature-untrusted",
            name,
            f"signed by {keyids}, no key among the trusted ones",
            "a signature by a trusted key",
            keyids,
        )
    return _check(signed, digest, facts)


def _status(
    name: str, signed: SignedStatement, who: _Signed, problem: Finding | None, keys_given: bool
) -> SignatureStatus:
    """What verify says of one signature file read: failed with ``problem``'s code, else
    verified (or not checked, with no keys given), by the key to name: the trusted one that
    signed (the file's own first), else the fingerprint a keyid gives the file's name, a
    hint."""
    status: Literal["not-checked", "verified", "failed"] = (
        "failed" if problem is not None else "verified" if keys_given else "not-checked"
    )
    keyid = who.valid[0].fingerprint if who.valid else signed.keyid
    if who.named is not None and any(k.fingerprint == who.named.fingerprint for k in who.valid):
        keyid = who.named.fingerprint
    return SignatureStatus(
        name,
        keyid,
        signed.kind,
        status,
        None if problem is None else problem.code,
        _summary(signed),
        who.signers,
    )


def check_signatures(
    listing: Listing,
    read: BundleReader,
    stored: Stored | None,
    trusted: Sequence[PublicKey],
    limits: Limits,
    findings: list[Finding],
) -> list[SignatureStatus]:
    """Read every signature file (in name order, at most ``limits.max_signatures``), and check
    each against ``trusted``: an envelope holding no trusted key's valid signature is
    ``signature-untrusted`` (``signature-invalid`` when a keyid or the file's name says a trusted
    key signed it), one named after a trusted key whose valid signature it lacks is
    ``signature-invalid``, and with keys given but no file by any of them, ``signature-missing``.
    Return what was found of each file, and of each signature in it."""
    names = _signature_files(listing, limits, findings)
    by_key = {key.fingerprint: key for key in trusted}
    # The subject is checked only against a tag manifest that is there: a missing one is named
    # by integrity already, and a bundle without signatures or keys reads nothing here.
    digest = (
        read.sha256(layout.TAGMANIFEST) if names and layout.TAGMANIFEST in listing.sizes else None
    )
    facts = _BundleFacts(stored, read, clean=not findings)
    statuses: list[SignatureStatus] = []
    signed_by_trusted = False
    for name in names:
        signed = _read(name, listing.sizes[name], read, limits, findings)
        if signed is None:
            statuses.append(SignatureStatus(name, None, None, "failed", "signature-malformed"))
            continue
        who = _who_signed(signed, trusted)
        signed_by_trusted = (
            signed_by_trusted
            or bool(who.valid)
            or who.named is not None
            or any(s.status == "invalid" for s in who.signers)
        )
        problem = _signature_problem(signed, who, by_key, digest, facts)
        if problem is not None:
            findings.append(problem)
        statuses.append(_status(name, signed, who, problem, bool(by_key)))
    if by_key and not signed_by_trusted:
        findings.append(
            _finding(
                "signature-missing",
                layout.SIGNATURES.rstrip("/"),
                "no signature by a trusted key",
                "a signature by one of " + ", ".join(sorted(by_key)),
                "none",
            )
        )
    return statuses
