"""HTML by construction for the page (:mod:`repro._present.html`) and its SVG
(:mod:`repro._present.svg`): markup is a :class:`Html` made from a constant of the code, and
every other value that goes into it (a bundle's text, a number) is escaped by the composition
itself, never by a call at the place it goes in.

:class:`Html` is markupsafe's :class:`~markupsafe.Markup` with the page's escaping: whatever is
added to it (``+``), formatted into it (:meth:`~markupsafe.Markup.format`) or joined by it
(:meth:`~markupsafe.Markup.join`) is a value as text, unless it is markup already (a
:class:`Html`). As text, it is :func:`html.escape`'d with quotes, so that it is inert in element
content and in a quoted attribute value alike, and its control characters, the bidirectional
ones among them, are shown as text (:func:`repro._escape.visible`), so that none reorders what a
reader sees. The one rule at a call site: ``Html(...)`` only of a constant (a literal of the
code, or the package's own style sheet)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Self

from markupsafe import Markup

from repro._escape import visible

__all__ = ["EMPTY", "Html", "Number", "cell", "data", "figure", "json_value", "num", "table"]

Number = float | int | bool | str | None


class Html(Markup):
    """Markup that escapes every value composed into it as the page's text (the module's
    docstring says how)."""

    __slots__ = ()

    @classmethod
    def escape(cls, s: object, /) -> Self:
        """``s`` as it goes into the page: markup as it is, anything else as escaped text."""
        if isinstance(s, Html):
            return cls(s)
        return cls(html.escape(visible(str(s)), quote=True))


#: Nothing, as markup: where a part of the page is left out.
EMPTY = Html("")


def json_value(value: Number) -> str:
    """A figure as JSON, a float as its ``repr``, ``null`` when undefined."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def data(**names: str) -> Html:
    """The attributes ``data-<name>="<value>"`` (an underscore of the name a hyphen)."""
    attribute = Html(' data-{}="{}"')
    return EMPTY.join(attribute.format(key.replace("_", "-"), v) for key, v in names.items())


def figure(tag: str, value: Number, text: str, css: str = "", **names: str) -> Html:
    """An element showing ``text`` for ``value``, with the attributes that name the figure."""
    return Html('<{tag}{cls}{data} data-value="{value}">{text}</{tag}>').format(
        tag=tag,
        cls=Html(' class="{}"').format(css) if css else EMPTY,
        data=data(**names),
        value=json_value(value),
        text=text,
    )


def num(value: float | None, places: int = 4) -> str:
    """A figure rounded for people, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{value:.{places}f}"


def cell(value: float | int | None, field: str, **names: str) -> Html:
    """A table cell of a figure, right-aligned."""
    text = str(value) if isinstance(value, int) else num(value)
    return figure("td", value, text, "num", field=field, **names)


def table(head: Sequence[str], rows: Sequence[Html], css: str = "") -> Html:
    """A table of a header and rows, wrapped so that a wide one (many checks) scrolls instead
    of overflowing the page."""
    header = EMPTY.join(Html("<th>{}</th>").format(h) for h in head)
    return Html(
        '<div class="wide"><table{}><thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>'
    ).format(Html(' class="{}"').format(css) if css else EMPTY, header, EMPTY.join(rows))
