"""data/ro-crate-metadata.json: the bundle's payload described as an RO-Crate 1.1 that conforms
to the Process Run Crate profile (0.5), so that research-object tools can read what the bundle
holds and how its runs were made.

- The root dataset (``./``, the payload directory ``data/``) has the protocol's title as its
  name, its description, the date the study finished as datePublished, and its licence (the
  protocol's SPDX ``license``; see the versions below when it names none); every payload file is
  in its hasPart.
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

Three versions are made, and verify re-derives the one a stored crate declares
(:func:`version_of`):

- ``repro.crate/1`` (no marker): both the RO-Crate 1.1 and the workflow-run contexts, each action's
  object and result as one-element lists, its times as recorded (microseconds, ``Z``), its
  actionStatus as a reference, and no licence when the protocol names none.
- ``repro.crate/2`` (the metadata descriptor's ``version``): the RO-Crate 1.1 context alone (the
  crate uses none of the workflow-run terms), a single value wherever a list would hold one, each
  action's times to the millisecond with the offset ``+00:00`` (the ISO 8601 form the Process Run
  Crate profile checks; times/ keeps the microseconds), its actionStatus as the status's IRI as a
  string, and a licence always: the protocol's SPDX licence, or :data:`NO_LICENCE` (no licence
  granted) when it names none.
- ``repro.crate/3`` (what a study writes): version 2, with each package repro's own adapters
  pin from the package index identified there: a package of :data:`PUBLISHED` that the ledger
  pins at a release version (:func:`release_page`: a public PEP 440 version, no local ``+``
  part, no ``.dev``) is the index's page of that release,
  ``https://pypi.org/project/<normalized-name>/<version>/``, as both its ``@id`` and its
  ``url``. Anything else keeps its local identifier and no url: repro itself (its distribution
  is not on the index), the adapter (the bundle records its name and the simulator's version,
  not the distribution that provides it), a package at a version that is not a release, and a
  package a third party's adapter pins (repro cannot know that the index's page of that name
  is that package's). Nothing is looked up: the page is a pure function of the name and
  version recorded.

In every version repro's softwareVersion is the one environment.json records (the repro that
made the bundle).

In every version the root names the protocol's ``authors`` as its author and its ``publisher``
as its publisher, each a Person or an Organization entity (identified by its ORCID iD or ROR ID
where the protocol gives one), and says nothing of either when the protocol names none: a crate
of a protocol without them is byte for byte what it was before protocols could name them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson
from attrs import frozen

from repro._json import canonical
from repro.models import AttemptTimes, Contributor, Environment, FrozenProtocol, Ledger

__all__ = [
    "CRATE_VERSION",
    "NO_LICENCE",
    "PROFILE",
    "PUBLISHED",
    "VERSIONS",
    "ActionFacts",
    "CrateBuilder",
    "release_page",
    "version_of",
]

#: The Process Run Crate profile the crate conforms to.
PROFILE = "https://w3id.org/ro/wfrun/process/0.5"
_RO_CRATE_CONTEXT = "https://w3id.org/ro/crate/1.1/context"
_CONTEXTS: dict[int, Any] = {
    1: [_RO_CRATE_CONTEXT, "https://w3id.org/ro/terms/workflow-run/context"],
    2: _RO_CRATE_CONTEXT,
    3: _RO_CRATE_CONTEXT,
}
#: The crate versions verify re-derives, by the marker each declares in its metadata descriptor's
#: ``version`` (none: version 1).
VERSIONS = {None: 1, "repro.crate/2": 2, "repro.crate/3": 3}
#: The version a study writes.
CRATE_VERSION = 3
#: What a version 2 crate's root says as its licence when the protocol names none: no licence is
#: granted, which is what the absence of one means (all rights reserved).
NO_LICENCE = {
    "@id": "#no-licence-granted",
    "@type": "CreativeWork",
    "name": "No licence granted",
    "description": "The protocol names no licence for what this bundle holds, so none is "
    "granted: all rights are reserved by its authors unless they grant one elsewhere.",
}
#: Where a version 3 crate says a package release is published: the package index's page of
#: each release, by the package's normalized name (PEP 503) and its version.
_INDEX = "https://pypi.org/project/"
#: A distribution name (PEP 508): letters and digits, with ``.``, ``_`` and ``-`` inside.
_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
#: A release version in its normalized form (PEP 440), as the index publishes it: release
#: numbers, an optional pre-release and post-release; no development release or local (``+``)
#: part, which name a build of a source tree rather than a release, and no epoch (rare, and
#: left local rather than spelt in an address).
_RELEASE = re.compile(
    r"(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*((a|b|rc)(0|[1-9][0-9]*))?(\.post(0|[1-9][0-9]*))?"
)
#: The distributions (normalized names) repro's own adapters pin that the package index
#: publishes under those names: gymnasium and NumPy (the gymnasium adapter), csle-cyborg (the
#: cyborg adapter; upstream CybORG, installed from a clone, is not the index's), inspect-ai
#: (the inspect adapter) and jsonschema (the command adapter's outcome schemas). A change here
#: changes version 3 crates, so it needs a new crate version.
PUBLISHED = frozenset({"gymnasium", "numpy", "csle-cyborg", "inspect-ai", "jsonschema"})
_COMPLETED = "http://schema.org/CompletedActionStatus"
_FAILED = "http://schema.org/FailedActionStatus"
#: Mentions made at a time.
_BATCH = 1024
_FORMATS = {
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".md": "text/markdown",
    ".csv": "text/csv",
}


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


def _one_or_list(values: list[Any], version: int) -> Any:
    """A list, or in version 2 its one value when it holds one (RO-Crate 1.1 recommends single
    values over singleton lists)."""
    return values[0] if version >= 2 and len(values) == 1 else values


def _time(utc: str, version: int) -> str:
    """A recorded UTC time (microseconds, ``Z``) as the crate says it: as recorded in version 1,
    to the millisecond with ``+00:00`` in version 2."""
    return utc if version < 2 else f"{utc[:23]}+00:00"


def version_of(descriptor: Any) -> int | None:
    """The version a stored crate declares, from its metadata descriptor (the first entity of
    its graph, parsed): None for a descriptor that is not one or a marker verify does not
    know."""
    if not isinstance(descriptor, dict) or descriptor.get("@id") != "ro-crate-metadata.json":
        return None
    marker = descriptor.get("version")
    return VERSIONS.get(marker) if marker is None or isinstance(marker, str) else None


def _entity(value: Any) -> bytes:
    return canonical.dumps(value, newline=False)


def _text_entity(value: dict[str, Any]) -> bytes:
    """:func:`_entity` of an entity that holds only strings (and objects and lists of them):
    the same bytes, without looking for a number that is not finite, as it holds none."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _mention(attempt: str) -> bytes:
    """:func:`_entity` of the reference to an attempt's action."""
    return b'{"@id":' + orjson.dumps(f"#{attempt}") + b"}"


