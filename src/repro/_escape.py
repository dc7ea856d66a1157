"""Text from a bundle or a protocol made inert for the medium it goes to: a terminal, Markdown,
JSON. Whatever a string holds (markup, an escape sequence, a newline), a reader's terminal or
renderer shows it as text and never acts on it.

- :func:`visible`, for a terminal: every control character a terminal acts on (C0 but the
  newline, DEL, C1, and the bidirectional controls that reorder what a reader sees) is written
  as its escape (``\\x1b``, ``\\u202e``). Every line the command line prints goes through it,
  and so does the HTML page's text.
- :func:`markdown_text` and :func:`markdown_code`, for Markdown (``validation-report.md``,
  ``repro publish``'s table): a value as text, or as a code span, that starts no block, opens no
  markup and holds no raw HTML, in CommonMark and with GitHub's tables and strikethrough.
- :func:`json_text`, for ``--json``: JSON whose every character outside printable ASCII is a
  ``\\uXXXX`` escape, so that the same values reach a terminal as text.

The module imports only the standard library: ``repro verify`` prints through it before (and
without) importing anything else to print with."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_text", "markdown_code", "markdown_text", "visible"]

#: The bidirectional controls (the embeddings, overrides and isolates, and the marks), which
#: reorder the characters around them as a reader sees them (CVE-2021-42574, "Trojan Source").
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: What a terminal acts on: C0 but the newline (tab, carriage return, escape...), DEL, C1 (whose
#: U+009B is a CSI of its own where a terminal reads UTF-8's C1 as such), and the bidi controls.
_TERMINAL_CONTROLS = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_BIDI}]")
#: What must stay one line (in Markdown, where a newline may start a block, a heading or a
#: list; a finding): the newline too.
_CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")

#: The ASCII punctuation that opens or closes Markdown markup anywhere in a line: backslash
#: escapes, code spans, emphasis and strikethrough, links and images, raw HTML and autolinks,
#: entities, table cells, headings (and their closing sequence), block quotes, GitHub's math.
#: Each is written backslash-escaped, which CommonMark renders as the character itself. ``_``
#: between two letters or digits is left alone (:func:`_delimits`).
_MARKUP = re.compile(r"[\\`*_~\[\]!<>&|#$]")
#: What starts a block at a line's start and is no markup elsewhere: a list item's bullet or
#: number before a space (``- ``, ``+ ``, ``1. ``, ``1) ``), or a line of ``-`` or of ``=`` alone
#: (a thematic break, a setext heading's underline). A value may stand first on its line (as a
#: list item of the report does): there the bullet, the number's ``.`` or ``)``, or the first
#: ``-`` or ``=`` is escaped.
_BLOCK_START = re.compile(r"(?P<item>[-+]|[0-9]{1,9}[.)])(?= |$)|-[- ]*$|=+ *$")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, newlines: bool = True) -> str:
    """``text`` with every control character a terminal acts on written as its escape: C0 but
    the newline, DEL and C1 as ``\\xNN`` (ESC as ``\\x1b``, a carriage return as ``\\x0d``),
    the bidirectional controls as ``\\uNNNN`` (``\\u202e``); without ``newlines``, the newline
    too (``\\x0a``), for what must stay one line. Text without any is returned as it is."""
    return (_TERMINAL_CONTROLS if newlines else _CONTROLS).sub(_escaped, text)


def _delimits(text: str, at: int) -> bool:
    """Whether the ``_`` at ``at`` may open or close emphasis: it may unless a letter or digit
    stands on both sides of it (CommonMark's flanking rules: a ``_`` inside a word is text),
    and the ends of ``text`` count as neither, since what surrounds it is not known here."""
    inside = 0 < at < len(text) - 1
    return not (inside and text[at - 1].isalnum() and text[at + 1].isalnum())


def markdown_text(text: str) -> str:
    """``text`` as Markdown that renders as exactly ``text`` (its control characters as their
    escapes, as :func:`visible` writes them, the newline's as ``\\x0a``), wherever a line puts
    it: in a paragraph, a heading, a list item or a table cell. Nothing in it starts a block,
    opens markup, or is raw HTML, an entity or an autolink: the markup characters are
    backslash-escaped, and so is what would start a block at a line's start (a leading space
    is its character reference)."""
    shown = visible(text, newlines=False)

    def escape(match: re.Match[str]) -> str:
        if match.group() == "_" and not _delimits(shown, match.start()):
            return "_"
        return "\\" + match.group()

    escaped = _MARKUP.sub(escape, shown)
    if escaped.startswith(" "):
        # Spaces that open a line indent it (four, a code block): the first is written as its
        # character reference, which is text, and the line then opens with no space.
        return "&#32;" + escaped[1:]
    block = _BLOCK_START.match(escaped)
    if block is None:
        return escaped
    at = block.end("item") - 1 if block["item"] is not None else 0
    return f"{escaped[:at]}\\{escaped[at:]}"


def markdown_code(text: str) -> str:
    """``text`` as a Markdown code span that renders as exactly ``text`` (its control
    characters as their escapes, the newline's too): fenced by one backtick more than the
    longest run of backticks it holds, so none of them closes it, and padded with a space
    where it starts or ends with a backtick or a space, which CommonMark strips again. Not for
    a table cell, where GitHub's tables split a code span at ``|``."""
    shown = visible(text, newlines=False)
    if not shown:
        return "` `"  # a code span of one space: a backtick pair alone would be text
    longest = max((len(run) for run in re.findall("`+", shown)), default=0)
    fence = "`" * (longest + 1)
    padded = shown.strip(" ") != "" and (shown[0] in "` " or shown[-1] in "` ")
    pad = " " if padded else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def json_text(value: Any) -> str:
    """``value`` as indented JSON in which every character outside printable ASCII (every
    control character, DEL, C1, the bidirectional controls, and all other non-ASCII text) is a
    ``\\uXXXX`` escape: the same values, inert on a terminal."""
    return json.dumps(value, indent=2, ensure_ascii=True)
