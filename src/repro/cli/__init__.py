"""The ``repro`` command line (:mod:`~repro.cli.app`): parse, call, print, and end with the exit
code :data:`repro.errors.EXIT_CODES` gives each error."""

from repro.cli.app import app, main

__all__ = ["app", "main"]
