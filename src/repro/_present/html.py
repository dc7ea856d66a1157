"""One self-contained HTML page for a verified bundle (``repro show DIR --html FILE``).

The page is evidence someone may open years later, offline, or archive next to the bundle, so
it depends on nothing outside itself: the style is inline, there is no script, and the plot is
an inline SVG (:mod:`repro._present.svg`, no matplotlib). A Content-Security-Policy of
``default-src 'none'`` makes a browser refuse any fetch the page might still attempt.

The conditions table and the plot read the figures model (:mod:`repro._figures`), and the
plot draws its plot model (:func:`repro._figures.plot_model`), the one the PNG of
:mod:`repro._present.plot` draws too, so that the page and the PNG show the same thing. The SVG
is as wide as the page's content column (every x a percentage of its width, its text the
page's size); every condition shares one axis with its ticks, the estimand has its own.

Every figure carries machine-readable attributes, so that a program (the tests, or a reviewer's
script) can read back from the rendered page exactly what it shows:

- ``data-value``: the figure as JSON, a float as its ``repr`` (the shortest text that reads back
  as the same float, as in the bundle's JSON), ``null`` when undefined;
- ``data-condition`` with ``data-field``: a condition's figure, ``data-field`` being its key in
  aggregates.json (``valid``, ``mean``, ``sd``; ``low``, ``high`` from its interval), or
  ``published``, ``equal_at_precision`` (from tiers.json's figure ``<id> mean``) and
  ``published_halfwidth`` (from the protocol);
- ``data-estimand`` (the estimand's kind) with ``data-field``: ``value``, ``se``, and ``low``,
  ``high``, ``halfwidth`` from its interval, or ``published`` and ``published_halfwidth``
  (tiers.json's figures ``estimand value`` and ``estimand half-width``);
- ``data-figure`` with ``data-field``: one of tiers.json's reproduction figures;
- ``data-outcome`` and ``data-cause`` with ``data-field`` ``slots`` or ``attempts``: how many of
  source-ledger.json's losses have that outcome and cause, and their attempts in all;
- ``data-cell`` with ``data-field`` (``valid_runs``, ``superseded_runs``, ``median_measure``),
  with ``data-check`` (``passed``, ``runs``, ``rate``, ``low``, ``high``) or with
  ``data-category``: a cell of scores.json;
- ``data-contrast`` (a contrast's id) with ``data-field``: a contrast of contrasts.json, by its
  key there (``primary``, ``estimate``, ``p_value``, ``p_adjusted``, ``verdict``; ``pairs`` and
  ``incomplete_pairs`` for a paired contrast, ``n_a`` and ``n_b`` for an unpaired one;
  ``margin`` for a non-inferiority one; ``low``, ``high`` from its interval); and
  ``data-family="contrasts"`` with ``data-field="multiplicity"``: the family's control. A
  verdict or the multiplicity is a JSON string in ``data-value``;
- ``data-rl-participant`` (a participant) with ``data-field``: a participant of
  rl-aggregates.json, ``runs`` and ``incomplete``, or, with ``data-statistic`` (its name),
  ``value``, ``low`` and ``high`` of that statistic, or, with ``data-tau`` (the tau as a float's
  ``repr``), those of its profile at tau; ``data-improvement`` (``X > Y``) with ``data-field``
  (``value``, ``low``, ``high``, ``runs_x``, ``runs_y``): one of its probabilities of
  improvement.

The plot's runs and axes are named too, outside ``data-value``: each valid run's point has
``data-run`` (its condition) and ``data-measure`` (its measure as a float's ``repr``); past
:data:`repro._figures.POINTS_LIMIT` runs, each bin has ``data-bin`` (its condition),
``data-low``, ``data-high`` and ``data-count``; each axis is a group with ``data-axis``
(``conditions``, ``estimand``), ``data-low`` and ``data-high``, its tick labels ``data-tick``;
the legend's entries ``data-legend`` (``runs`` or ``bins``, ``observed``, ``published``). The
forest plot of the contrasts (:func:`repro._figures.forest_model`) has its axis as
``data-axis="contrasts"``, its line at 0 ``data-zero``, each row a group with
``data-forest-row`` (the contrast's id), and each non-inferiority margin's mark, which stands at
``-margin``, ``data-at`` besides its ``data-value`` (the margin). A contract fact has
``data-contract`` (its condition, ``*`` when every condition has it) and ``data-fact``.

The text beside each value is rounded for people. All text from the bundle (titles, factor
levels, reasons, evidence, causes) is user data: the page is markup by construction
(:mod:`repro._present.markup`), which escapes every value composed into it, in element content
and in every attribute, the SVG's too (:mod:`repro._present.svg`), so that no markup of it is
active, and shows its control characters, the bidirectional ones among them, as text
(:func:`repro._escape.visible`), so that none reorders what a reader sees. The style is the
package's ``page.css``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

import repro
from repro._derive.facts import recorded_reading
from repro._derive.tally import LossStatus
from repro._figures import (
    FigureRow,
    Figures,
    Forest,
    ForestRow,
    adjusted_name,
    condition_label,
    figures,
    forest_model,
    p_text,
)
from repro._present.losses import losses_section
from repro._present.markup import EMPTY, Html, Number, cell, data, figure, json_value, num, table
from repro._present.svg import forest_figure, plot_figure
from repro.models import (
    Aggregates,
    CellScore,
    ContrastResult,
    ContrastsFile,
    Environment,
    FigureComparison,
    FrozenProtocol,
    Ledger,
    RLAggregates,
    Scores,
    Tier,
    Tiers,
)

__all__ = ["contract_evidence", "render", "repro_version"]

#: A contract fact longer than this shows its start, and the whole of it when opened.
_FACT_CHARS = 120


@cache
def _style() -> Html:
    """The page's style sheet, ``page.css`` of this package: markup of the package's own, as a
    constant is."""
    return Html(resources.files(__package__).joinpath("page.css").read_text("utf-8"))


# --------------------------------------------------------------------------- sections


def _estimand(agg: Aggregates) -> Html:
    """The claim's first sentence: how many runs ended valid, and the estimand with its
    interval."""
    e = agg.estimand
    total = sum(c.scheduled for c in agg.conditions)
    valid = sum(c.valid for c in agg.conditions)
    runs = f"{valid} of {total} scheduled runs ended valid"
    if e.value is None or e.interval is None:
        return Html("<p>{}; the estimand is undefined.</p>").format(runs)
    iv = e.interval

    def shown(tag: str, value: float | None, field: str) -> Html:
        return figure(tag, value, num(value, 6), field=field, estimand=e.kind)

    return Html(
        "<p>Under this sealed protocol, {}, and the {} of <code>{}</code> is {} with a {} {} "
        "interval [{}, {}] (half-width {}; standard error {}).</p>"
    ).format(
        runs,
        e.kind.replace("-", " "),
        agg.measure,
        shown("strong", e.value, "value"),
        f"{iv.level:.0%}",
        iv.method,
        shown("span", iv.low, "low"),
        shown("span", iv.high, "high"),
        shown("span", iv.halfwidth, "halfwidth"),
        shown("span", e.se, "se"),
    )


def _claim(agg: Aggregates, tiers: Tiers, ledger: Ledger, forest: Forest | None) -> Html:
    rep = tiers.reproduction
    parts = [
        Html("<section id=claim><h2>Claim</h2>"),
        _estimand(agg),
        EMPTY if forest is None else _primary_sentences(forest),
        Html(
            '<p class="class">Reproduction class: <strong class="{verdict}"{}>{verdict}</strong> '
            "({})</p>"
        ).format(data(reproduction=rep.verdict), rep.reason, verdict=rep.verdict),
    ]
    if rep.figures:
        parts.append(_figures(rep.figures))
    if ledger.citation is not None:
        c = ledger.citation
        where = Html(", {}").format(c.locator) if c.locator else EMPTY
        parts.append(
            Html("<p>Published figures from: {} (<code>{}</code>{})</p>").format(
                c.title, c.url, where
            )
        )
    parts.append(Html("</section>"))
    return EMPTY.join(parts)


def _figures(figures: Sequence[FigureComparison]) -> Html:
    rows = []
    for f in figures:
        name = {"figure": f.figure}
        equal = "equal" if f.equal_at_precision else "differs"
        rows.append(
            Html('<tr><td>{}</td>{}{}<td class="num">{}</td>{}</tr>').format(
                f.figure,
                figure("td", f.published, str(f.published), "num", field="published", **name),
                cell(f.observed, "observed", **name),
                f.observed_rounded or "n/a",
                figure(
                    "td", f.equal_at_precision, equal, equal, field="equal_at_precision", **name
                ),
            )
        )
    return table(["figure", "published", "observed", "observed, rounded", "at precision"], rows)


def _published_cells(row: FigureRow, names: dict[str, str]) -> Html:
    """A condition's published value and whether the observed one equals it at precision."""
    equal = "equal" if row.equal_at_precision else "differs"
    text = equal if row.equal_at_precision else f"differs (observed {row.observed_rounded})"
    return figure("td", row.published, str(row.published), "num", field="published", **names) + (
        figure("td", row.equal_at_precision, text, equal, field="equal_at_precision", **names)
    )


