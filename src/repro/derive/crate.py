"""data/ro-crate-metadata.json: the bundle's payload described as an RO-Crate 1.1 that conforms
to the Process Run Crate profile (0.5), so that research-object tools can read what the bundle
holds and how its runs were made.

- The root dataset (``./``, the payload directory ``data/``) has the protocol's title as its
  name, its description, the date the study finished as datePublished, and the protocol's
  ``license`` (an SPDX identifier) when it declares one; every payload file is in its hasPart.
- The adapter that ran the simulator is a SoftwareApplication (with the packages the ledger
  pins, by version), and repro itself, which drove the runs, another.
- Each attempt that ran is a CreateAction: the adapter as its instrument, the sealed partition
  file as its object, the runs file as its result, its start and end time (from
  times/<partition>.jsonl), and its actionStatus: CompletedActionStatus for a valid run or
  one on a superseded scenario version, FailedActionStatus with the cause as ``error`` for a
  failed or invalid one. A declared exclusion never ran and has no action.

The file is JSON with each entity of the graph (and each of the root's mentions) on a line of its
own, each in canonical form. Its graph is written in an order that lets it be made one partition
at a time (the root dataset last, since it mentions every action), so ``repro verify``
re-derives it while it reads the runs, holding one partition at a time, and compares its digest
with the file's; and no line grows with the runs, so reading it holds little.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from attrs import frozen

from repro import __version__
from repro.json import canonical
from repro.models import AttemptTimes, Environment, FrozenProtocol, Ledger

__all__ = ["PROFILE", "ActionFacts", "CrateBuilder"]

#: The Process Run Crate profile the crate conforms to.
PROFILE = "https://w3id.org/ro/wfrun/process/0.5"
_CONTEXT = [
    "https://w3id.org/ro/crate/1.1/context",
    "https://w3id.org/ro/terms/workflow-run/context",
]
_COMPLETED = "http://schema.org/CompletedActionStatus"
_FAILED = "http://schema.org/FailedActionStatus"
#: Mentions made at a time.
_BATCH = 1024
_FORMATS = {".json": "application/json", ".jsonl": "application/jsonl", ".md": "text/markdown"}


@frozen
class ActionFacts:
    """What the crate says of one attempt that ran: its record's ID, slot, condition, status and
    cause, and its times."""

    attempt_id: str
    slot: str
    condition: str
    status: str
    cause: str | None
    times: AttemptTimes


def _ref(identifier: str) -> dict[str, str]:
    return {"@id": identifier}


def _entity(value: Any) -> bytes:
    return canonical.dumps(value, newline=False)


def _descriptors() -> list[dict[str, Any]]:
    """The metadata descriptor (this file, about the root dataset) and the profile it follows."""
    return [
        {
            "@id": "ro-crate-metadata.json",
            "@type": "CreativeWork",
            "conformsTo": _ref("https://w3id.org/ro/crate/1.1"),
            "about": _ref("./"),
        },
        {
            "@id": PROFILE,
            "@type": "CreativeWork",
            "name": "Process Run Crate",
            "version": "0.5",
        },
    ]


def _software(ledger: Ledger) -> list[dict[str, Any]]:
    """repro, the adapter, and the packages the ledger pins (which the adapter requires)."""
    facts = ledger.adapter
    packages = [s for s in ledger.sources if s.kind == "package"]
    return [
        {
            "@id": "#repro",
            "@type": "SoftwareApplication",
            "name": "repro",
            "softwareVersion": __version__,
            "description": "sealed the plan, drove every run and wrote this bundle",
        },
        {
            "@id": "#adapter",
            "@type": "SoftwareApplication",
            "name": f"repro adapter {facts.name}",
            "softwareVersion": facts.version,
            "description": facts.observation_note,
            "softwareRequirements": [_ref(f"#package-{s.name}") for s in packages],
        },
        *(
            {
                "@id": f"#package-{s.name}",
                "@type": "SoftwareApplication",
                "name": s.name,
                "softwareVersion": s.version,
                "description": f"pinned in the source ledger as the {s.role}",
            }
            for s in packages
        ),
    ]


def _files(files: Sequence[str]) -> list[dict[str, Any]]:
    """A File entity per payload file (paths below ``data/``), with its media type."""
    return [
        {
            "@id": name,
            "@type": "File",
            "name": name,
            "encodingFormat": _FORMATS.get(name[name.rfind(".") :], "application/octet-stream"),
        }
        for name in files
    ]


class CrateBuilder:
    """Makes the crate's bytes piece by piece: :meth:`head`, then :meth:`partition` for each
    partition in sealed order, then the pieces of :meth:`tail`. Joined, they are the whole
    crate, whichever way they are consumed (written, or hashed as they come); none of them
    holds more than one partition's actions."""

    def __init__(
        self,
        frozen_protocol: FrozenProtocol,
        ledger: Ledger,
        environment: Environment,
        files: Sequence[str],
    ) -> None:
        self._fp = frozen_protocol
        self._ledger = ledger
        self._environment = environment
        #: Payload files, as paths below ``data/``, in the order hasPart lists them.
        self._files = [f.removeprefix("data/") for f in files]
        self._first = True

    def _item(self, entity: dict[str, Any]) -> bytes:
        comma = b"\n" if self._first else b",\n"
        self._first = False
        return comma + _entity(entity)

    def head(self) -> bytes:
        """The start of the crate: the metadata descriptor, the profile, the software and the
        files."""
        entities = [*_descriptors(), *_software(self._ledger), *_files(self._files)]
        return (
            b'{"@context":'
            + _entity(_CONTEXT)
            + b',"@graph":['
            + b"".join(self._item(e) for e in entities)
        )

    def partition(self, partition: str, actions: Iterable[ActionFacts]) -> Iterator[bytes]:
        """The actions of one partition's attempts that ran, in the order of its runs file, one
        at a time."""
        for a in actions:
            entity: dict[str, Any] = {
                "@id": f"#{a.attempt_id}",
                "@type": "CreateAction",
                "name": f"attempt {a.attempt_id} of slot {a.slot} (condition {a.condition})",
                "instrument": _ref("#adapter"),
                "agent": _ref("#repro"),
                "object": [_ref(f"plans/{partition}.json")],
                "result": [_ref(f"runs/{partition}.jsonl")],
                "startTime": a.times.started_utc,
                "endTime": a.times.finished_utc,
                "actionStatus": _ref(_COMPLETED if a.status in ("valid", "excluded") else _FAILED),
                "description": f"{a.status}" + (f": {a.cause}" if a.cause else ""),
            }
            if a.status in ("failed", "invalid"):
                entity["error"] = a.cause or a.status
            yield self._item(entity)

    def tail(self, attempts: Iterable[str]) -> Iterator[bytes]:
        """The root dataset, which lists every file and mentions every action (``attempts``:
        the IDs of the attempts that ran, in the order of the partitions' actions), and the end.
        The mentions come a few at a time, so that nothing here grows with the runs."""
        p = self._fp.protocol
        root: dict[str, Any] = {
            "@id": "./",
            "@type": "Dataset",
            "conformsTo": _ref(PROFILE),
            "description": p.description or p.title,
            "datePublished": self._environment.finished_utc,
            "identifier": f"sha256:{self._fp.sha256}",
            "hasPart": [_ref(name) for name in self._files],
        }
        if p.license is not None:
            url = f"https://spdx.org/licenses/{p.license}"
            root["license"] = _ref(url)
            yield self._item({"@id": url, "@type": "CreativeWork", "name": p.license})
        # The keys in sorted order, as everywhere: "mentions" (every action, a line each) comes
        # between "license" and "name".
        yield self._item(root)[:-1] + b',"mentions":['
        batch: list[bytes] = []
        for number, attempt in enumerate(attempts):
            batch.append((b",\n" if number else b"\n") + _entity(_ref(f"#{attempt}")))
            if len(batch) == _BATCH:
                yield b"".join(batch)
                batch.clear()
        yield b"".join(batch)
        yield b'\n],"name":' + _entity(p.title) + b"}\n]}\n"
