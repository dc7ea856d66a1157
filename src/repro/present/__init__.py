"""Presentation of a verified bundle: read it once verified (:mod:`~repro.present.showing`),
render it as one HTML page (:mod:`~repro.present.html`), and publish a scored study's results
table when its gates hold (:mod:`~repro.present.publishing`)."""

from repro.present.showing import NotVerified, Shown, load

__all__ = ["NotVerified", "Shown", "load"]
