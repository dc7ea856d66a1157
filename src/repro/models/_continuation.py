"""A continued study's account of what it carried from the interrupted study it continues
(``data/continuation.json``, ``repro.continuation/1``), present only in a bundle made by
``repro study --continue-from``."""

from __future__ import annotations

from typing import Literal

from attrs import field, frozen

from repro.models._constraints import POSITIVE, SHA256

__all__ = ["CarriedPartition", "Continuation"]


@frozen
class CarriedPartition:
    """One partition carried whole from the interrupted study: its runs and times files as
    they were there, each by its path in the bundle and its sha256 (which the bundle's manifest
    gives that file too), and how many slots and run records (attempts) they hold."""

    partition: str
    files: dict[str, str]
    slots: int = field(validator=POSITIVE)
    attempts: int = field(validator=POSITIVE)


@frozen
class Continuation:
    """data/continuation.json: what a continued study carried from the interrupted one and what
    it ran itself. Every sealed partition is either carried (whole: its runs and times files,
    byte for byte) or ran, never both, each list in sealed order. ``carried_sha256`` is the
    sha256 of the canonical JSON of ``carried``: it names what the interrupted study gave.
    ``unfinished`` lists the partitions the interrupted study had begun and not finished: none
    of their records was carried, and they ran again from their first slot (so an attempt the
    interruption cut short is run again, and no record of it exists). ``interruption`` is how
    the interrupted study said it stopped (``SIGINT``, ``SIGTERM``, ...), null when it left no
    word (a study killed outright)."""

    schema: Literal["repro.continuation/1"]
    carried_sha256: str = field(validator=SHA256)
    carried: tuple[CarriedPartition, ...]
    ran: tuple[str, ...]
    unfinished: tuple[str, ...]
    interruption: str | None
