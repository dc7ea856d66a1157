"""The ``repro`` command line (:mod:`~repro._cli.app`): parse, call, print, and end with the exit
code :data:`repro.errors.EXIT_CODES` gives each error."""

from repro._cli.app import app, main

__all__ = ["app", "main"]
