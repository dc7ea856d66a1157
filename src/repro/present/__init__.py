"""Presentation of a verified bundle: read it once verified (:mod:`~repro.present.showing`),
print its tables in a terminal (:mod:`~repro.present.terminal`), draw its plot as a PNG
(:mod:`~repro.present.plot`), render it as one HTML page (:mod:`~repro.present.html`), and
publish a scored study's results table when its gates hold (:mod:`~repro.present.publishing`).
The terminal, the PNG and the page show the figures of one model,
:mod:`repro.derive.figures`."""

from repro.present.showing import Shown, load

__all__ = ["Shown", "load"]
