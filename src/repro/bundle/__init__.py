"""The bundle on disk: which files a bundle holds (:mod:`~repro.bundle.layout`, the one
definition every other step reads) and the writer that puts them into a fresh root as a BagIt
bag, each file atomically, the tag manifest last (:mod:`~repro.bundle.writer`).

The writer's names load on first use: the layout is read by the plan, the derivations and
verify, which the writer itself depends on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro._lazy import names_on_first_use
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

__getattr__ = names_on_first_use(__name__, dict.fromkeys(set(__all__) - {"layout"}, "writer"))
