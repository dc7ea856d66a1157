"""The bundle on disk: which files a bundle holds (:mod:`~repro.bundle.layout`, the one
definition every other step reads) and the writer that puts them into a fresh root as a BagIt
bag, each file atomically, the tag manifest last (:mod:`~repro.bundle.writer`).

The writer's names load on first use: the layout is read by the plan, the derivations and
verify, which the writer itself depends on."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from repro.bundle import layout

if TYPE_CHECKING:
    from repro.bundle.writer import (
        BAGIT_TXT,
        MANIFEST_LINE,
        BundleWriter,
        bag_info,
        create_root,
        manifest_text,
    )

__all__ = [
    "BAGIT_TXT",
    "MANIFEST_LINE",
    "BundleWriter",
    "bag_info",
    "create_root",
    "layout",
    "manifest_text",
]

_WRITER = frozenset(__all__) - {"layout"}


def __getattr__(name: str) -> Any:
    if name not in _WRITER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.writer"), name)
