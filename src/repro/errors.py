"""One exception family for repro, and the exit codes the CLI maps it to."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from repro._execute.studies import StudyResult
    from repro.verify._findings import Finding

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CODES",
    "EXIT_OK",
    "EXIT_SIGNAL_BASE",
    "EXIT_SLOTS_LOST",
    "EXIT_STUDY_STOPPED",
    "EXIT_VERIFY_FAILED",
    "PROBLEM_CODES",
    "BadInput",
    "ClusterFailed",
    "FieldError",
    "Interrupted",
    "NotVerified",
    "Problem",
    "Refused",
    "ReproError",
    "RunFailed",
    "RunInvalid",
    "SlotsLost",
    "StudyStopped",
    "exit_code",
    "install_hint",
]

EXIT_OK = 0
EXIT_VERIFY_FAILED = 1
EXIT_BAD_INPUT = 2
#: A study stopped by an I/O error or a failed cluster after its root was created; signals exit
#: 128 + the signal.
EXIT_STUDY_STOPPED = 3
#: ``repro study --strict``: the study finished and its bundle is whole, but some slot it ran did
#: not end valid (failed, or excluded at run time, such as a superseded scenario version).
EXIT_SLOTS_LOST = 4
#: A study stopped by signal N exits EXIT_SIGNAL_BASE + N (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
EXIT_SIGNAL_BASE = 128


class ReproError(Exception):
    """Base of every error repro raises on purpose."""


#: The codes a :class:`Problem` carries, each with what it means (docs/commands.md lists them).
PROBLEM_CODES: dict[str, str] = {
    "wrong-type": "a value of the wrong JSON type (a string where a number goes)",
    "missing-field": "a required key is absent",
    "unknown-field": "a key the schema does not have",
    "not-allowed": "a value of the right type that the field does not allow",
    "duplicate": "a name, id or value given twice where each must be unique",
    "unknown-name": "a reference to a factor, level, participant, slot or check that is not there",
    "inconsistent": "fields each valid alone that do not fit together",
    "over-limit": "a size or count over one of repro's limits",
    "unreadable": "a file that cannot be read or is not JSON",
    "not-found": "a module, target, file or environment the input names that cannot be found, "
    "imported or built",
    "bad-input": "an input refused in words alone, with no JSON path (an adapter's own refusal)",
}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where (``path``, a JSON path such as
    ``$.conditions[0].seeds``, or ``$`` for the whole document), what (``message``, in words)
    and which kind (``code``, one of :data:`PROBLEM_CODES`)."""

    path: str
    message: str
    code: str

    def __str__(self) -> str:
        return f"{self.message} @ {self.path}"

    def as_dict(self) -> dict[str, str]:
        """The problem as JSON data: ``path``, ``message`` and ``code``."""
        return {"path": self.path, "message": self.message, "code": self.code}


class BadInput(ReproError):
    """Input that repro cannot use: a bad protocol, an existing output root, an unreadable bundle.

    ``problems`` names each problem of an input that has a JSON path (a protocol's field), as
    data; the message is the text, which is all an input without one (a missing file) has. The
    CLI exits 2 with the message and writes nothing.
    """

    def __init__(self, message: str, problems: Iterable[Problem] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)

    @classmethod
    def of(cls, subject: str, problems: Iterable[Problem]) -> BadInput:
        """Refuse ``subject`` (``protocol``, ``protocol p.json``) for ``problems``: the message
        is the subject and each problem, ``message @ path``, joined by ``; ``."""
        listed = tuple(problems)
        return cls(f"{subject}: " + "; ".join(map(str, listed)), listed)

    @classmethod
    def at(cls, path: str, message: str, code: str, subject: str = "protocol") -> BadInput:
        """Refuse ``subject`` for one problem, :class:`Problem` ``(path, message, code)``: the
        message is ``subject: message @ path``."""
        return cls.of(subject, [Problem(path, message, code)])

    def __reduce__(self) -> tuple[Any, ...]:
        # A worker process raises it to the study's: its problems go along.
        return (type(self), (str(self), self.problems))