def _conditions(model: Figures) -> Html:
    has_published = any(r.published is not None for r in model.conditions)
    head = ["id", "condition", "n", "mean", "sd", "low", "high"]
    head += ["published", "agreement"] if has_published else []
    rows = []
    for r in model.conditions:
        names = {"condition": r.key}
        iv = r.interval
        row = (
            Html('<tr><td>{}</td><td class="label">{}</td>').format(r.key, r.label)
            + cell(r.n, "valid", **names)
            + cell(r.mean, "mean", **names)
            + cell(r.sd, "sd", **names)
            + cell(None if iv is None else iv.low, "low", **names)
            + cell(None if iv is None else iv.high, "high", **names)
        )
        if r.published is not None:
            row += _published_cells(r, names)
        elif has_published:
            row += Html("<td></td><td></td>")
        rows.append(row + Html("</tr>"))
    level = next((r.interval.level for r in model.conditions if r.interval), None)
    level_text = "" if level is None else f" ({level:.0%} interval)"
    return Html(
        "<section id=conditions><h2>Conditions</h2><p><code>{}</code> by condition{}; n is the "
        "number of valid runs.</p>{}</section>"
    ).format(model.measure, level_text, table(head, rows))


# --------------------------------------------------------------------------- contrasts


def _primary_sentences(forest: Forest) -> Html:
    """A sentence of the claim per primary contrast."""
    return EMPTY.join(_primary_sentence(r, forest) for r in forest.rows if r.contrast.primary)


