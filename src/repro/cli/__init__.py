"""The ``repro`` command line (:mod:`~repro.cli.app`): parse, call, print; exit codes in one
place."""

from repro.cli.app import app, main

__all__ = ["app", "main"]
