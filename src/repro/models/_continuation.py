"""A continued study's account of what it carried from the interrupted study it continues
(``data/continuation.json``), present only in a bundle made by ``repro study --continue-from``:
``repro.continuation/1`` for a study that seeds each run, ``repro.continuation/2`` (which adds
``rejoined`` and carries each partition's checkpoint) for one generator stream."""

from __future__ import annotations

from typing import Literal

from attrs import field, frozen
from attrs.validators import ge

from repro.models._constraints import OMIT_IF_DEFAULT, POSITIVE, SHA256, within

__all__ = ["CarriedPartition", "Continuation", "Rejoined"]


@frozen
class CarriedPartition:
    """One partition carried whole from the interrupted study: its runs and times files (and, in
    stream mode, its checkpoint) as they were there, each by its path in the bundle and its
    sha256 (which the bundle's manifest gives that file too), and how many slots and run
    records (attempts) they hold."""

    partition: str
    files: dict[str, str]
    slots: int = field(validator=POSITIVE)
    attempts: int = field(validator=POSITIVE)


@frozen
class Rejoined:
    """How a stream-seeded continuation took up the generator stream where the carried
    partitions left it: the slots of the last carried ``partition`` from the last state its
    checkpoint keeps (``start``, that slot's index in the partition's sealed order; 0 is the
    partition's first state) to its end, ``slots`` of them, ran again; their run records were
    the carried ones byte for byte, and the stream they ended in began the next partition."""

    partition: str
    start: int = field(validator=within(ge(0)))
    slots: int = field(validator=POSITIVE)


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
    word (a study killed outright).

    ``repro.continuation/2`` is the account of a stream-seeded study: the carried partitions
    are the plan's first, each with its checkpoint among its ``files``, and ``rejoined`` (present
    when any was carried) says which slots ran again to take up the stream."""

    schema: Literal["repro.continuation/1", "repro.continuation/2"]
    carried_sha256: str = field(validator=SHA256)
    carried: tuple[CarriedPartition, ...]
    ran: tuple[str, ...]
    unfinished: tuple[str, ...]
    interruption: str | None
    rejoined: Rejoined | None = field(default=None, metadata=OMIT_IF_DEFAULT)