def _primary_sentence(row: ForestRow, forest: Forest) -> Html:
    """A primary contrast's verdict in one sentence of the claim, with its difference, interval
    and adjusted p-value."""
    c, axis = row.contrast, row.axis
    names = {"contrast": c.id}
    head = Html("<p>Pre-registered primary contrast <code>{}</code>: {}").format(
        c.id, figure("strong", c.verdict, c.verdict, c.verdict, field="verdict", **names)
    )
    iv = c.interval
    if c.estimate is None or iv is None:
        return head + Html(" ({}).</p>").format(c.reason)
    return head + Html(" (difference {}, {} interval [{}, {}], {} {}).</p>").format(
        figure("span", c.estimate, axis.text(c.estimate), field="estimate", **names),
        f"{iv.level:.0%}",
        figure("span", iv.low, axis.text(iv.low), field="low", **names),
        figure("span", iv.high, axis.text(iv.high), field="high", **names),
        adjusted_name(forest.multiplicity),
        figure("span", c.p_adjusted, p_text(c.p_adjusted), field="p_adjusted", **names),
    )


def _group(conditions: Sequence[str], labels: Mapping[str, str]) -> Html:
    item = Html("<li><code>{}</code> {}</li>")
    items = EMPTY.join(item.format(c, labels.get(c, "")) for c in conditions)
    return Html('<td class="group"><ul>{}</ul></td>').format(items)


