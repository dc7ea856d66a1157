"""The bundle on disk: a BagIt bag written into a fresh root, each file atomically, the tag
manifest last (:mod:`~repro.bundle.writer`)."""

from repro.bundle.writer import (
    BAGIT_TXT,
    MANIFEST,
    MANIFEST_LINE,
    TAG_FILES,
    TAGMANIFEST,
    BundleWriter,
    bag_info,
    create_root,
    manifest_text,
)

__all__ = [
    "BAGIT_TXT",
    "MANIFEST",
    "MANIFEST_LINE",
    "TAGMANIFEST",
    "TAG_FILES",
    "BundleWriter",
    "bag_info",
    "create_root",
    "manifest_text",
]
