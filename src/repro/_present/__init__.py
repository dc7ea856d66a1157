"""Presentation of a verified bundle: read it once verified (:mod:`~repro._present.showing`),
print its tables in a terminal (:mod:`~repro._present.terminal`), draw its plot as a PNG
(:mod:`~repro._present.plot`), render it as one HTML page (:mod:`~repro._present.html`), and
publish a scored study's results table when its gates hold (:mod:`~repro._present.publishing`).
The terminal, the PNG and the page show the figures of one model,
:mod:`repro._figures`.

The package imports none of them: every command prints through :mod:`~repro._present.terminal`'s
consoles, and a study that does must not import the reading of a verified bundle (the verifier
with it) for that."""