def _claim_of(c: ContrastResult) -> Html:
    """A contrast's claim: its direction (and margin), which way is better, its pairing."""
    margin = EMPTY
    if c.direction == "non-inferiority":
        shown = figure("span", c.margin, f"{c.margin:g}", field="margin", contrast=c.id)
        margin = Html(", margin {}").format(shown)
    return Html("<td>{}{}; {} is better; {}</td>").format(c.direction, margin, c.better, c.pairing)


def _n_of(c: ContrastResult) -> Html:
    """A contrast's sample: its pairs and incomplete pairs, or each side's runs."""
    names = {"contrast": c.id}
    if c.pairs is not None:
        incomplete = c.incomplete_pairs
        return Html('<td class="num">{} pairs<br>{} incomplete</td>').format(
            figure("span", c.pairs, str(c.pairs), field="pairs", **names),
            figure(
                "span",
                incomplete,
                "n/a" if incomplete is None else str(incomplete),
                field="incomplete_pairs",
                **names,
            ),
        )
    return Html('<td class="num">{} vs {}<br>runs</td>').format(
        figure("span", c.n_a, str(c.n_a), field="n_a", **names),
        figure("span", c.n_b, str(c.n_b), field="n_b", **names),
    )


def _contrast_interval(row: ForestRow) -> Html:
    """A contrast's interval as a cell, its ends named (``n/a`` when undefined)."""
    c, iv = row.contrast, row.contrast.interval
    names = {"contrast": c.id}
    if iv is None:
        return Html('<td class="num">{} to {}</td>').format(
            figure("span", None, "n/a", field="low", **names),
            figure("span", None, "n/a", field="high", **names),
        )
    return Html('<td class="num">[{}, {}]<br>{} {}</td>').format(
        figure("span", iv.low, row.axis.text(iv.low), field="low", **names),
        figure("span", iv.high, row.axis.text(iv.high), field="high", **names),
        f"{iv.level:.0%}",
        iv.method,
    )


def _contrast_row(row: ForestRow, labels: Mapping[str, str]) -> Html:
    c, axis = row.contrast, row.axis
    names = {"contrast": c.id}
    rank = "primary" if c.primary else "secondary"
    return Html("<tr{}><td><code>{}</code><br>{}</td>{}").format(
        data(contrast_row=c.id),
        c.id,
        figure("span", c.primary, rank, rank, field="primary", **names),
        EMPTY.join(
            [
                _claim_of(c),
                _group(c.a, labels),
                _group(c.b, labels),
                _n_of(c),
                figure("td", c.estimate, axis.text(c.estimate), "num", field="estimate", **names),
                _contrast_interval(row),
                figure("td", c.p_value, p_text(c.p_value), "num", field="p_value", **names),
                figure(
                    "td", c.p_adjusted, p_text(c.p_adjusted), "num", field="p_adjusted", **names
                ),
            ]
        ),
    ) + Html('<td class="reason">{}<br>{}</td></tr>').format(
        figure("strong", c.verdict, c.verdict, c.verdict, field="verdict", **names), c.reason
    )


