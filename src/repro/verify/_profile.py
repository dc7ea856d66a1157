"""repro's BagIt profile (bagit-profiles specification 1.4.0), shipped in the package as
``repro/data/bagit-profile.json`` and named in a bundle's bag-info.txt under
``BagIt-Profile-Identifier`` (:data:`repro._layout.BAGIT_PROFILE`).

A bundle written before the profile names none, and is read as before. One that names it must
name it alone, once, spelled exactly, and conform to it. Most of the profile is what verify's
reading of a bundle's bag already demands of every bundle (:mod:`~repro.verify._integrity`):
BagIt 1.0 (the declaration's bytes), one payload and one tag manifest, both sha256 and no other
(any other file at the top is outside the bag layout), no fetch.txt (likewise), signatures the
only tag directory, the payload files the bundle layout has a place for, and the Payload-Oxum.
What only the profile requires is checked here: each bag-info.txt element its ``Bag-Info``
section requires is there, and each it makes unrepeatable is there once."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from repro import _layout as layout
from repro.verify._findings import Finding

__all__ = ["bagit_profile", "check_profile"]

#: The profile's ``Bag-Info`` elements that the bag-info check of every bundle already covers
#: (``payload-oxum``: stated once, the payload's), which this check leaves to it.
COVERED = frozenset({"Payload-Oxum"})


@cache
def bagit_profile() -> dict[str, Any]:
    """The shipped profile, parsed."""
    # Lazy: importlib.resources only when a bundle names the profile.
    from importlib.resources import files

    text = files("repro").joinpath(layout.BAGIT_PROFILE_FILE).read_text("utf-8")
    profile: dict[str, Any] = json.loads(text)
    return profile


def _named(label: str) -> bool:
    """Whether ``label`` is the profile identifier's, however it is cased."""
    return label.casefold() == layout.BAGIT_PROFILE_LABEL.casefold()


def check_profile(elements: Sequence[tuple[str, str]], findings: list[Finding]) -> None:
    """The profile's rules for a bundle's bag-info.txt ``elements`` (label and value, in
    order), when it names a profile: repro's alone, once, as written (else
    ``bag-info-profile``, and nothing more is checked against a profile that is not repro's);
    then each element the profile requires (``bag-info-profile-tag-missing``), and each it
    allows once, once (``bag-info-profile-tag-repeated``)."""
    named = [(label, value.strip()) for label, value in elements if _named(label)]
    if not named:
        return
    if named != [(layout.BAGIT_PROFILE_LABEL, layout.BAGIT_PROFILE)]:
        findings.append(
            Finding(
                "bag-info-profile",
                layout.BAG_INFO,
                "the BagIt profile it names is not repro's, or not named once as written",
                f"{layout.BAGIT_PROFILE_LABEL}: {layout.BAGIT_PROFILE}",
                "; ".join(f"{label}: {value}" for label, value in named),
            )
        )
        return
    for tag, rule in bagit_profile()["Bag-Info"].items():
        if tag in COVERED:
            continue
        count = sum(1 for label, _ in elements if label == tag)
        if rule.get("required", False) and count == 0:
            findings.append(
                Finding(
                    "bag-info-profile-tag-missing",
                    layout.BAG_INFO,
                    f"{tag}, which repro's BagIt profile requires, is missing",
                    "present",
                    "missing",
                )
            )
        elif not rule.get("repeatable", True) and count > 1:
            findings.append(
                Finding(
                    "bag-info-profile-tag-repeated",
                    layout.BAG_INFO,
                    f"{tag}, which repro's BagIt profile allows once, is repeated",
                    "once",
                    f"{count} times",
                )
            )
