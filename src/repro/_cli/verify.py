"""``repro verify``: check a bundle offline, or with ``--bagit-only`` a bag as BagIt alone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from repro import version
from repro._cli.output import emit, err_console, print_findings, print_warnings, verify_report
from repro._escape import json_text
from repro.errors import EXIT_VERIFY_FAILED, BadInput

if TYPE_CHECKING:
    from collections.abc import Sequence

    from repro._bundle.signatures import PublicKey
    from repro.verify import Limits, Verification

__all__ = ["VERIFY_LIMITS", "VSA_SUFFIX", "verify"]

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
_Attest = Annotated[
    Path | None,
    typer.Option(
        "--attest",
        help="Sign a verification summary (an SLSA VSA: who verified which bundle, when, "
        "against which policy, and the result) with this Ed25519 private key, and write it "
        "beside the bundle as BUNDLE.vsa.dsse.json (or --vsa), passed or failed.",
        show_default=False,
    ),
]
_Vsa = Annotated[
    Path | None,
    typer.Option(
        "--vsa",
        help="Write the verification summary here instead (a new file: none is replaced).",
        show_default=False,
    ),
]
#: What a verification summary of ``repro verify`` is named after its bundle, when no --vsa.
VSA_SUFFIX = ".vsa.dsse.json"


def verify(
    bundle: _Bundle,
    as_json: _AsJson = False,
    trusted_key: _TrustedKey = None,
    jobs: _Jobs = None,
    limit: _Limit = None,
    bagit_only: _BagitOnly = False,
    attest: _Attest = None,
    vsa: _Vsa = None,
) -> None:
    """Check a bundle offline: integrity, strict parse and schema, joins, re-derivations, and
    with --trusted-key its signatures.

    Without a trusted key each signature is listed by its key's fingerprint as not checked. A
    valid BagIt bag that is not a repro bundle is bad input; --bagit-only checks it as a bag.
    With --attest, a signed summary of the result is written beside the bundle."""
    # Lazy: `repro --help` imports this module; only `repro verify` loads the verifier, and
    # --bagit-only its BagIt stage alone.
    from repro.verify._limits import Limits, with_limits

    limits = with_limits(Limits(), limit or [])
    summary = _summary_path(bundle, attest, vsa, bagit_only)
    if bagit_only:
        if trusted_key:
            raise BadInput("--trusted-key checks a bundle's signatures: --bagit-only reads none")
        _verify_bag(bundle, as_json, limits, jobs)
        return
    # Lazy: the whole verifier, only when the whole bundle is verified.
    from repro.verify import verification

    keys = _trusted_keys(trusted_key or [])
    done = verification(bundle, keys, limits, jobs=jobs)
    if attest is not None and summary is not None:
        _attest(done, attest, summary, limits, keys)
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
    emit(
        f"OK: {bundle} verifies (integrity, schema, joins, re-derived aggregates, tiers, class)",
        prose=True,
    )
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


def _summary_path(
    bundle: Path, attest: Path | None, vsa: Path | None, bagit_only: bool
) -> Path | None:
    """Where --attest writes its summary (None without --attest), checked before anything is
    read: a usable key, and a new file in a directory that is there. Raises BadInput."""
    if attest is None:
        if vsa is not None:
            raise BadInput("--vsa names where --attest writes its summary: give --attest KEY too")
        return None
    if bagit_only:
        raise BadInput("--attest summarises a whole verify: --bagit-only checks the bag alone")
    # Lazy: cryptography only when a summary is signed.
    from repro._bundle.summaries import summary_path

    return summary_path(bundle, attest, vsa, VSA_SUFFIX)


def _attest(
    done: Verification, key: Path, path: Path, limits: Limits, keys: Sequence[PublicKey]
) -> None:
    """Sign and write the summary of ``done`` at ``path``: passed when the bundle verifies,
    failed otherwise (a bundle with no tag manifest to name it by gets none, said on stderr)."""
    # Lazy: attrs and cryptography only when a summary is signed.
    import attrs

    # Lazy: as above.
    from repro._bundle.summaries import summary_statement, verify_policy, write_summary

    digest = done.tagmanifest_sha256
    if digest is None:
        err_console().print(
            "no verification summary written: the bundle has no tag manifest to name it by",
            highlight=False,
            markup=False,
        )
        return
    used = [
        (s.file, sha)
        for s in done.signatures
        if s.status == "verified" and (sha := done.file_sha256(s.file)) is not None
    ]
    levels = ["REPRO_BUNDLE_VERIFIED", f"REPRO_REPRODUCTION_{str(done.reproduction).upper()}"]
    if used:
        levels.append("REPRO_SIGNATURES_VERIFIED")
    statement = summary_statement(
        digest,
        version=version(),
        policy=verify_policy(attrs.asdict(limits), [k.fingerprint for k in keys]),
        inputs=used,
        passed=done.ok,
        levels=levels,
    )
    write_summary(path, statement, key)
    err_console().print(f"wrote verification summary {path}", highlight=False, markup=False)


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
    # Lazy: `repro --help` imports this module; the BagIt stage alone, not the whole verifier.
    from repro.verify._bag import verify_bag

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
                f"completeness, every digest, fetch.txt, Payload-Oxum){warned}",
                prose=True,
            )
    if done.findings:
        raise typer.Exit(EXIT_VERIFY_FAILED)