def _contrasts(forest: Forest, agg: Aggregates, order: Sequence[str]) -> Html:
    """The pre-registered contrasts: a forest plot of their differences, then a table of each
    one's claim, groups, sample, figures and verdict."""
    labels = {c.condition: condition_label(c.factors, c.participant, order) for c in agg.conditions}
    control = (
        Html("Holm's step-down adjustment")
        if forest.multiplicity == "holm"
        else Html("no adjustment (a family of one primary contrast)")
    )
    family = figure(
        "span", forest.multiplicity, forest.multiplicity, field="multiplicity", family="contrasts"
    )
    head = ["contrast", "claim", "a", "b", "n", "difference", "interval", "p"]
    head += [f"p adjusted ({forest.multiplicity})", "verdict and reason"]
    rows = [_contrast_row(r, labels) for r in forest.rows]
    return Html(
        "<section id=contrasts><h2>Contrasts</h2><p>The protocol pre-registered {} contrast(s) "
        "of <code>{}</code>, each a difference a - b (positive favours a) with its two-sided "
        "interval at the contrast's level and its p-value (one-sided for superiority and "
        "non-inferiority). The family's error rate is controlled by {} (multiplicity {}); a "
        "verdict holds when the adjusted p-value is below 1 - level.</p>{}{}</section>"
    ).format(
        len(forest.rows),
        forest.measure,
        control,
        family,
        forest_figure(forest),
        table(head, rows, "contrasts"),
    )


# --------------------------------------------------------------------------- scores


def _check_cell(key: str, check: str, passed: int, runs: int, rate: Sequence[Number]) -> Html:
    names = {"cell": key, "check": check}
    counts = Html("{}/{}").format(
        figure("span", passed, str(passed), field="passed", **names),
        figure("span", runs, str(runs), field="runs", **names),
    )
    value, low, high = rate
    if value is not None and low is not None and high is not None:
        counts += Html(" ({}; {}\u2013{})").format(
            figure("span", value, f"{value:.2f}", field="rate", **names),
            figure("span", low, f"{low:.2f}", field="low", **names),
            figure("span", high, f"{high:.2f}", field="high", **names),
        )
    return Html('<td class="num check">{}</td>').format(counts)


def _cell_row(score: CellScore, order: Sequence[str], categories: Sequence[str]) -> Html:
    names = {"cell": score.condition}
    label = condition_label(score.factors, score.participant, order)
    row = [
        Html('<tr><td>{}</td><td class="label">{}</td><td>{}</td>').format(
            score.condition, label, score.stratum
        ),
        cell(score.valid_runs, "valid_runs", **names),
        cell(score.superseded_runs, "superseded_runs", **names),
    ]
    row += [
        _check_cell(score.condition, c.name, c.passed, c.runs, (c.rate, c.low, c.high))
        for c in score.checks
    ]
    for k in categories:
        count = score.categories.get(k)
        row.append(
            figure("td", count, "" if count is None else str(count), "num", category=k, **names)
        )
    median = None if score.median_measure is None else f"{score.median_measure:g}"
    row += [
        Html("<td>{}</td>").format(score.agreement),
        figure("td", score.median_measure, median or "n/a", "num", field="median_measure", **names),
        Html("<td>{}</td></tr>").format(score.note or ""),
    ]
    return EMPTY.join(row)


def _scores(scores: Scores, order: Sequence[str]) -> Html:
    checks = list(dict.fromkeys(c.name for score in scores.cells for c in score.checks))
    categories = list(dict.fromkeys(k for score in scores.cells for k in score.categories))
    head = ["id", "condition", "stratum", "valid runs", "superseded", *checks, *categories]
    head += ["agreement", "median measure", "note"]
    rows = [_cell_row(score, order, categories) for score in scores.cells]
    gate = Html('<li class="{holds}"{} data-holds="{}">{}: {holds} ({})</li>')
    gates = EMPTY.join(
        gate.format(
            data(gate=g.name),
            json_value(g.holds),
            g.name,
            g.detail,
            holds="holds" if g.holds else "fails",
        )
        for g in scores.gates
    )
    return Html(
        "<section id=scores><h2>Scores</h2><p>Each check is reported on its own: passes/valid "
        "runs (rate; Wilson {} interval); rates and medians need 2 valid runs.</p>{}"
        "<h3>Publish gates</h3><ul>{}</ul></section>"
    ).format(f"{scores.level:.0%}", table(head, rows), gates)


# --------------------------------------------------------------------------- rliable


