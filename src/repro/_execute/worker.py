"""Adapter sessions run in a child process, so that a run which raises, returns garbage, hangs
past the protocol's timeout or kills its process ends as one recorded attempt, never as the end
of the study.

The parent (:class:`Worker`) sends requests over a socket and waits for a run's answer at most
the protocol's ``retry.timeout_seconds``, and for anything else (the child's start, which
imports and freezes the adapter, and a session's opening and closing) at most
``retry.open_timeout_seconds``, a generous bound of its own, so that a busy machine's slow start
is never charged to a run. The child (:func:`_serve`) answers every request with plain
data it has already checked, so nothing an adapter returns can break the parent. A lost child
(timed out, killed, exited) is replaced for the next attempt; in ``stream`` seeding mode the
replacement resumes the generator stream from the state at the start of the lost attempt, which
the child reports after every run. In ``per-run`` seeding mode the child seeds the process-global
generators from each run's own seed before the run (:func:`seed_global_generators`), so no run
depends on which runs the same process served before it.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import multiprocessing
import multiprocessing.connection
import random
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from numbers import Real
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

import attrs
from attrs import frozen

from repro._derive.facts import contract_problems
from repro._disclosure import scan, short_cause
from repro._escape import visible
from repro._execute.interrupts import STOP_SIGNALS
from repro._execute.spares import Spares, spawn
from repro._json import canonical
from repro.adapters._base import (
    SIMULATOR_MODULES,
    Adapter,
    Evidence,
    Frozen,
    Session,
    code_of_bundle,
    targets_in,
)
from repro.adapters._lifetime import RunScope, die_with_parent, stopped_with_run
from repro.errors import ReproError, RunFailed, RunInvalid
from repro.models import (
    MAX_OUTCOME_BYTES,
    MAX_STEP_REWARDS,
    SHA256_HEX,
    Condition,
    HarnessFacts,
    PlanEntry,
    Protocol,
)

__all__ = [
    "MAX_OUTCOME_BYTES",
    "MAX_STEP_REWARDS",
    "CancelFlag",
    "Cancelled",
    "Failure",
    "Invalid",
    "Job",
    "RunScope",
    "Worker",
    "WorkerLost",
    "adapter_target",
    "check_evidence",
    "die_with_parent",
    "main",
    "open_session",
    "preloads",
    "run_entry",
    "seed_global_generators",
    "stopped_with_run",
]

#: How long a child that was asked to stop may take before it is killed.
_STOP_GRACE_SECONDS = 5.0
#: How often a worker with a cancel flag looks at it while it waits for an answer.
_CANCEL_POLL_SECONDS = 0.1


@frozen
class Failure:
    """An attempt that could not complete: ``status`` failed, with a cause code."""

    cause: str


@frozen
class Invalid:
    """An attempt that completed with unusable evidence: ``status`` invalid, with a cause code."""

    cause: str


class Cancelled(ReproError):
    """The study is stopping (:class:`Worker`'s ``cancel`` flag was set): the request was
    abandoned and the child killed."""


class CancelFlag(TypingProtocol):
    """Set when the study stops, by another thread or another process (``threading.Event``,
    ``distributed.Event``)."""

    def is_set(self) -> bool:
        """Whether the study is stopping."""


class WorkerLost(ReproError):
    """The child stopped answering: ``cause`` is ``timeout``, ``worker-died:SIGNAL`` or
    ``worker-exited:CODE``."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


_PLAIN_FLOAT = frozenset({float})


def _real(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def check_evidence(value: object) -> Evidence | Invalid:
    """The adapter's return value as well-typed :class:`Evidence` of plain floats and ints, or
    :class:`Invalid` naming the first thing wrong with it (finiteness is judged later, against
    the protocol's measure). Evidence too large for one run record (more than
    :data:`MAX_STEP_REWARDS` step rewards, an outcome of more than :data:`MAX_OUTCOME_BYTES`)
    is refused too: verify reads a run record as one line of bounded length."""
    if not isinstance(value, Evidence):
        return Invalid(f"evidence-type:{type(value).__name__}")
    rewards = value.step_rewards
    if rewards is not None:
        if not isinstance(rewards, Sequence) or isinstance(rewards, str | bytes):
            return Invalid("evidence-step-rewards-type")
        if len(rewards) > MAX_STEP_REWARDS:
            return Invalid("evidence-too-many-step-rewards")
        # Plain floats, the usual case, are checked in one C-level pass (a tuple of them is kept
        # as it is), without the slower test for any real.
        plain = set(map(type, rewards)) <= _PLAIN_FLOAT
        if not plain and not all(_real(r) for r in rewards):
            return Invalid("evidence-step-reward-type")
        if not plain or type(rewards) is not tuple:
            rewards = tuple(map(float, rewards))
    measure = value.reported_measure
    if measure is not None:
        if not _real(measure):
            return Invalid("evidence-measure-type")
        measure = float(measure)
    steps = value.steps
    if steps is not None:
        if not isinstance(steps, int) or isinstance(steps, bool):
            return Invalid("evidence-steps-type")
        if steps < 0 or steps >= 1 << 63:
            return Invalid("evidence-steps-range")
        steps = int(steps)
    trace = value.trace_sha256
    if trace is not None and not (isinstance(trace, str) and SHA256_HEX.fullmatch(trace)):
        return Invalid("evidence-trace-digest")
    outcome = value.outcome
    if outcome is not None:
        # The outcome goes into the bundle as it is: a JSON object that canonical JSON holds.
        try:
            data = canonical.dumps(outcome)
            if len(data) > MAX_OUTCOME_BYTES:
                return Invalid("evidence-outcome-too-large")
            outcome = canonical.loads(data, what="outcome", max_bytes=MAX_OUTCOME_BYTES + 1)
        except Exception:
            return Invalid("evidence-outcome-not-json")
        if not isinstance(outcome, dict):
            return Invalid("evidence-outcome-not-object")
    harness = value.harness
    if harness is not None and not isinstance(harness, HarnessFacts):
        return Invalid("evidence-harness-type")
    return Evidence(
        step_rewards=rewards,
        reported_measure=measure,
        steps=steps,
        trace_sha256=trace,
        outcome=outcome,
        harness=harness,
    )


def adapter_target(adapter: Adapter) -> str:
    """``module:Class`` of an adapter instance, from which a child rebuilds it."""
    cls = type(adapter)
    return f"{cls.__module__}:{cls.__qualname__}"


@frozen
class Job:
    """What a child needs to run sessions: the adapter (rebuilt from its class and frozen again
    from the protocol and options, which must give the parent's ``frozen`` exactly), and, in
    stream mode, where the generator stream starts."""

    adapter: str
    protocol: Protocol
    options: Mapping[str, str]
    frozen: Frozen
    stream: tuple[str, Any] | None
    #: Print the traceback of every exception an adapter raises to the worker's stderr (the
    #: user's terminal), for ``repro replay --traceback``. Never part of any record: a bundle
    #: keeps a short cause code only.
    tracebacks: bool = False
    #: The directory the protocol's module targets are looked up in first: the protocol file's
    #: (:func:`repro.adapters._base.targets_in`).
    target_root: str | None = None
    #: Whether the job re-executes a bundle (replay, audit): then the child imports and runs
    #: only what the bundle's ledger pins, from ``target_root``, as the parent did
    #: (:func:`repro.adapters._base.code_of_bundle`; ``frozen.sources`` are the ledger's).
    replaying: bool = False
    #: Files the bundle being re-executed carries that its adapter reads in place of those its
    #: protocol names (the recorded adapter's records: :func:`use_carried`), by bundle name.
    carried: tuple[tuple[str, bytes], ...] = ()


def use_carried(adapter: Adapter, carried: Sequence[tuple[str, bytes]]) -> None:
    """Give ``adapter`` the files a bundle being re-executed carries (``carried_from``, which
    only the recorded adapter has), before it freezes."""
    take = getattr(adapter, "carried_from", None)
    if carried and callable(take):
        take(dict(carried))


# --------------------------------------------------------------------------- the child


def _stream_state() -> tuple[str, Any]:
    numpy = sys.modules.get("numpy")
    return ("state", (random.getstate(), numpy.random.get_state() if numpy else None))


def seed_global_generators(seed: int) -> None:
    """Seed the process-global generators from a run's per-run seed (``seeding.mode`` per-run),
    so that an adapter or policy that draws from them gets the same numbers whichever runs this
    process served before: Python's :mod:`random` with the seed itself, and, if NumPy is
    imported, NumPy's legacy global generator (which takes at most 32 bits) with the seed's low
    32 bits, ``seed & 0xFFFFFFFF``."""
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed & 0xFFFF_FFFF)


def _restore_stream(stream: tuple[str, Any]) -> None:
    kind, value = stream
    if kind == "seed":
        random.seed(value)
        return
    python_state, numpy_state = value
    random.setstate(python_state)
    if numpy_state is not None:
        # Lazy: a worker loads NumPy only to restore a NumPy generator's state.
        import numpy

        algorithm, keys, pos, has_gauss, cached = numpy_state
        numpy.random.set_state(
            (algorithm, numpy.asarray(keys, dtype=numpy.uint32), pos, has_gauss, cached)
        )


def _show(job: Job, what: str, exc: BaseException) -> None:
    """With ``job.tracebacks``, print ``exc``'s traceback to stderr, the user's terminal."""
    if job.tracebacks:
        print(f"repro: {what} raised (shown here only; no bundle keeps it):", file=sys.stderr)
        # Its messages may quote what the run was given (a factor level of a bundle replayed):
        # their control characters are shown as text, as every line of the command line's is.
        sys.stderr.write(visible("".join(traceback.format_exception(exc))))
        stderr = getattr(exc, "stderr", None)
        if isinstance(stderr, bytes):
            # A harness's own account of its failure, which its exit code alone does not give.
            print(
                f"repro: harness stderr ({len(stderr)} bytes; not recorded in the bundle, which "
                "keeps only its length and sha256):",
                file=sys.stderr,
            )
            text = stderr.decode("utf-8", "replace")
            sys.stderr.write(visible(text if text.endswith("\n") or not text else text + "\n"))
        sys.stderr.flush()


def open_session(adapter: Adapter, job: Job, condition: Condition) -> tuple[Any, ...]:
    """Open ``condition``'s session: ``("opened", session, contract)`` or ``("open-failed",
    cause)``. A worker process and a study's threads open sessions so alike."""
    try:
        session = adapter.open(job.protocol, condition, job.frozen)
        contract = dict(session.contract)
    except Exception as exc:
        _show(job, f"opening the session of {condition.id}", exc)
        return ("open-failed", f"session-open-failed:{type(exc).__name__}")
    try:
        data = canonical.dumps(contract)  # the ledger must be able to hold it
    except Exception:
        return ("open-failed", "session-open-failed:contract-not-json")
    hits = scan("", data)
    if hits:  # nor may it say where or by whom the study ran
        return ("open-failed", f"session-open-failed:contract-discloses:{hits[0].kind}")
    # nor contradict the protocol or the pins (the rule verify applies to the ledger)
    if contract_problems(job.protocol, condition, contract, job.frozen.sources):
        return ("open-failed", "session-open-failed:contract-inconsistent")
    return ("opened", session, contract)


def run_entry(job: Job, session: Session, entry: PlanEntry) -> tuple[Any, ...]:
    """Run one plan entry in ``session``: the answer a worker sends back (its first item says
    how the run ended). A worker process and a study's threads run entries so alike."""
    try:
        checked = check_evidence(session.run(entry))
    except RunFailed as exc:
        _show(job, f"the run of {entry.slot}", exc)
        cause = exc.cause if isinstance(exc.cause, str) else ""
        return ("failed", short_cause(cause))
    except RunInvalid as exc:
        _show(job, f"the run of {entry.slot}", exc)
        cause = exc.cause if isinstance(exc.cause, str) else ""
        return ("invalid", short_cause(cause))
    except Exception as exc:
        _show(job, f"the run of {entry.slot}", exc)
        return ("failed", f"adapter-raised:{type(exc).__name__}")
    if isinstance(checked, Invalid):
        return ("invalid", checked.cause)
    return ("evidence", checked)


def _serve(conn: multiprocessing.connection.Connection, job: Job) -> None:
    """The child's loop: open, run, close on request; exit at ``stop`` or when the parent goes."""
    # Interrupts are for the parent, which stops this child itself. The parent blocked them
    # while it started this child, and the mask is inherited: unblock the others.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    root = None if job.target_root is None else Path(job.target_root)
    with code_of_bundle(root, job.frozen.sources) if job.replaying else targets_in(root):
        _serve_job(conn, job)


def _serve_job(conn: multiprocessing.connection.Connection, job: Job) -> None:
    module, _, name = job.adapter.partition(":")
    adapter: Adapter = getattr(__import__(module, fromlist=[name]), name)()
    use_carried(adapter, job.carried)
    # Sessions open only if this process pins the very sources the parent sealed.
    try:
        refrozen: Frozen | None = adapter.freeze(job.protocol, job.options)
    except Exception:
        refrozen = None
    unpinned = refrozen != job.frozen
    if job.stream is not None:
        _restore_stream(job.stream)
    session: Session | None = None
    answer: tuple[Any, ...]
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        kind = request[0]
        if kind == "open" and unpinned:
            answer = ("open-failed", "session-open-failed:sources-differ-in-worker")
        elif kind == "open":
            answer = open_session(adapter, job, request[1])
            if answer[0] == "opened":
                session, answer = answer[1], ("opened", answer[2])
        elif kind == "run" and session is not None:
            entry: PlanEntry = request[1]
            if job.stream is None and entry.seed is not None:
                seed_global_generators(entry.seed)
            answer = run_entry(job, session, entry)
        elif kind == "seek" and job.stream is not None:
            # Replay from a kept state: a partition's first (before its session opens) or one
            # kept mid-partition (the stream's with the session open).
            _restore_stream(request[1])
            answer = ("sought",)
        elif kind == "close" and session is not None:
            try:
                session.close()
            except Exception as exc:
                answer = ("close-failed", type(exc).__name__)
            else:
                answer = ("closed",)
            session = None
        elif kind == "stop":
            return
        else:
            answer = ("protocol-error", kind)
        if job.stream is not None:
            answer = (*answer, _stream_state())
        try:
            conn.send(answer)
        except OSError:  # the parent is gone
            return


# --------------------------------------------------------------------------- the parent


def main() -> None:
    """A worker process's entry point:
    ``python -c "from repro._execute.worker import main; main()" FD PARENT_PID``, serving the job
    that arrives on the socket FD. A child started before its job (:class:`Spares`) may first
    be told modules to import as it waits, its adapter's (``("import", MODULES)``); one that
    fails to import is left to the job, whose own import of it fails as it would have.

    However it ends, what it made is frozen out of the cyclic garbage collector's reach first,
    as the command line's own process does (:func:`repro._cli.app.main`): the study waits for
    this process to exit, and the collector's last passes over the adapter's modules and what
    its runs left would be that wait."""
    conn = multiprocessing.connection.Connection(int(sys.argv[1]))
    die_with_parent(int(sys.argv[2]))
    try:
        try:
            job = conn.recv()
            while isinstance(job, tuple) and job[0] == "import":
                for module in job[1]:
                    with contextlib.suppress(Exception):
                        importlib.import_module(module)
                job = conn.recv()
        except (EOFError, OSError):  # the parent stopped before it sent the job
            return
        _serve(conn, job)
    finally:
        gc.freeze()


def preloads(adapter: Adapter) -> tuple[str, ...]:
    """What a child started before its job may import as it waits, for ``adapter``: its class's
    module, and its simulator's when the class states exactly one (``simulator_modules``; of
    several, any one is enough, and which one a session imports is not known before it does)."""
    stated = getattr(type(adapter), SIMULATOR_MODULES, None)
    module = type(adapter).__module__
    if isinstance(stated, tuple) and len(stated) == 1 and isinstance(stated[0], str):
        return (module, stated[0])
    return (module,)


class Worker:
    """One child process serving one adapter; replaced when lost.

    The child is a fresh interpreter started with :mod:`subprocess` rather than
    :mod:`multiprocessing`, so it never re-imports the parent's main script (which a library
    user may not have guarded), inherits no lock held by a parent thread, and needs no helper
    process. It sees the parent's ``sys.path``, and writes what it prints to the parent's stderr
    so the study's stdout stays the study's own. With ``spares``, its first child is one of
    theirs when one is left (:class:`Spares`); a child that replaces a lost one is started anew.

    A worker is used by one thread. Another thread (or process) stops it through ``cancel``:
    once that is set, the request in progress and every later one kill the child and raise
    :class:`Cancelled` (within :data:`_CANCEL_POLL_SECONDS`).
    """

    def __init__(
        self,
        job: Job,
        timeout: float | None,
        cancel: CancelFlag | None = None,
        spares: Spares | None = None,
    ) -> None:
        self._job = job
        #: Where the first child comes from when one was started before the job existed.
        self._spares = spares
        self._timeout = timeout
        #: The bound on everything but a run: starting the child (a fresh interpreter that
        #: imports and freezes the adapter, slow on a busy machine), opening and closing a
        #: session. It is never charged to a run.
        self._open_timeout = job.protocol.retry.open_bound
        self._cancel = cancel
        self._stream = job.stream
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: multiprocessing.connection.Connection | None = None
        #: A run request sent ahead (:meth:`request`'s ``then``) and not yet answered: the child
        #: starts it once it has answered the request before it.
        self._ahead: tuple[Any, ...] | None = None
        #: When the latest answer arrived (:func:`time.monotonic`, and UTC): the child starts a
        #: request sent ahead then.
        self._answered_at = 0.0
        self._answered_utc = datetime.now(UTC)
        #: When the latest answered request began and ended, in UTC: its sending, or, for one
        #: sent ahead, the answer before it; and its answer's arrival.
        self.began = self.ended = self._answered_utc

    @property
    def stream_state(self) -> tuple[str, Any] | None:
        """Where the generator stream stands now (stream mode): the seed before any request, then
        the states the worker reported with its last answer."""
        return self._stream

    def _start(self) -> multiprocessing.connection.Connection:
        spare = self._spares.take() if self._spares is not None else None
        process, conn = spare or spawn()
        self._process, self._conn = process, conn
        conn.send(attrs.evolve(self._job, stream=self._stream))
        return conn

    @property
    def ahead(self) -> tuple[Any, ...] | None:
        """The run request sent ahead and not yet answered, if any: the next request must be
        that one."""
        return self._ahead

    def request(
        self,
        *message: Any,
        meanwhile: Callable[[], None] | None = None,
        then: tuple[Any, ...] | None = None,
    ) -> tuple[Any, ...]:
        """Send one request and return the child's answer; raise :class:`WorkerLost` (after
        killing the child) when it times out or the child dies, and :class:`Cancelled` when the
        study stops.

        A ``run`` request is bounded by the protocol's ``retry.timeout_seconds``; any other
        request, and any request that starts the child, by ``retry.open_timeout_seconds``: the
        start of a worker is never charged to a run. ``meanwhile`` is the caller's own work,
        done while the child works on the request (a study writes the previous run's record
        then): the timeout counts from the sending. If it raises, the child is killed and its
        answer never read.

        ``then`` is a run request sent right after this one (per-run seeding mode only), so the
        child starts it as soon as it has answered this one, without waiting for this process to
        read the answer and ask: the next call must ask for it (:attr:`ahead`), and its timeout
        counts from this answer's arrival. A lost child loses it too, unstarted: the caller asks
        for it again. :attr:`began` and :attr:`ended` say when the request answered last ran."""
        self._check_cancel()
        ahead = self._ahead
        if ahead is not None and ahead != message:
            raise RuntimeError(f"{ahead[0]!r} was sent ahead: it must be asked for next")
        if then is not None and (then[0] != "run" or self._stream is not None):
            raise RuntimeError("only a run request in per-run mode may be sent ahead")
        starting = self._conn is None
        conn, sent = self._send(message, ahead, then)
        bound = self._timeout if message[0] == "run" and not starting else self._open_timeout
        if meanwhile is not None:
            try:
                meanwhile()
            except BaseException:
                self.kill()
                raise
        return self._receive(conn, sent + bound if bound is not None else None)

    def _send(
        self, message: tuple[Any, ...], ahead: tuple[Any, ...] | None, then: tuple[Any, ...] | None
    ) -> tuple[multiprocessing.connection.Connection, float]:
        """Send ``message`` (unless it went ahead of the last answer) and then ``then``,
        starting the child first if none runs; return its connection and when ``message`` was
        sent (by the monotonic clock)."""
        try:
            conn = self._conn or self._start()
            if ahead is None:
                conn.send(message)
                sent, self.began = time.monotonic(), datetime.now(UTC)
            else:  # the child started it when it sent the answer before it
                sent, self.began = self._answered_at, self._answered_utc
            self._ahead = None
            if then is not None:
                conn.send(then)
                self._ahead = then
        except OSError:
            raise WorkerLost(self._loss()) from None
        return conn, sent

    def _receive(
        self, conn: multiprocessing.connection.Connection, deadline: float | None
    ) -> tuple[Any, ...]:
        """The child's answer, by ``deadline`` (monotonic; None: no bound), without the stream
        state it carries in stream mode (kept as :attr:`stream_state`)."""
        try:
            if not self._answered(conn, deadline):
                self.kill()
                raise WorkerLost("timeout")
            answer: tuple[Any, ...] = conn.recv()
        except (EOFError, OSError):
            raise WorkerLost(self._loss()) from None
        self._answered_at, self._answered_utc = time.monotonic(), datetime.now(UTC)
        self.ended = self._answered_utc
        if self._stream is not None:
            *rest, self._stream = answer
            answer = tuple(rest)
        return answer

    def _check_cancel(self) -> None:
        if self._cancel is not None and self._cancel.is_set():
            self.kill()
            raise Cancelled("the study is stopping")

    def _answered(
        self, conn: multiprocessing.connection.Connection, deadline: float | None
    ) -> bool:
        """Whether an answer arrived by ``deadline`` (a :func:`time.monotonic` time; None:
        however long it takes); with a cancel flag, wait in short slices and look at the flag
        between them."""
        if self._cancel is None:
            return conn.poll(None if deadline is None else max(0.0, deadline - time.monotonic()))
        while True:
            self._check_cancel()
            left = _CANCEL_POLL_SECONDS if deadline is None else deadline - time.monotonic()
            if conn.poll(max(0.0, min(left, _CANCEL_POLL_SECONDS))):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def _loss(self) -> str:
        process = self._process
        self.kill()
        code = process.returncode if process is not None else None
        if code is not None and code < 0:
            try:
                return f"worker-died:{signal.Signals(-code).name}"
            except ValueError:
                return f"worker-died:signal-{-code}"
        return f"worker-exited:{code}"

    def kill(self) -> None:
        """Kill the child, if any, and forget it; the next request starts a new one."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        self._ahead = None  # never started, or lost with the child
        if conn is not None:
            conn.close()
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()

    def stop(self) -> None:
        """Ask the child to exit, and kill it if it does not in a few seconds."""
        process, conn = self._process, self._conn
        if process is None or conn is None:
            return
        if self._ahead is not None:  # a run nobody will read: not worth waiting for
            self.kill()
            return
        with contextlib.suppress(OSError):
            conn.send(("stop",))
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(_STOP_GRACE_SECONDS)
        self.kill()
