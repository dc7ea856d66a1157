"""Names of a package loaded on first use (PEP 562), so that importing the package does not
import every submodule behind it: the command line's option parsing and ``repro verify`` do not
import the study machinery, a worker process does not import every derivation, and importing
``repro._bundle`` does not load the writer (``tests/test_startup.py``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["names_on_first_use"]


def names_on_first_use(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name in ``where`` is taken from the
    submodule of ``package`` it maps to, imported when the name is first asked for; any other
    name is an AttributeError, as for any module."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
