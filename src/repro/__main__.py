"""``python -m repro``: the same command line as the ``repro`` console script."""

from repro.cli.app import main

main()