def _descriptors(version: int) -> list[dict[str, Any]]:
    """The metadata descriptor (this file, about the root dataset, with its version's marker
    from version 2 on) and the profile it follows."""
    descriptor: dict[str, Any] = {
        "@id": "ro-crate-metadata.json",
        "@type": "CreativeWork",
        "conformsTo": _ref("https://w3id.org/ro/crate/1.1"),
        "about": _ref("./"),
    }
    if version >= 2:
        descriptor["version"] = f"repro.crate/{version}"
    return [
        descriptor,
        {
            "@id": PROFILE,
            "@type": "CreativeWork",
            "name": "Process Run Crate",
            "version": "0.5",
        },
    ]


def release_page(name: str, version: str | None) -> str | None:
    """The package index's page of the release ``version`` of the distribution ``name``, or
    None when the name is not a distribution name, the version is not a release (see
    :data:`_RELEASE`), or it is not one repro knows the index publishes (:data:`PUBLISHED`).
    Made from the name and version alone: nothing is looked up."""
    if version is None or not _NAME.fullmatch(name) or not _RELEASE.fullmatch(version):
        return None
    normalized = re.sub(r"[-_.]+", "-", name).lower()
    return f"{_INDEX}{normalized}/{version}/" if normalized in PUBLISHED else None