def _estimate_cell(
    value: float | None, low: float | None, high: float | None, **names: str
) -> Html:
    """A figure and its interval in one cell, each named (``n/a`` when undefined)."""
    return Html('<td class="num">{} [{}, {}]</td>').format(
        figure("span", value, num(value), field="value", **names),
        figure("span", low, num(low), field="low", **names),
        figure("span", high, num(high), field="high", **names),
    )


def _rl(rl: RLAggregates) -> Html:
    """rliable's aggregates: a table of each participant's statistics, its probabilities of
    improvement, and each participant's performance profile."""
    names = [s.statistic for s in rl.participants[0].statistics] if rl.participants else []
    taus = [p.tau for p in rl.participants[0].profile] if rl.participants else []
    rows = []
    for q in rl.participants:
        who = {"rl_participant": q.participant}
        cells = [cell(q.runs, "runs", **who), cell(q.incomplete, "incomplete", **who)]
        cells += [
            _estimate_cell(s.value, s.low, s.high, statistic=s.statistic, **who)
            for s in q.statistics
        ]
        cells += [_estimate_cell(p.value, p.low, p.high, tau=repr(p.tau), **who) for p in q.profile]
        rows.append(
            Html("<tr><td><code>{}</code></td>{}</tr>").format(q.participant, EMPTY.join(cells))
        )
    head = ["participant", "runs", "incomplete", *names, *(f"profile at {t:g}" for t in taus)]
    duel = Html("<tr><td><code>{}</code> over <code>{}</code></td>{}{}{}</tr>")
    duels = [
        duel.format(
            d.x,
            d.y,
            cell(d.runs_x, "runs_x", improvement=f"{d.x} > {d.y}"),
            cell(d.runs_y, "runs_y", improvement=f"{d.x} > {d.y}"),
            _estimate_cell(d.value, d.low, d.high, improvement=f"{d.x} > {d.y}"),
        )
        for d in rl.improvements
    ]
    return Html(
        "<section id=rl-aggregates><h2>rliable aggregates</h2><p>Each participant's {} of "
        "<code>{}</code> over the tasks of <code>{}</code>, from its complete replicates (runs; "
        "a replicate with a task that did not end valid is left out, counted as incomplete), "
        "with {} stratified bootstrap percentile intervals ({} resamples, sampler {}); profiles "
        "count the fraction of {} above each tau.</p>{}{}</section>"
    ).format(
        "normalised scores" if rl.normalized else "scores",
        rl.measure,
        rl.task_factor,
        f"{rl.level:.0%}",
        rl.resamples,
        rl.sampler,
        rl.distribution,
        table(head, rows),
        table(["improvement", "runs x", "runs y", "P(x > y)"], duels) if duels else EMPTY,
    )


# --------------------------------------------------------------------------- tiers, contracts


def contract_evidence(ledger: Ledger) -> tuple[str, ...]:
    """The contract tier's evidence as :func:`repro._derive.tiers.contract` writes it from the
    ledger's contract facts: the page shows those facts as a table instead."""
    return tuple(
        f"{c}: " + ", ".join(f"{k}={v}" for k, v in sorted(f.items()))
        for c, f in sorted(ledger.contracts.items())
    )


def _evidence(t: Tier, ledger: Ledger) -> Html:
    if t.name == "contract" and t.evidence and t.evidence == contract_evidence(ledger):
        return Html(
            "The contract facts of {} condition(s): see <em>Contract facts</em> below."
        ).format(len(ledger.contracts))
    item = Html("<li>{}</li>")
    return Html("<ul>{}</ul>").format(EMPTY.join(item.format(e) for e in t.evidence))


