"""A study's progress on stderr: a bar with its ETA on a terminal (:class:`BarProgress`), plain
lines at every tenth of the work elsewhere (:class:`LineProgress`), both weighed by each slot's
cost (:class:`Work`) and naming conditions by their labels (:class:`Labels`)."""

from __future__ import annotations

import collections.abc
import importlib
import math
import os
import sys
import time
from typing import TYPE_CHECKING

from repro._cli.output import emit, err_console
from repro._escape import visible

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from repro._execute.studies import Prepared
    from repro.models import Condition, Protocol

__all__ = [
    "BarProgress",
    "Labels",
    "LineProgress",
    "Work",
    "console_meanwhile",
    "stderr_is_terminal",
    "study_work",
]


class Work:
    """The work of a study in each slot's cost (:func:`repro.adapters._base.slot_costs`: a
    CAGE-2 episode's trial length, else 1), so that the time left is the time per unit of cost
    measured so far times the cost left, not the time per slot times the slots left."""

    def __init__(self, costs: Mapping[str, float], slots: Mapping[str, int]) -> None:
        self._costs = costs
        self.total = math.fsum(costs.get(c, 1.0) * n for c, n in slots.items())
        self.done = 0.0

    def advance(self, condition: str) -> float:
        """One slot of ``condition`` is done; its cost."""
        cost = self._costs.get(condition, 1.0)
        self.done += cost
        return cost

    def left(self, elapsed: float) -> float:
        """Seconds left, at the rate measured over ``elapsed`` seconds."""
        return elapsed / self.done * max(0.0, self.total - self.done) if self.done else 0.0


class BarProgress:
    """A progress bar with ETA, for terminals; it names the condition of the slot that ended
    last by ``labels`` (condition ID to ``c01 env_id=CartPole-v1 / random``). The bar fills,
    and the ETA runs, by the work's cost (:class:`Work`); the count beside it is of runs, and
    of those that did not end valid. On a narrow terminal the condition's label is cut (``…``),
    never the bar, the counts or the times: every other column keeps its whole width."""

    def __init__(self, labels: Mapping[str, str], work: Work) -> None:
        # Lazy: rich's bars only once a study starts; `repro --help` imports this module.
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichBar
        from rich.table import Column

        self._bar = RichBar(
            # The label takes what the other columns leave of the line, cut at its end.
            TextColumn(
                "[bold]{task.description}",
                table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis"),
            ),
            BarColumn(bar_width=_BAR_WIDTH),
            TextColumn("{task.fields[runs]}", table_column=Column(no_wrap=True)),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=err_console(),
            expand=True,
        )
        self._task = self._bar.add_task("runs", total=None, runs="")
        self._work = work
        self._done = 0
        self._total = 0
        self._lost = 0
        # A level may hold brackets, which are no markup.
        self._labels = {condition: escape(label) for condition, label in labels.items()}

    def start(self, total: int) -> None:
        self._total = total
        self._bar.update(self._task, total=self._work.total, runs=f"0/{total}")
        self._bar.start()

    def advance(self, condition: str, end: str) -> None:
        self._done += 1
        self._lost += end != "valid"
        lost = f" [red]{self._lost} not valid[/red]" if self._lost else ""
        label = self._labels.get(condition, condition)
        self._bar.update(
            self._task,
            advance=self._work.advance(condition),
            description=label,
            runs=f"{self._done}/{self._total}{lost}",
        )

    def finish(self) -> None:
        self._bar.stop()


#: The progress bar's width in columns: room for the label, the counts and the times at 80.
_BAR_WIDTH = 16


class LineProgress:
    """Plain lines at every tenth of the work, for logs and pipes, each naming the condition
    of the slot that ended last by ``labels``, as :class:`BarProgress` does, with the time
    left weighed by the work's cost (:class:`Work`). ``clock`` is the seconds' source."""

    def __init__(
        self,
        labels: Mapping[str, str],
        work: Work,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._labels = labels
        self._work = work
        self._clock = clock
        self._done = 0
        self._lost = 0
        self._total = 0
        self._next = 0
        self._t0 = 0.0

    def start(self, total: int) -> None:
        self._total, self._t0 = total, self._clock()
        self._next = max(1, total // 10)
        emit(f"study: {total} runs to go", err=True)

    def advance(self, condition: str, end: str) -> None:
        self._done += 1
        self._lost += end != "valid"
        self._work.advance(condition)
        if self._done >= self._next or self._done == self._total:
            elapsed = self._clock() - self._t0
            left = self._work.left(elapsed)
            lost = f", {self._lost} not valid" if self._lost else ""
            emit(
                f"study: {self._done}/{self._total} runs ({100 * self._done // self._total}%)"
                f"{lost}, {elapsed:.1f} s elapsed, about {left:.1f} s left "
                f"({self._labels.get(condition, condition)})",
                err=True,
            )
            self._next += max(1, self._total // 10)

    def finish(self) -> None:
        pass


def study_work(prepared: Prepared, carried: frozenset[str] = frozenset()) -> Work:
    """The study's work by condition: its slots that run, each at the adapter's cost, but
    those of the partitions ``carried`` from an interrupted study."""
    # Lazy: the adapters and the tally only for a study's work, not at `repro --help`.
    from repro._derive.tally import runs
    from repro.adapters._base import slot_costs

    slots = {
        p.condition: 0 if p.id in carried else sum(map(runs, p.entries))
        for p in prepared.plan.partitions
    }
    return Work(slot_costs(prepared.adapter, prepared.plan.seal.conditions), slots)


class Labels(collections.abc.Mapping[str, str]):
    """Each condition's ID and label, as the progress display names it: ``c01
    env_id=CartPole-v1 / random`` (the label as every table words it,
    :func:`repro._figures.condition_label`), made when first read: a study's plain
    progress lines name a condition only at a tenth of its work, and what makes the labels is
    then imported (while the runs wait, with the console), not before the first run."""

    def __init__(self, protocol: Protocol, conditions: Sequence[Condition]) -> None:
        self._protocol = protocol
        self._conditions = conditions
        self._made: dict[str, str] | None = None

    def _labels(self) -> dict[str, str]:
        if self._made is None:
            # Lazy: a study imports the figures while its runs wait (tests/test_startup.py).
            from repro._figures import condition_label

            order = [factor.name for factor in self._protocol.matrix]
            # One line each, its control characters shown as text: the bar's own text column
            # writes a label to the terminal as it is, past a console's rendering of strings.
            self._made = {
                c.id: visible(
                    f"{c.id} {condition_label(c.factors, c.participant, order)}", newlines=False
                )
                for c in self._conditions
            }
        return self._made

    def __getitem__(self, condition: str) -> str:
        return self._labels()[condition]

    def __iter__(self) -> Iterator[str]:
        return iter(self._labels())

    def __len__(self) -> int:
        return len(self._conditions)


def console_meanwhile() -> None:
    """Import what a study's last lines print through (the stderr console), while its runs
    only wait: after them, it would cost the study's end."""
    importlib.import_module("repro._present.terminal")


def stderr_is_terminal() -> bool:
    """Whether the stderr console is a terminal's, without importing rich where it plainly
    is not: stderr is no terminal, and neither ``TTY_COMPATIBLE=1`` nor a non-empty
    ``FORCE_COLOR`` (which rich honours) says otherwise. A study that prints plain lines then
    starts its first run without rich."""
    environ = os.environ
    if environ.get("TTY_COMPATIBLE") != "1" and not environ.get("FORCE_COLOR"):
        try:
            if not sys.stderr.isatty():
                return False
        except ValueError:  # closed: no terminal
            return False
    return err_console().is_terminal
