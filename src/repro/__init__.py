"""repro: turn a frozen experiment protocol into a sealed, offline-verifiable evidence bundle."""

__version__ = "0.1.0"

#: The distribution (the name on the package index and in ``importlib.metadata``) that provides
#: the ``repro`` import package and command. Not ``repro``: that name on the index belongs to
#: another project, whose distribution installs an import package and a command named ``repro``
#: too, so the two cannot share one environment (README, "Install").
DISTRIBUTION = "repro-evidence"

__all__ = ["DISTRIBUTION", "__version__", "version"]


def version() -> str:
    """repro's version as installed (the distribution's metadata), or the package's own
    ``__version__`` when it runs from a source tree that is not installed."""
    import importlib.metadata

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return __version__
