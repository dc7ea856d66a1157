"""What verify reports: a :class:`Finding` per problem (a stable ``code``, the file, what, what
was expected, what was found) and the capped list one verification collects."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from attrs import evolve, field, frozen

from repro import _layout as layout

#: At most this many findings of one kind in one file are listed one by one; the rest are counted.
MAX_DIFFS = 25


#: Characters of each text of a finding at most.
MAX_FINDING_TEXT = 400


#: How the first finding on an unfinished study begins.
INCOMPLETE = "incomplete:"


def _clip(text: str) -> str:
    """``text`` cut to :data:`MAX_FINDING_TEXT` characters: a finding quotes what a bundle holds,
    and a hostile bundle may hold anything, of any length."""
    if len(text) <= MAX_FINDING_TEXT:
        return text
    return f"{text[: MAX_FINDING_TEXT - 40]}... ({len(text)} characters in all)"


@frozen
class Location:
    """Where in its file a finding is, as data: the line (1-based, of a JSON-lines file or a
    manifest), the JSON path inside the value (``$.step_rewards[3]``), and the slot or attempt ID
    it concerns; each None where it does not apply or is not known."""

    line: int | None = None
    path: str | None = None
    item: str | None = None

    def as_dict(self) -> dict[str, int | str | None]:
        """Plain data for ``--json``."""
        return {"line": self.line, "path": self.path, "item": self.item}


#: A finding about a file as a whole.
WHOLE_FILE = Location()


@frozen
class Finding:
    """One verification problem: a stable machine-readable ``code`` (kebab-case; what tests and
    ``--json`` users match), which file, what, what was expected and what was found (each text
    at most :data:`MAX_FINDING_TEXT` characters), and where in the file (:class:`Location`)."""

    code: str
    file: str = field(converter=_clip)
    what: str = field(converter=_clip)
    expected: str = field(converter=_clip)
    found: str = field(converter=_clip)
    #: Not compared: the texts already say where, and two findings that say the same of the
    #: same file are one finding.
    location: Location = field(default=WHOLE_FILE, eq=False)
    #: For a re-derivation that differs (:data:`CONSEQUENCES`), the findings on the files it is
    #: derived from that it follows from, as (code, file): the stored value may be the right one,
    #: re-derived from inputs that changed (:func:`with_causes`). Empty for a root cause.
    follows_from: tuple[tuple[str, str], ...] = field(default=(), eq=False)

    @property
    def incomplete(self) -> bool:
        """Whether this finding says the root is an unfinished study rather than a tampered
        bundle."""
        return self.what.startswith(INCOMPLETE)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json`` (with ``follows_from`` where the finding follows from
        others: each as its code and file)."""
        out: dict[str, Any] = {
            "code": self.code,
            "file": self.file,
            "what": self.what,
            "expected": self.expected,
            "found": self.found,
            "location": self.location.as_dict(),
        }
        if self.follows_from:
            out["follows_from"] = [{"code": c, "file": f} for c, f in self.follows_from]
        return out


class Findings(list[Finding]):
    """The findings of one verification, at most ``cap`` of them listed: past it, findings are
    counted, not kept (:meth:`close` adds the count as one last finding)."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap
        self.dropped = 0

    def append(self, finding: Finding) -> None:
        if len(self) < self.cap:
            super().append(finding)
        else:
            self.dropped += 1

    def extend(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self.append(finding)

    def __iadd__(self, findings: Iterable[Finding]) -> Findings:  # type: ignore[override, misc]
        self.extend(findings)
        return self

    def close(self) -> list[Finding]:
        """The findings as a plain list, with the count of those not listed last."""
        out = list(self)
        if self.dropped:
            out.append(
                Finding(
                    "findings-limit",
                    ".",
                    f"{self.dropped} further finding(s) not listed: the limit max_findings",
                    f"<= {self.cap} findings listed",
                    f"{self.cap + self.dropped} findings",
                )
            )
        return out


#: The codes of a stored derived file found other than its re-derivation: a consequence, when
#: a file it is derived from is itself named (:func:`with_causes`).
CONSEQUENCES = frozenset(
    {
        "rederived-differs",
        "rederived-differs-more",
        "rederived-bytes-differ",
        "report-differs",
        "crate-differs",
    }
)


def _input(name: str) -> bool:
    """Whether the re-derivations read ``name``: the derivations' inputs and the attempts'
    times, which the crate's re-derivation reads."""
    return layout.is_derivation_input(name) or name.startswith("data/times/")


def with_causes(findings: Sequence[Finding]) -> list[Finding]:
    """``findings``, each re-derivation that differs marked as following from the findings on
    the files it is derived from, when there are any: a run record edited makes the stored
    aggregates differ from their re-derivation though they are the study's own, and it is the
    record that changed. Without such a finding, a derived file that differs is its own root
    cause."""
    causes = tuple(
        dict.fromkeys(
            (f.code, f.file) for f in findings if f.code not in CONSEQUENCES and _input(f.file)
        )
    )
    if not causes:
        return list(findings)
    return [evolve(f, follows_from=causes) if f.code in CONSEQUENCES else f for f in findings]
