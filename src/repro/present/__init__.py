"""Presentation of a verified bundle: read it once verified (:mod:`~repro.present.showing`),
print its tables in a terminal (:mod:`~repro.present.terminal`), draw its plot as a PNG
(:mod:`~repro.present.plot`), render it as one HTML page (:mod:`~repro.present.html`), and
publish a scored study's results table when its gates hold (:mod:`~repro.present.publishing`).
The terminal, the PNG and the page show the figures of one model,
:mod:`repro.figures`.

The package imports none of them: every command prints through :mod:`~repro.present.terminal`'s
consoles, and a study that does must not import the reading of a verified bundle (the verifier
with it) for that."""
