"""Derived files compared again: each stored derived file with its re-derivation, byte for
byte, or value by value within the numeric policy's tolerance where a value is a figure (the
aggregates, scores, contrasts and rliable's aggregates from the runs; the ledger, the tiers and
the report from the stored figures where those are accepted), each difference named."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from attrs import evolve

from repro import _layout as layout
from repro._derive.contrasts import judged as judged_contrasts
from repro._derive.derivation import Derived, Figures
from repro._derive.report import MARKER_BYTES, MARKERS, REPORT_VERSION
from repro._derive.report import version_of as report_version_of
from repro._json import canonical
from repro._json.serde import unstructure
from repro._stats.figures import LIBRARY_FIGURES, same_figure
from repro.models import ContrastsFile, Tiers
from repro.verify._content.stored import Stored
from repro.verify._findings import MAX_DIFFS, Finding, Location
from repro.verify._reader import BundleReader


def differences(
    expected: Any,
    found: Any,
    path: str = "$",
    tolerant: frozenset[str] | None = frozenset(),
    key: str = "",
) -> Iterator[tuple[str, Any, Any]]:
    """Each value of ``found`` (a stored file, as plain data) that is not the re-derived
    ``expected``: a float stored under a key of ``tolerant`` (None: any key) is the same figure
    within the numeric policy's tolerance (:func:`repro._stats.figures.same_figure`); anything
    else is equal, of the same type."""
    if isinstance(expected, dict) and isinstance(found, dict):
        for k in sorted(set(expected) | set(found)):
            yield from differences(expected.get(k), found.get(k), f"{path}.{k}", tolerant, k)
    elif isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        for i, (e, f) in enumerate(zip(expected, found, strict=True)):
            yield from differences(e, f, f"{path}[{i}]", tolerant, key)
    elif type(expected) is float and type(found) is float and (tolerant is None or key in tolerant):
        if not same_figure(found, expected):
            yield path, expected, found
    elif expected != found or type(expected) is not type(found):
        yield path, expected, found


def short(value: Any) -> str:
    text = canonical.dumps(value, newline=False).decode() if value is not None else "absent"
    return text if len(text) <= 120 else text[:117] + "..."


def compare(
    name: str, expected: Any, found_bytes: bytes | None, findings: list[Finding], found: Any
) -> bool:
    """Compare the stored file ``name`` (its bytes and its parsed value ``found``) with its
    re-derivation ``expected``, naming each difference; whether it is accepted: the same bytes,
    or canonical bytes of values that differ from the re-derived ones only in figures within
    the numeric policy's tolerance."""
    if found_bytes is None or found is None:
        return False
    expected_plain = unstructure(expected)
    if canonical.dumps(expected_plain) == found_bytes:
        return True
    found_plain = unstructure(found)
    diffs = list(
        differences(expected_plain, found_plain, tolerant=LIBRARY_FIGURES.get(name, frozenset()))
    )
    if not diffs and found_plain != expected_plain and canonical.dumps(found_plain) == found_bytes:
        return True
    for path, e, f in diffs[:MAX_DIFFS]:
        findings.append(
            Finding(
                "rederived-differs",
                name,
                f"re-derived value differs @ {path}",
                short(e),
                short(f),
                Location(path=path),
            )
        )
    if len(diffs) > MAX_DIFFS:
        findings.append(
            Finding(
                "rederived-differs-more",
                name,
                f"{len(diffs) - MAX_DIFFS} further differing values",
                "none",
                "differences",
            )
        )
    if not diffs:
        findings.append(
            Finding(
                "rederived-bytes-differ",
                name,
                "re-derived bytes differ",
                "canonical re-derivation",
                "other bytes",
            )
        )
    return False


