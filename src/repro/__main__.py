"""``python -m repro``: the same command line as the ``repro`` console script."""

from repro._cli.app import main

main()
