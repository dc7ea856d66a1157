"""``repro audit``: re-execute a sample of a bundle's slots (or all) and compare them byte for
byte, optionally signing the result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import attrs
import typer

from repro._cli.options import AdapterOptions, AsJson, Sources, Traceback, parse_options
from repro._cli.output import emit, err_console
from repro._escape import json_text, visible
from repro.errors import EXIT_VERIFY_FAILED, BadInput

__all__ = ["audit"]

_Bundle = Annotated[
    Path, typer.Argument(help="Audit this bundle, a directory or packed; it must verify.")
]
_Sample = Annotated[
    int | None,
    typer.Option(
        "--sample",
        help="Re-execute N slots, drawn without replacement from the slots that ran by a "
        "generator seeded with the bundle's sha256 (the same N slots for everyone).",
        show_default=False,
    ),
]
_All = Annotated[bool, typer.Option("--all", help="Re-execute every slot that ran.")]
_Sign = Annotated[
    Path | None,
    typer.Option(
        "--sign",
        help="Sign the audit's result with this Ed25519 private key (OpenSSH or PEM) and "
        "write it beside the bag as signatures/<key>.audit.dsse.json, for verify to report; "
        "and a verification summary (an SLSA VSA) beside the bundle as "
        "BUNDLE.audit.vsa.dsse.json (or --vsa), passed or failed.",
        show_default=False,
    ),
]
_Vsa = Annotated[
    Path | None,
    typer.Option(
        "--vsa",
        help="Write the audit's verification summary here instead (a new file: none is replaced).",
        show_default=False,
    ),
]
#: What an audit's verification summary is named after its bundle, when no --vsa.
AUDIT_VSA_SUFFIX = ".audit.vsa.dsse.json"


def audit(
    bundle: _Bundle,
    sample: _Sample = None,
    every_slot: _All = False,
    option: AdapterOptions = None,
    as_json: AsJson = False,
    show_traceback: Traceback = False,
    sources: Sources = None,
    sign: _Sign = None,
    vsa: _Vsa = None,
) -> None:
    """Re-execute a sample of the bundle's slots (or --all) and compare them byte for byte.

    The simulator must pin what the bundle's ledger pins, as for replay. In stream mode each
    drawn slot is re-executed from the nearest kept generator state before it, through the
    next kept state, which must match (chaining). A clean sample of N bounds the fraction of
    slots that could differ: at 95%, 1 - 0.05^(1/N) (4.95% for N = 59)."""
    # Lazy: `repro --help` imports this module; only `repro audit` runs the study machinery.
    from repro._execute.audit import audit as audit_bundle
    from repro._execute.audit import sign_audit

    if (sample is None) == (not every_slot):
        raise BadInput("give exactly one of --sample N and --all")
    summary = _summary_path(bundle, sign, vsa)
    result = audit_bundle(bundle, sample, parse_options(option or []), show_traceback, sources)
    signed = None if sign is None else sign_audit(bundle, result, sign)
    if sign is not None and summary is not None:
        _summarise(result, sample, sign, summary)
    if as_json:
        extra = {
            "identical": result.identical,
            "attempts": result.attempts,
            "excluded_fraction": result.excluded_fraction,
        }
        emit(json_text(attrs.asdict(result) | extra))
    else:
        _print_audit(result)
        if signed is not None:
            emit(f"signed: wrote {signed}")
            emit(f"summary: wrote {summary}")
    if not result.identical:
        raise typer.Exit(EXIT_VERIFY_FAILED)


def _summary_path(bundle: Path, sign: Path | None, vsa: Path | None) -> Path | None:
    """Where the signed audit's summary goes (None unsigned), checked before the audit runs,
    with the key and the room for a signature. Raises BadInput."""
    if sign is None:
        if vsa is not None:
            raise BadInput("--vsa names where --sign writes the audit's summary: give --sign too")
        return None
    # Lazy: cryptography, only when the audit is signed.
    from repro._bundle.signatures import refuse_packed
    from repro._bundle.summaries import summary_path

    refuse_packed(bundle)
    return summary_path(bundle, sign, vsa, AUDIT_VSA_SUFFIX)


def _summarise(result: Any, sample: int | None, key: Path, path: Path) -> None:
    """Sign and write the audit's verification summary at ``path``: passed when every
    re-executed slot was byte-identical and every kept state chained."""
    # Lazy: cryptography, only when the audit is signed.
    from repro import version
    from repro._bundle.summaries import audit_policy, summary_statement, write_summary

    statement = summary_statement(
        result.bundle_sha256,
        version=version(),
        policy=audit_policy(sample),
        inputs=(),
        passed=result.identical,
        levels=["REPRO_AUDIT_IDENTICAL"],
    )
    write_summary(path, statement, key)


def _print_audit(result: Any) -> None:
    """The audit's lines: what was drawn, what was re-executed, what matched, what it bounds."""
    for slot in result.slots:
        for difference in slot.differences:
            err_console().print(visible(f"DIFF {difference}", newlines=False))
    for link in result.chained:
        if not link.matched:
            err_console().print(
                f"CHAIN {link.partition}: the state re-executed up to {link.before} is not the "
                "one the bundle keeps there",
                highlight=False,
                markup=False,
            )
    drawn = len(result.sampled)
    how = (
        f"every one of the {result.population} slot(s) that ran"
        if drawn >= result.population
        else f"{drawn} of the {result.population} slot(s) that ran, drawn from the bundle's "
        f"sha256 {result.bundle_sha256[:12]}..."
    )
    differing = sum(1 for s in result.slots if s.differences)
    broken = sum(1 for c in result.chained if not c.matched)
    emit(f"audit: {how}", prose=True)
    emit(
        f"re-executed {len(result.slots)} slot(s), {result.attempts} attempt(s): "
        f"{len(result.slots) - differing} byte-identical, {differing} differ; "
        f"{len(result.chained)} kept state(s) chained, {broken} broken",
        prose=True,
    )
    fraction = result.excluded_fraction
    if not result.identical:
        emit("audit: FAILED")
    elif fraction is None:
        emit("audit: clean; every slot that ran was re-executed")
    else:
        emit(
            f"audit: clean; at 95%, it excludes that {fraction:.2%} or more of the slots that "
            "ran differ from what this simulator gives",
            prose=True,
        )
