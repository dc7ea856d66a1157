"""repro: turn a frozen experiment protocol into a sealed, offline-verifiable evidence bundle."""

__version__ = "0.1.0"

__all__ = ["__version__", "version"]


def version() -> str:
    """repro's version as installed (the distribution's metadata), or the package's own
    ``__version__`` when it runs from a source tree that is not installed."""
    import importlib.metadata

    try:
        return importlib.metadata.version("repro")
    except importlib.metadata.PackageNotFoundError:
        return __version__
