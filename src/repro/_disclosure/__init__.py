"""What a bundle must never carry: host paths, tracebacks and credential-looking strings.

By concern: the hit (:mod:`~repro._disclosure.hits`), the pattern engine
(:mod:`~repro._disclosure.engine`), the patterns of host paths, tracebacks and credentials
(:mod:`~repro._disclosure.secrets`), the identity patterns and which file gets which patterns
(:mod:`~repro._disclosure.identity`), hidden spellings (:mod:`~repro._disclosure.normalise`), the
walk over a file's bytes (:mod:`~repro._disclosure.scanner`), and what the study does with a hit
(:mod:`~repro._disclosure.withholding`).

A bundle travels to reviewers and archives, so it must not say where or by whom it was made, nor
hold a secret. The scanner looks at the bytes of one bundle file and reports each hit as a
:class:`Disclosure`: the file, the kind, the byte offset and the name of the pattern that matched,
never the matched text, so that a report about a leak does not leak again.

``repro study`` scans the exact bytes it writes and ``repro verify`` the exact bytes it reads;
the hits in the derivation's input files (:func:`repro._layout.is_derivation_input`)
decide the disclosure tier on both sides, so a stored verdict that hides a hit fails re-derivation.

Design
------

*Linear time.* Every pattern starts only at a boundary (a ``/`` not inside a word or a relative
path, the start of an identifier, a token's first character) and every quantifier is bounded
(possessive where backtracking would only repeat work), so each possible start costs at most a
constant number of steps and no text, however hostile, makes a scan slower than linear. Patterns
without a rare literal to jump by are only run near what they need: the secret-sounding words of
``secret-assignment`` (found by plain substring search), the exactly-40-character runs of
``aws-secret-access-key``.

*Fast where there is nothing to find.* Most patterns name a byte every match holds (``/`` for
POSIX paths, ``@`` for a URL password, ``J`` for a JWT), and the AWS secret key wants an
upper-case letter: where a buffer lacks it (checked at memchr speed), the regex is not run. A
runs file of numbers, digests and identifiers runs only a few regexes at all.

*Bounded matches, hence streaming.* Because every pattern reads at most a fixed number of bytes
from where a match starts (its ``reach``), a :class:`Scanner` fed a file block by block needs to
carry only a short tail between blocks, and it finds exactly what :func:`scan` finds in the whole
file, whatever the blocks: a position is judged once the bytes it can read are all there. It
keeps the first :data:`MAX_HITS_KEPT` hits and counts the rest (:class:`FileHits`), so neither a
huge file nor a file full of hits holds more than a few blocks' worth of memory.

*Hidden spellings.* Zero-width characters (U+200B, U+200C, U+200D, U+2060, U+FEFF, U+00AD as
UTF-8) inside a path and percent-encoded separators (``%2F``, ``%5C``, ``%3A``, ``%7E``, either
case) would split or hide what the patterns look for. Where the data holds such a sequence
(found by substring search, and only where a ``%`` or the first byte of a zero-width character
occurs), the patterns run over a normalised view with the zero-width characters removed and
those escapes decoded, and each hit is mapped back to the offset of the byte it starts at in
the file.

No pattern reads across a newline, so scanning a JSON Lines file line by line (with each line's
offset) still gives the same hits as scanning the whole file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro._disclosure.hits import MAX_HITS_KEPT, Disclosure, FileHits, Kind
from repro._disclosure.identity import CONTACT_LABELS, IDENTITY_FILES
from repro._disclosure.scanner import Scanner, scan, scan_hits
from repro._lazy import names_on_first_use

if TYPE_CHECKING:
    from repro._disclosure.withholding import (
        WITHHELD_CAUSE,
        refuse_disclosing_protocol,
        short_cause,
        withheld,
    )

__all__ = [
    "CONTACT_LABELS",
    "IDENTITY_FILES",
    "MAX_HITS_KEPT",
    "WITHHELD_CAUSE",
    "Disclosure",
    "FileHits",
    "Kind",
    "Scanner",
    "refuse_disclosing_protocol",
    "scan",
    "scan_hits",
    "short_cause",
    "withheld",
]

#: Withholding names load on first use: it structures protocols, and the scanner alone (which
#: verify's BagIt stage reads every file through) needs none of the models.
__getattr__ = names_on_first_use(
    __name__,
    dict.fromkeys(
        ("WITHHELD_CAUSE", "refuse_disclosing_protocol", "short_cause", "withheld"), "withholding"
    ),
)
