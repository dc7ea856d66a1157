"""The bundle on disk: the writer that puts the files a bundle holds (:mod:`repro._layout`, the
one definition every other step reads, named here as ``layout`` too) into a fresh root as a
BagIt bag, each file atomically, the tag manifest last (:mod:`~repro._bundle.writer`); the
signatures beside it (:mod:`~repro._bundle.signatures`) and a packed bundle
(:mod:`~repro._bundle.packed`).

The writer's names load on first use: importing this package does not import the derivations
the writer depends on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro import _layout as layout
from repro._lazy import names_on_first_use

if TYPE_CHECKING:
    from repro._bundle.writer import (
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

__getattr__ = names_on_first_use(__name__, dict.fromkeys(set(__all__) - {"layout"}, "writer"))
