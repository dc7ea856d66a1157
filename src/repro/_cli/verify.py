"""``repro verify``: check a bundle offline, or with ``--bagit-only`` a bag as BagIt alone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from repro._cli.output import emit, print_findings, print_warnings, verify_report
from repro._escape import json_text
from repro.errors import EXIT_VERIFY_FAILED, BadInput

if TYPE_CHECKING:
    from collections.abc import Sequence

    from repro._bundle.signatures import PublicKey
    from repro.verify import Limits, Verification

__all__ = ["VERIFY_LIMITS", "verify"]

#: The limits ``repro verify --limit`` sets, as :class:`repro.verify.Limits` names them (named
#: here so that the command line's help needs no import of the verifier;
#: tests/test_verify_hardening.py holds it to the class).
VERIFY_LIMITS = (
    "max_files",
    "max_file_bytes",
    "max_total_bytes",
    "max_depth",
    "max_json_depth",
    "max_resamples",
    "max_derivation_work",
    "max_held_file_bytes",
    "max_line_bytes",
    "max_findings",
    "max_bad_lines",
    "max_signatures",
    "max_signature_bytes",
    "max_envelope_signatures",
    "max_compression_ratio",
    "max_archive_index_bytes",
    "max_archive_ratio",
)


_Bundle = Annotated[
    Path,
    typer.Argument(help="Verify this bundle directory, or this packed bundle (.zip or .tar)."),
]
_AsJson = Annotated[bool, typer.Option("--json", help="Print findings as JSON.")]
_TrustedKey = Annotated[
    list[Path] | None,
    typer.Option(
        "--trusted-key",
        help="An Ed25519 public key you trust (OpenSSH .pub or PEM; repeatable): every "
        "signature in the bundle's signatures/ must be by one of them and check against the "
        "bundle as it is, and one at least must be there.",
        show_default=False,
    ),
]
_Jobs = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        min=1,
        help="Run this many jobs at a time (default: REPRO_VERIFY_JOBS, else the cores repro "
        "may run on); the findings are the same whatever it is.",
        show_default=False,
    ),
]
_Limit = Annotated[
    list[str] | None,
    typer.Option(
        "--limit",
        metavar="NAME=N",
        help="Raise (or lower) a limit verify reads and re-derives within (repeatable; a "
        f"finding names the limit a bundle goes past): {', '.join(VERIFY_LIMITS)}. Their "
        "defaults are in docs/guarantees.md and repro.verify.Limits.",
        show_default=False,
    ),
]
_BagitOnly = Annotated[
    bool,
    typer.Option(
        "--bagit-only",
        help="Check the path as a BagIt bag alone, whoever wrote it: BagIt 1.0 or 0.97 "
        "(earlier drafts read as 0.97), its declaration, every manifest and digest, "
        "fetch.txt (whose files must be there: nothing is fetched) and bag-info.txt's "
        "Payload-Oxum. It checks none of a repro bundle's content or signatures. What "
        "BagIt tolerates but a careful bag avoids is named as a warning, which does not "
        "fail the bag.",
    ),
]


def verify(
    bundle: _Bundle,
    as_json: _AsJson = False,
    trusted_key: _TrustedKey = None,
    jobs: _Jobs = None,
    limit: _Limit = None,
    bagit_only: _BagitOnly = False,
) -> None:
    """Check a bundle offline: integrity, strict parse and schema, joins, re-derivations, and
    with --trusted-key its signatures.

    Without a trusted key each signature is listed by its key's fingerprint as not checked. A
    valid BagIt bag that is not a repro bundle is bad input; --bagit-only checks it as a bag."""
    # Lazy: `repro --help` imports this module; only `repro verify` loads the verifier.
    from repro.verify import verification
    from repro.verify._limits import Limits, with_limits

    limits = with_limits(Limits(), limit or [])
    if bagit_only:
        if trusted_key:
            raise BadInput("--trusted-key checks a bundle's signatures: --bagit-only reads none")
        _verify_bag(bundle, as_json, limits, jobs)
        return
    keys = _trusted_keys(trusted_key or [])
    done = verification(bundle, keys, limits, jobs=jobs)
    if as_json:
        report = verify_report(done.findings, done.bundle_sha256)
        if done.signatures or keys:  # a bundle without signatures reports as it always did
            report["signatures"] = [s.as_dict() for s in done.signatures]
        emit(json_text(report))
    elif done.findings:
        print_findings(bundle, done.findings)
    else:
        _print_verified(bundle, done)
    if done.findings:
        raise typer.Exit(EXIT_VERIFY_FAILED)


def _print_verified(bundle: Path, done: Verification) -> None:
    """Say that ``bundle`` verifies, by its digest, and name each signature it holds."""
    emit(f"OK: {bundle} verifies (integrity, schema, joins, re-derived aggregates, tiers, class)")
    # What was verified, by its identity: compare it with a published digest to know that
    # the files no re-derivation covers (environment.json, bag-info.txt) are the originals.
    emit(f"bundle sha256: {done.bundle_sha256}")
    for s in done.signatures:
        said = "not checked" if s.status == "not-checked" else f"{s.kind} statement verified"
        emit(f"signature {s.file}: key {s.keyid or '(no keyid)'} {said}")
        others = [x for x in s.signers if x.key != s.keyid or x.status != "verified"]
        if len(s.signers) > 1 and others:
            listed = ", ".join(f"{x.keyid or '(no keyid)'} {x.status}" for x in others)
            emit(f"  other signatures in the envelope: {listed}")
        if s.summary is not None:
            emit(f"  {s.kind}: {s.summary}")


def _trusted_keys(paths: Sequence[Path]) -> list[PublicKey]:
    """The public keys of ``--trusted-key``, each once (none imports no cryptography)."""
    if not paths:
        return []
    # Lazy: cryptography only when --trusted-key names keys.
    from repro._bundle.signatures import load_public_keys

    return load_public_keys(paths)


def _verify_bag(bag: Path, as_json: bool, limits: Limits, jobs: int | None) -> None:
    """``repro verify --bagit-only``: the bag checked as BagIt alone, its findings and warnings
    named; exit 1 when it is not a valid bag."""
    # Lazy: `repro --help` imports this module; only `repro verify` loads the verifier.
    from repro.verify import verify_bag

    done = verify_bag(bag, limits, jobs)
    if as_json:
        emit(
            json_text(
                {
                    "ok": not done.findings,
                    "bagit_version": done.version,
                    "findings": [f.as_dict() for f in done.findings],
                    "warnings": [w.as_dict() for w in done.warnings],
                }
            )
        )
    else:
        print_warnings(done.warnings)
        if done.findings:
            print_findings(bag, done.findings, "is not a valid BagIt bag")
        else:
            warned = f", {len(done.warnings)} warning(s)" if done.warnings else ""
            emit(
                f"OK: {bag} is a valid BagIt {done.version} bag (declaration, manifests, "
                f"completeness, every digest, fetch.txt, Payload-Oxum){warned}"
            )
    if done.findings:
        raise typer.Exit(EXIT_VERIFY_FAILED)