def _application(local: str, page: str | None, taken: set[str], **facts: Any) -> dict[str, Any]:
    """A SoftwareApplication identified by its release ``page`` (its ``@id`` and ``url``) when
    there is one that no entity made before has taken, else by its ``local`` identifier."""
    entity: dict[str, Any] = {"@id": local, "@type": "SoftwareApplication", **facts}
    if page is not None and page not in taken:
        taken.add(page)
        entity.update({"@id": page, "url": page})
    return entity


def _software(ledger: Ledger, environment: Environment, version: int) -> list[dict[str, Any]]:
    """repro, the adapter, and the packages the ledger pins (which the adapter requires); from
    version 3, each package of :data:`PUBLISHED` at a release identified by its release page."""
    facts = ledger.adapter
    packages = [s for s in ledger.sources if s.kind == "package"]
    taken: set[str] = set()
    if version >= 3:
        pages = [release_page(s.name, s.version) for s in packages]
    else:  # local identifiers alone
        pages = [None] * len(packages)
    made = [
        _application(
            "#repro",
            None,
            taken,
            name="repro",
            softwareVersion=environment.repro_version,
            description="sealed the plan, drove every run and wrote this bundle",
        ),
        *(
            _application(
                f"#package-{s.name}",
                page,
                taken,
                name=s.name,
                softwareVersion=s.version,
                description=f"pinned in the source ledger as the {s.role}",
            )
            for s, page in zip(packages, pages, strict=True)
        ),
    ]
    adapter = {
        "@id": "#adapter",
        "@type": "SoftwareApplication",
        "name": f"repro adapter {facts.name}",
        "softwareVersion": facts.version,
        "description": facts.observation_note,
        "softwareRequirements": _one_or_list([_ref(p["@id"]) for p in made[1:]], version),
    }
    return [made[0], adapter, *made[1:]]