def compare_derived(
    read: BundleReader,
    stored: Stored,
    derive_from: Callable[[Figures, Tiers | None], Derived],
    figures: Figures,
) -> None:
    """Compare each derived file the bundle holds with its re-derivation: the figures, computed
    from the runs (``figures``), within the numeric policy's tolerance (a contrast's verdict,
    and what else follows from its figures, derived again from the stored figures:
    :func:`repro._derive.contrasts.judged`); then what follows from the figures
    (``derive_from``: the ledger's losses, the tiers, the report) derived from the stored
    figures where they are accepted, and the report also from the stored tiers where those
    are: so that only a figure's own difference is named, never the last bits of a library that
    made it another way, and no verdict or rounded figure turns on them."""
    named: dict[str, list[Finding]] = {}
    kept = _accepted_figures(read, stored, figures, named)
    derived = derive_from(kept, None)
    ledger_out = named.setdefault(layout.LEDGER, [])
    compare(layout.LEDGER, derived.ledger, read.raw(layout.LEDGER), ledger_out, stored.ledger)
    tiers_out = named.setdefault(layout.TIERS, [])
    tiers_ok = compare(layout.TIERS, derived.tiers, read.raw(layout.TIERS), tiers_out, stored.tiers)
    # Each file's findings in the order verify has always named them.
    for name in (layout.LEDGER, layout.AGGREGATES, layout.TIERS, *FIGURES_AFTER_TIERS):
        read.findings.extend(named.get(name, []))
    if stored.report is None:
        return
    text = derived.report
    if tiers_ok and stored.tiers != derived.tiers:
        # The report tells the stored tiers, within the tolerance of the re-derived ones.
        text = derive_from(kept, stored.tiers).report
    if stored.report != text.encode():
        read.findings.append(
            Finding(
                "report-differs",
                layout.REPORT,
                "report differs from its re-derivation",
                "re-derived text",
                "other text",
            )
        )


def _accepted_figures(
    read: BundleReader, stored: Stored, figures: Figures, named: dict[str, list[Finding]]
) -> Figures:
    """Compare each stored file of figures with its re-derivation from the runs (``figures``),
    each file's differences put in ``named``; the figures what follows from them is derived
    from: each file's stored figures where they are accepted, the re-derived ones otherwise."""
    accepted: dict[str, Any] = {}
    for name, expected, found in (
        (layout.AGGREGATES, figures.aggregates, stored.aggregates),
        (layout.SCORES, figures.scores, stored.scores),
        (layout.CONTRASTS, figures.contrasts, stored.contrasts),
        (layout.RL_AGGREGATES, figures.rl, stored.rl),
    ):
        accepted[name] = expected
        if expected is None or found is None:
            continue
        raw, out = read.raw(name), named.setdefault(name, [])
        ok = compare(name, _judged_as(expected, found), raw, out, found)
        if isinstance(found, ContrastsFile) and stored.protocol is not None:
            ok = compare(name, judged_contrasts(stored.protocol, found), raw, out, found) and ok
        if ok:
            accepted[name] = found
    return Figures(
        aggregates=accepted[layout.AGGREGATES],
        scores=accepted[layout.SCORES],
        contrasts=accepted[layout.CONTRASTS],
        rl=accepted[layout.RL_AGGREGATES],
    )


#: The derived files verify compares after the tiers, in that order.
FIGURES_AFTER_TIERS = (layout.SCORES, layout.CONTRASTS, layout.RL_AGGREGATES)


def _judged_as(expected: Any, found: Any) -> Any:
    """The re-derived file ``expected`` as it is compared with the stored ``found``: a contrasts
    file with each contrast's judgement (adjusted p-value, verdict, reason) the stored one's,
    which is checked against the stored figures instead (:func:`repro._derive.contrasts.judged`),
    not against re-derived figures that may differ within the tolerance."""
    if not isinstance(found, ContrastsFile) or not isinstance(expected, ContrastsFile):
        return expected
    if len(found.contrasts) != len(expected.contrasts):
        return expected
    return evolve(
        expected,
        contrasts=tuple(
            evolve(e, p_adjusted=f.p_adjusted, verdict=f.verdict, reason=f.reason)
            for e, f in zip(expected.contrasts, found.contrasts, strict=True)
        ),
    )


def report_version(read: BundleReader, report: bytes | None) -> int | None:
    """The version the stored report declares by its first line
    (:func:`repro._derive.report.version_of`), re-derived as that version: 1 without a marker,
    so that every report written before the marker keeps verifying. A marker verify does not
    know is named, and leaves the report unjudged (None); a missing report (named by the
    reader) is the current version."""
    if report is None:
        return REPORT_VERSION
    version = report_version_of(report)
    if version is None:
        read.findings.append(
            Finding(
                "report-version",
                layout.REPORT,
                "validation report declares a version verify does not know",
                " or ".join(MARKERS.values()) + " or none",
                short(report[:MARKER_BYTES].partition(b"\n")[0].decode("utf-8", "replace")),
            )
        )
    return version