def _tiers(tiers: Tiers, ledger: Ledger) -> Html:
    """A row per tier: its verdict, its reason (a column only when some tier has one) and its
    evidence."""
    reasons = any(t.reason for t in tiers.tiers)
    row = Html('<tr{}><td>{}</td><td class="{verdict}"{}>{verdict}</td>{}<td>{}</td></tr>')
    rows = [
        row.format(
            data(tier=t.name),
            t.name,
            data(verdict=t.verdict),
            Html("<td>{}</td>").format(t.reason or "") if reasons else EMPTY,
            _evidence(t, ledger),
            verdict=t.verdict,
        )
        for t in tiers.tiers
    ]
    head = ["tier", "verdict", *(["reason"] if reasons else []), "evidence"]
    return Html("<section id=tiers><h2>Tiers</h2>{}</section>").format(table(head, rows))


def _fact(value: object) -> Html:
    """A contract fact as text (as the tier's evidence writes it, each run of white space one
    space, as a browser shows it anyway), its start alone when it is long, the whole of it a
    click away."""
    text = " ".join(str(value).split())
    if len(text) <= _FACT_CHARS:
        return Html("<code>{}</code>").format(text)
    return Html(
        "<details><summary><code>{}</code>\u2026 ({} characters)</summary><code>{}</code></details>"
    ).format(text[: _FACT_CHARS - 20], f"{len(text):,}", text)


def _contracts(ledger: Ledger) -> Html:
    """Each condition's contract facts: those the same for every condition once, the others
    as a table of condition by fact."""
    contracts = dict(sorted(ledger.contracts.items()))
    if not contracts:
        return EMPTY
    keys = sorted({k for facts in contracts.values() for k in facts})
    missing = object()
    shared = [
        k
        for k in keys
        if len({repr(f.get(k, missing)) for f in contracts.values()}) == 1
        and all(k in f for f in contracts.values())
    ]
    varying = [k for k in keys if k not in shared]
    first = next(iter(contracts.values()))
    parts = [
        Html(
            "<section id=contracts><h2>Contract facts</h2><p>What the adapter recorded that "
            "every run of a condition sees; the contract tier holds each run to its condition's "
            "facts.</p>"
        )
    ]
    if shared:
        fact = Html("<dt>{}</dt><dd{}>{}</dd>")
        facts = EMPTY.join(
            fact.format(k, data(contract="*", fact=k), _fact(first[k])) for k in shared
        )
        parts.append(
            Html('<p>The same for all {} condition(s):</p><dl class="facts">{}</dl>{}').format(
                len(contracts), facts, Html("<p>By condition:</p>") if varying else EMPTY
            )
        )
    if varying:
        fact = Html('<td class="fact"{}>{}</td>')
        rows = [
            Html("<tr><td>{}</td>{}</tr>").format(
                c,
                EMPTY.join(
                    fact.format(data(contract=c, fact=k), _fact(facts[k]) if k in facts else EMPTY)
                    for k in varying
                ),
            )
            for c, facts in contracts.items()
        ]
        parts.append(table(["condition", *varying], rows))
    return EMPTY.join(parts) + Html("</section>")


# --------------------------------------------------------------------------- the page


def repro_version() -> str:
    """The version of repro making the page (:func:`repro.version`)."""
    return repro.version()


def _when(environment: Environment | None, version: str) -> Html:
    """When the study ran and with which repro (environment.json, as the study recorded it),
    and which repro made the page."""
    made = Html("This page was made by repro {} from the verified bundle.").format(version)
    if environment is None:
        return Html("<p>{}</p>").format(made)
    e = environment

    def utc(stamp: str) -> Html:
        return Html('<time datetime="{}">{} UTC</time>').format(stamp, stamp.replace("T", " ")[:-1])

    return Html(
        "<p{}>Study ran from {} to {} with repro <span{}>{}</span> on {} {} (as its "
        "environment.json records). {}</p>"
    ).format(
        data(started=e.started_utc, finished=e.finished_utc),
        utc(e.started_utc),
        utc(e.finished_utc),
        data(repro_version=e.repro_version),
        e.repro_version,
        e.implementation,
        e.python,
        made,
    )