def _credited(
    authors: Sequence[Contributor], publisher: Contributor | None
) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """The entities of the protocol's authors and publisher (one per distinct contributor), the
    ``@id`` of each author in order, and the publisher's. A contributor is identified by its
    ORCID iD or ROR ID, else locally (``#author-N``, ``#publisher``); the publisher named as
    an author too is that author's entity."""
    entities: dict[Contributor, dict[str, Any]] = {}

    def entity(c: Contributor, local: str) -> str:
        if c not in entities:
            made: dict[str, Any] = {
                "@id": c.orcid or c.ror or local,
                "@type": "Person" if c.kind == "person" else "Organization",
                "name": c.name,
            }
            if c.url is not None:
                made["url"] = c.url
            entities[c] = made
        identifier: str = entities[c]["@id"]
        return identifier

    ids = [entity(a, f"#author-{n}") for n, a in enumerate(authors, 1)]
    published_by = entity(publisher, "#publisher") if publisher is not None else None
    unique = {e["@id"]: e for e in entities.values()}
    return list(unique.values()), ids, published_by


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
    holds more than one partition's actions. ``version`` is the crate version made (a key of
    :data:`VERSIONS`' values): a study makes :data:`CRATE_VERSION`, verify the stored one's."""

    def __init__(
        self,
        frozen_protocol: FrozenProtocol,
        ledger: Ledger,
        environment: Environment,
        files: Sequence[str],
        version: int = CRATE_VERSION,
    ) -> None:
        self._version = version
        self._fp = frozen_protocol
        self._ledger = ledger
        self._environment = environment
        #: Payload files, as paths below ``data/``, in the order hasPart lists them.
        self._files = [f.removeprefix("data/") for f in files]
        self._first = True

    def _item(self, entity: dict[str, Any], text: bool = False) -> bytes:
        comma = b"\n" if self._first else b",\n"
        self._first = False
        return comma + (_text_entity(entity) if text else _entity(entity))

    def head(self) -> bytes:
        """The start of the crate: the metadata descriptor, the profile, the software and the
        files."""
        entities = [
            *_descriptors(self._version),
            *_software(self._ledger, self._environment, self._version),
            *_files(self._files),
        ]
        return (
            b'{"@context":'
            + _entity(_CONTEXTS[self._version])
            + b',"@graph":['
            + b"".join(self._item(e) for e in entities)
        )

    def partition(self, partition: str, actions: Iterable[ActionFacts]) -> Iterator[bytes]:
        """The actions of one partition's attempts that ran, in the order of its runs file, one
        at a time."""
        v = self._version
        # What every action of the partition says alike, made once (each action's entity holds
        # the same values, which are only written).
        instrument, agent = _ref("#adapter"), _ref("#repro")
        made_of = _one_or_list([_ref(f"plans/{partition}.json")], v)
        result = _one_or_list([_ref(f"runs/{partition}.jsonl")], v)
        for a in actions:
            status = _COMPLETED if a.status in ("valid", "excluded") else _FAILED
            entity: dict[str, Any] = {
                "@id": f"#{a.attempt_id}",
                "@type": "CreateAction",
                "name": f"attempt {a.attempt_id} of slot {a.slot} (condition {a.condition})",
                "instrument": instrument,
                "agent": agent,
                "object": made_of,
                "result": result,
                "startTime": _time(a.times.started_utc, v),
                "endTime": _time(a.times.finished_utc, v),
                # The profile checks the status as its IRI written as a string.
                "actionStatus": status if v >= 2 else _ref(status),
                "description": f"{a.status}" + (f": {a.cause}" if a.cause else ""),
            }
            if a.status in ("failed", "invalid"):
                entity["error"] = a.cause or a.status
            yield self._item(entity, text=True)

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
        licence = self._licence()
        if licence is not None:
            root["license"] = _ref(licence["@id"])
            yield self._item(licence)
        people, authors, publisher = _credited(p.authors, p.publisher)
        for person in people:
            yield self._item(person)
        if authors:
            root["author"] = _one_or_list([_ref(a) for a in authors], self._version)
        # "publisher" sorts after "name", which the root's last line holds.
        last: dict[str, Any] = {"name": p.title}
        if publisher is not None:
            last["publisher"] = _ref(publisher)
        ids = iter(attempts)
        first = list(itertools.islice(ids, 2))
        if self._version >= 2 and len(first) == 1:  # one action: a single value, not a list
            yield self._item({**root, "mentions": _ref(f"#{first[0]}"), **last})
            yield b"\n]}\n"
            return
        # The keys in sorted order, as everywhere: "mentions" (every action, a line each) comes
        # between "license" and "name".
        yield self._item(root)[:-1] + b',"mentions":['
        batch: list[bytes] = []
        for number, attempt in enumerate(itertools.chain(first, ids)):
            batch.append((b",\n" if number else b"\n") + _mention(attempt))
            if len(batch) == _BATCH:
                yield b"".join(batch)
                batch.clear()
        yield b"".join(batch)
        yield b"\n]," + _entity(last)[1:] + b"\n]}\n"

    def _licence(self) -> dict[str, Any] | None:
        """The licence's entity: the protocol's SPDX licence, or in version 2 :data:`NO_LICENCE`
        when it names none (version 1 then says nothing)."""
        spdx = self._fp.protocol.license
        if spdx is None:
            return NO_LICENCE if self._version >= 2 else None
        url = f"https://spdx.org/licenses/{spdx}"
        entity: dict[str, Any] = {"@id": url, "@type": "CreativeWork", "name": spdx}
        if self._version >= 2:
            entity["description"] = "the licence the protocol names for what this bundle holds"
        return entity