class FieldError(ReproError, ValueError):
    """A field value of the right type that a model's validator refuses; ``field`` names it.
    A ValueError too, as attrs and cattrs expect of a validator's refusal: the converter turns
    it into :class:`BadInput` naming the JSON path."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class NotVerified(ReproError):
    """The bundle does not verify; ``findings`` (:class:`repro.verify._findings.Finding`) names
    each problem. The CLI exits 1."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        super().__init__(f"{len(findings)} finding(s)")
        self.findings = tuple(findings)


class Refused(ReproError):
    """A command refuses to go on: the bundle does not verify, or a publish gate fails;
    ``reasons`` names each. The CLI exits 1."""

    def __init__(self, reasons: Sequence[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = tuple(reasons)


class RunFailed(ReproError):
    """An adapter could not complete one run; ``cause`` is a short code, never a traceback.
    ``stderr`` is what the run's process wrote to its standard error, if the adapter ran one:
    shown on the user's terminal by ``repro replay --traceback``, never recorded."""

    def __init__(self, cause: str, stderr: bytes | None = None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.stderr = stderr


class RunInvalid(ReproError):
    """A run completed but what it yielded is unusable (an outcome that is not JSON, or breaks
    its schema); ``cause`` is a short code. The attempt is recorded invalid. ``stderr`` is as
    :class:`RunFailed`'s: for the terminal only, never recorded."""

    def __init__(self, cause: str, stderr: bytes | None = None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.stderr = stderr


class ClusterFailed(ReproError):
    """The Dask cluster could not run a partition to its end (its task failed, or Dask gave up on
    it after losing workers); the study stops with its root incomplete."""


class StudyStopped(ReproError):
    """A study stopped before it finished (a signal, an I/O error). Its root exists but is
    incomplete: it has no tag manifest, so it never verifies. The CLI exits ``exit_code``."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class SlotsLost(ReproError):
    """``repro.study(..., strict=True)``: the study finished and its bundle is whole, but
    ``lost`` slots that ran did not end valid (failed, or excluded at run time); ``result`` is
    the study's :class:`repro._execute.studies.StudyResult`. ``repro study --strict`` exits
    ``EXIT_SLOTS_LOST`` for the same."""

    def __init__(self, result: StudyResult, lost: int) -> None:
        super().__init__(
            f"{lost} slot(s) that ran did not end valid; {result.root} is whole (strict)"
        )
        self.result = result
        self.lost = lost


class Interrupted(BaseException):
    """SIGTERM or SIGHUP arrived while a study ran; raised like KeyboardInterrupt so that no
    ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: The exit code of each error that reaches the command line, by its class (the nearest class in
#: an error's MRO decides). :class:`StudyStopped` carries its own (3, or 128 + the signal).
EXIT_CODES: dict[type[ReproError], int] = {
    BadInput: EXIT_BAD_INPUT,
    NotVerified: EXIT_VERIFY_FAILED,
    Refused: EXIT_VERIFY_FAILED,
    ClusterFailed: EXIT_STUDY_STOPPED,
    StudyStopped: EXIT_STUDY_STOPPED,
    SlotsLost: EXIT_SLOTS_LOST,
}


def exit_code(error: ReproError) -> int:
    """The exit code the command line ends with for ``error`` (:data:`EXIT_CODES`)."""
    if isinstance(error, StudyStopped):
        return error.exit_code
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    raise TypeError(f"no exit code for {type(error).__name__}")


def install_hint(extra: str) -> str:
    """How to get the packages of repro's optional ``extra``, in the README's words: installed,
    and from a clone; a refusal that a missing package causes ends with it: ``plotting needs
    matplotlib: install repro's plot extra: pip install 'repro-evidence[plot]' (from a clone:
    uv run --extra plot repro ...)``."""
    return (
        f"install repro's {extra} extra: pip install 'repro-evidence[{extra}]' "
        f"(from a clone: uv run --extra {extra} repro ...)"
    )