def _heading(
    fp: FrozenProtocol, ledger: Ledger, bundle_sha256: str | None, continued: str | None = None
) -> Html:
    """The page's title, its protocol and adapter, the bundle's identity when known, and,
    for a study continued from an interrupted one, ``continued``; for one of runs made
    elsewhere, that its figures recompute them (:func:`repro._derive.facts.recorded_reading`)."""
    p = fp.protocol
    identity = Html("<p>Bundle sha256 (of its tag manifest): <code>{}</code></p>")
    note = (
        EMPTY
        if continued is None
        else Html("\n<p id=continued>{}.</p>").format(continued[:1].upper() + continued[1:])
    )
    recorded = ledger.adapter.recorded_from
    if recorded is not None:
        note += Html("\n<p id=recorded>{}</p>").format(recorded_reading(recorded))
    return Html(
        "<h1>{}</h1>\n<p>Protocol <code{}>{}</code>, sha256 <code{}>{}</code>; adapter "
        "<code>{}</code> {}.</p>{}{}"
    ).format(
        p.title,
        data(protocol=p.id),
        p.id,
        data(protocol_sha256=fp.sha256),
        fp.sha256,
        ledger.adapter.name,
        ledger.adapter.version,
        EMPTY if bundle_sha256 is None else Html("\n") + identity.format(bundle_sha256),
        note,
    )


def _page(title: str, body: Sequence[Html]) -> str:
    """The page of ``body``'s parts (those not left out), one a line."""
    return str(
        Html(
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" '
            "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<title>{}</title><style>\n{}</style></head>\n<body>\n{}\n</body></html>\n"
        ).format(title, _style(), Html("\n").join(part for part in body if part))
    )


def render(
    fp: FrozenProtocol,
    agg: Aggregates,
    tiers: Tiers,
    ledger: Ledger,
    scores: Scores | None = None,
    bundle_sha256: str | None = None,
    *,
    environment: Environment | None = None,
    values: Mapping[str, Sequence[float]] | None = None,
    version: str | None = None,
    contrasts: ContrastsFile | None = None,
    rl: RLAggregates | None = None,
    lost_as: Mapping[str, LossStatus] | None = None,
    continued: str | None = None,
) -> str:
    """The page for a bundle's parsed files (the caller verified the bundle). A pure function:
    the same bundle gives the same bytes. ``bundle_sha256`` is the bundle's identity (the
    digest of its tag manifest) when known; ``environment`` says when the study ran;
    ``values`` are each condition's valid measures (:func:`repro._derive.derivation.run_measures`),
    which the plot draws run by run; ``version`` is repro's (:func:`repro_version` by
    default); ``contrasts`` is contrasts.json, whose section (a forest plot and a table) and
    primary contrasts' sentences in the claim are only on the page of a bundle that has it, as
    ``rl``'s section (rl-aggregates.json) is; ``lost_as`` is how each lost slot ended, by its
    last attempt's status (:meth:`repro._present.showing.Shown.lost_as`); ``continued`` what
    the page says, below the bundle's identity, of a study continued from an interrupted one
    (:func:`repro._derive.continuation.continued_note`)."""
    order = [f.name for f in fp.protocol.matrix]
    model = figures(fp, agg, tiers, values)
    forest = None if contrasts is None else forest_model(contrasts, agg.measure)
    plot = Html("<section id=plot><h2>Plot</h2>{}</section>").format(plot_figure(model))
    return _page(
        fp.protocol.title,
        [
            _heading(fp, ledger, bundle_sha256, continued),
            _when(environment, version or repro_version()),
            _claim(agg, tiers, ledger, forest),
            _conditions(model),
            EMPTY if forest is None else _contrasts(forest, agg, order),
            EMPTY if rl is None else _rl(rl),
            plot,
            EMPTY if scores is None else _scores(scores, order),
            _tiers(tiers, ledger),
            _contracts(ledger),
            losses_section(ledger, lost_as),
            Html(
                "<section id=recheck><h2>Re-check</h2><p>Offline, with no simulator installed, "
                "from a copy of the bundle: <code>repro verify BUNDLE_DIR</code></p></section>"
            ),
        ],
    )
