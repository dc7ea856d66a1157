"""repro: turn a frozen experiment protocol into a sealed, offline-verifiable evidence bundle."""

__version__ = "0.1.0"

__all__ = ["__version__"]
