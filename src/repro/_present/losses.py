"""The losses' section of the page (:mod:`repro._present.html`): the slots that did not end
valid, grouped by outcome and cause, the slots of each listed compacted (a range of
consecutive runs of one condition as one item) and cut."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from repro._derive.tally import LOSS_STATUSES, LossStatus, loss_groups
from repro._present.markup import Html, figure, table
from repro.models import Ledger, Loss

__all__ = ["MAX_SLOTS_LISTED", "losses_section", "slot_list"]

#: A cause of losses lists at most this many of its slots (a range of consecutive runs of one
#: condition counting as one; up to three more rather than "and 2 more"), then says how many
#: more there are.
MAX_SLOTS_LISTED = 16

_SLOT = re.compile(r"(.*-r)([0-9]+)")


def _slot_items(slots: Sequence[str]) -> list[tuple[str, int]]:
    """Slots in order as items to list, each with how many slots it stands for: a run of
    consecutive slots of one condition (``c03-r0001`` to ``c03-r0004``) is one item,
    ``c03-r0001\u2013r0004``."""
    items: list[tuple[str, int]] = []
    run: tuple[str, str, str, int] | None = None  # prefix, first digits, last digits, count

    def close() -> None:
        if run is not None:
            prefix, first, last, count = run
            text = f"{prefix}{first}" + (f"\u2013r{last}" if count > 1 else "")
            items.append((text, count))

    for slot in slots:
        m = _SLOT.fullmatch(slot)
        if m is None:
            close()
            run = None
            items.append((slot, 1))
            continue
        prefix, digits = m.group(1), m.group(2)
        if (
            run is not None
            and run[0] == prefix
            and len(digits) == len(run[2])
            and int(digits) == int(run[2]) + 1
        ):
            run = (prefix, run[1], digits, run[3] + 1)
        else:
            close()
            run = (prefix, digits, digits, 1)
    close()
    return items


def _listed(slots: Sequence[str]) -> tuple[list[str], int]:
    """The slots' items to list (:func:`_slot_items`): at most :data:`MAX_SLOTS_LISTED` (or up
    to three more, rather than "and 2 more"), and how many slots the rest stand for."""
    items = _slot_items(slots)
    shown = items if len(items) <= MAX_SLOTS_LISTED + 3 else items[:MAX_SLOTS_LISTED]
    return [item for item, _ in shown], len(slots) - sum(count for _, count in shown)


def slot_list(slots: Sequence[str]) -> str:
    """The slots compacted and cut, as the page lists them."""
    items, rest = _listed(slots)
    return ", ".join(items) + (f", and {rest:,} more slot(s)" if rest else "")


def _slot_cell(slots: Sequence[str]) -> Html:
    """:func:`slot_list` as a cell, each item kept on one line."""
    items, rest = _listed(slots)
    listed = Html(", ").join(Html('<span class="slot">{}</span>').format(item) for item in items)
    more = f", and {rest:,} more slot(s)" if rest else ""
    return Html('<td class="slots">{}{}</td>').format(listed, more)


#: How the page words each way a slot did not end valid (docs/bundle-format.md).
_ENDED = {
    "invalid": "invalid (ran, but outside the protocol's validity rules)",
    "failed": "failed (attempts exhausted)",
    "excluded": "excluded",
}


def _loss_row(outcome: str, cause: str, losses: Sequence[Loss], ended: Mapping[str, str]) -> Html:
    """A row of the losses of one outcome and cause: how their slots ended, how many, their
    attempts, and which."""
    names = {"outcome": outcome, "cause": cause}
    attempts = sum(loss.attempts for loss in losses)
    each = sorted({loss.attempts for loss in losses})
    per = f"{each[0]} each" if len(each) == 1 else f"{each[0]}\u2013{each[-1]} each"
    how = {ended.get(loss.slot, loss.outcome) for loss in losses}
    return Html('<tr><td>{}</td><td>{}</td>{}<td class="num">{}{}</td>{}</tr>').format(
        "; ".join(_ENDED[status] for status in LOSS_STATUSES if status in how),
        cause,
        figure("td", len(losses), f"{len(losses):,}", "num", field="slots", **names),
        figure("span", attempts, f"{attempts:,}", field="attempts", **names),
        f" ({per})" if len(losses) > 1 else "",
        _slot_cell([loss.slot for loss in losses]),
    )


def losses_section(ledger: Ledger, lost_as: Mapping[str, LossStatus] | None = None) -> Html:
    """The losses grouped by outcome and cause, the most frequent first: how each group's slots
    ended (``lost_as``, by their last attempt's status: invalid, failed or excluded; the
    ledger's outcome, which says failed for invalid slots too, where not given), how many
    slots, their attempts, and which slots."""
    if not ledger.losses:
        return Html(
            "<section id=losses><h2>Losses</h2><p>None: every admitted slot ended valid.</p>"
            "</section>"
        )
    ended = lost_as or {}
    groups: dict[tuple[str, str], list[Loss]] = {}
    for loss in ledger.losses:
        groups.setdefault((loss.outcome, loss.cause), []).append(loss)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    rows = [_loss_row(outcome, cause, losses, ended) for (outcome, cause), losses in ordered]
    counts = ", ".join(
        f"{len(found):,} {status}" for status, found in loss_groups(ledger.losses, ended)
    )
    return Html(
        "<section id=losses><h2>Losses</h2><p>{} slot(s) did not end valid ({}) and are not in "
        "the means; nothing was imputed. By cause:</p>{}</section>"
    ).format(
        f"{len(ledger.losses):,}",
        counts,
        table(["ended", "cause", "slots", "attempts", "which"], rows),
    )
