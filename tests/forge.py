"""What a forger does to a bundle after changing its payload, for the tests: regenerate the
BagIt layer (:func:`reseal`), and, with repro's own code, every derived file from the recorded
ones (:func:`rederive`), so that only a rule verify applies again to the recorded bytes can
catch the change."""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from repro._bundle.writer import manifest_text
from repro._derive.continuation import continuation_problems
from repro._derive.crate import CRATE_VERSION, ActionFacts, CrateBuilder
from repro._derive.derivation import derive, tally_records
from repro._derive.ledger import contract_sha256, source_ledger
from repro._derive.report import REPORT_VERSION
from repro._disclosure import scan_hits
from repro._json import canonical
from repro._json.serde import structure, to_bytes, unstructure
from repro._layout import (
    CONTINUATION,
    CRATE,
    MANIFEST,
    TAGMANIFEST,
    is_derivation_input,
    payload_files,
    run_files,
)
from repro._plan.sealing import partition_ref, sources_sha256
from repro._plan.streams import stream_spacing
from repro.models import (
    AttemptTimes,
    Continuation,
    Environment,
    FrozenProtocol,
    Ledger,
    Partition,
    Protocol,
    RunRecord,
    Seal,
)

__all__ = [
    "edit_protocol",
    "edit_records",
    "forge",
    "forge_figure",
    "forge_ledger",
    "forge_ledger_facts",
    "forge_plan",
    "rederive",
    "reseal",
    "retag",
    "sha256",
]

T = TypeVar("T")


def sha256(path: Path) -> str:
    """Hex sha256 of the file at ``path``."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def retag(root: Path) -> None:
    """Rewrite the tag manifest over the current tag files."""
    tags = {name: sha256(root / name) for name in ("bagit.txt", "bag-info.txt", MANIFEST)}
    (root / TAGMANIFEST).write_bytes(manifest_text(tags))


def reseal(root: Path) -> None:
    """Rewrite Payload-Oxum, the payload manifest and the tag manifest so that BagIt integrity
    holds over whatever regular files data/ now holds."""
    payload = sorted(p for p in (root / "data").rglob("*") if p.is_file() and not p.is_symlink())
    digests = {p.relative_to(root).as_posix(): sha256(p) for p in payload}
    (root / MANIFEST).write_bytes(manifest_text(digests))
    oxum = f"Payload-Oxum: {sum(p.stat().st_size for p in payload)}.{len(payload)}"
    info = (root / "bag-info.txt").read_text("utf-8").splitlines()
    info = [oxum if line.startswith("Payload-Oxum:") else line for line in info]
    (root / "bag-info.txt").write_text("\n".join(info) + "\n", "utf-8")
    retag(root)


def _model(root: Path, name: str, cls: type[T]) -> T:
    return structure(canonical.loads((root / name).read_bytes(), what=name), cls, what=name)


def _lines(root: Path, name: str, cls: type[T]) -> list[T]:
    data = (root / name).read_bytes()
    return [structure(json.loads(line), cls, what=name) for line in data.splitlines()]


def _continuation(
    root: Path, protocol: Protocol, seal: Seal, records: list[RunRecord]
) -> tuple[Continuation | None, list[str]]:
    """The bundle's continuation.json, when it has one, with what repro's rule finds of it
    against the bundle's files as they now are (as a continued study does before it writes
    it)."""
    if not (root / CONTINUATION).is_file():
        return None, []
    continuation = _model(root, CONTINUATION, Continuation)
    every = stream_spacing(protocol)
    digests = {
        name: sha256(root / name)
        for ref in seal.partitions
        for name in run_files(ref.id, every is not None)
        if (root / name).is_file()
    }
    attempts = Counter(r.condition for r in records)
    return continuation, continuation_problems(continuation, seal, digests, dict(attempts), every)


def rederive(
    root: Path, crate_version: int = CRATE_VERSION, report_version: int = REPORT_VERSION
) -> None:
    """Regenerate, with repro's own derivations, every file of the bundle at ``root`` that is
    derived from the recorded ones (the ledger's losses, aggregates, tiers, scores, contrasts,
    rliable's aggregates, the report as ``report_version`` and the RO-Crate metadata as
    ``crate_version``), from its protocol, plan, runs, times, ledger facts and environment as
    they now are (and the continuation tier from its continuation.json, when it has one); then
    :func:`reseal` it. What a forger with repro at hand does after editing
    the recorded files (and, with an earlier ``crate_version`` or ``report_version``, what an
    earlier repro wrote)."""
    fp = _model(root, "data/protocol.json", FrozenProtocol)
    seal = _model(root, "data/plans/seal.json", Seal)
    facts = _model(root, "data/source-ledger.json", Ledger)
    environment = _model(root, "data/environment.json", Environment)
    partitions = [_model(root, f"data/{ref.file}", Partition) for ref in seal.partitions]
    records = [r for p in partitions for r in _lines(root, f"data/runs/{p.id}.jsonl", RunRecord)]
    runs = tally_records(fp, partitions, records, facts)
    ledger = source_ledger(fp, runs, facts)
    (root / "data/source-ledger.json").write_bytes(to_bytes(ledger))
    inputs = sorted(p.relative_to(root).as_posix() for p in (root / "data").rglob("*"))
    hits = [
        scan_hits(name, (root / name).read_bytes())
        for name in inputs
        if is_derivation_input(name) and (root / name).is_file()
    ]
    continuation, problems = _continuation(root, fp.protocol, seal, records)
    derived = derive(fp, seal, runs, ledger, hits, report_version, continuation, problems)
    (root / "data/aggregates.json").write_bytes(to_bytes(derived.aggregates))
    (root / "data/tiers.json").write_bytes(to_bytes(derived.tiers))
    if derived.scores is not None:
        (root / "data/scores.json").write_bytes(to_bytes(derived.scores))
    if derived.contrasts is not None:
        (root / "data/contrasts.json").write_bytes(to_bytes(derived.contrasts))
    if derived.rl is not None:
        (root / "data/rl-aggregates.json").write_bytes(to_bytes(derived.rl))
    (root / "data/validation-report.md").write_bytes(derived.report.encode())
    payload = payload_files(fp, [p.id for p in partitions], continuation is not None)
    builder = CrateBuilder(fp, ledger, environment, payload, crate_version)
    pieces = [builder.head()]
    ran: list[str] = []
    for part in partitions:
        times = _lines(root, f"data/times/{part.id}.jsonl", AttemptTimes)
        by_id = {t.attempt_id: t for t in times}
        ran += [t.attempt_id for t in times]
        pieces += builder.partition(
            part.id,
            (
                ActionFacts(
                    r.attempt_id, r.slot, r.condition, r.status, r.cause, by_id[r.attempt_id]
                )
                for r in records
                if r.condition == part.condition and r.attempt_id in by_id
            ),
        )
    pieces += builder.tail(iter(ran))
    (root / CRATE).write_bytes(b"".join(pieces))
    reseal(root)


def edit_records(root: Path, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    """Apply ``edit`` to the records of every runs file of the bundle at ``root`` (a list of
    plain dicts per file, changed in place) and write them back as canonical JSON Lines."""
    for path in sorted((root / "data/runs").glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_bytes().splitlines()]
        edit(records)
        path.write_bytes(b"".join(canonical.dumps(r) for r in records))


def forge(root: Path, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    """Edit the run records of the bundle at ``root`` with ``edit`` (see :func:`edit_records`),
    then re-derive every derived file and regenerate both manifests (:func:`rederive`)."""
    edit_records(root, edit)
    rederive(root)


def forge_plan(root: Path, edit: Callable[[str, list[dict[str, Any]]], None]) -> None:
    """Apply ``edit`` to the entries of every sealed partition of the bundle at ``root`` (its
    ID and a list of plain dicts, changed in place), write each partition back as canonical
    JSON, list it in the seal by its new digest, then re-derive every derived file and
    regenerate both manifests (:func:`rederive`): a plan changed as a forger with repro at
    hand would change it."""
    seal = _model(root, "data/plans/seal.json", Seal)
    refs = []
    for ref in seal.partitions:
        path = root / "data" / ref.file
        data = canonical.loads(path.read_bytes(), what=ref.file)
        edit(ref.id, data["entries"])
        partition = structure(data, Partition, what=ref.file)
        path.write_bytes(to_bytes(partition))
        refs.append(unstructure(partition_ref(partition)))
    plain = unstructure(seal)
    plain["partitions"] = refs
    (root / "data/plans/seal.json").write_bytes(canonical.dumps(plain))
    rederive(root)


def forge_ledger(root: Path, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    """Apply ``edit`` to the ledger's pinned sources of the bundle at ``root`` (a list of plain
    dicts, changed in place), write the seal's digest of the sources anew, then re-derive every
    derived file and regenerate both manifests (:func:`rederive`): the pins a forger with repro
    at hand would record for another simulator."""
    forge_ledger_facts(root, lambda ledger: edit(ledger["sources"]))


def forge_ledger_facts(root: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``edit`` to the ledger of the bundle at ``root`` (a plain dict, changed in place:
    its adapter facts, sources, contracts), write the seal's digest of the sources anew, give
    every run the digest of its condition's contract as the ledger now has it, then re-derive
    every derived file and regenerate both manifests (:func:`rederive`): the facts a forger with
    repro at hand would record."""
    path = root / "data/source-ledger.json"
    ledger = canonical.loads(path.read_bytes(), what="ledger")
    edit(ledger)
    facts = structure(ledger, Ledger, what="ledger")
    path.write_bytes(to_bytes(facts))
    seal = unstructure(_model(root, "data/plans/seal.json", Seal))
    seal["sources_sha256"] = sources_sha256(facts.sources)
    (root / "data/plans/seal.json").write_bytes(canonical.dumps(seal))
    digests = {c: contract_sha256(contract) for c, contract in facts.contracts.items()}

    def contracts(records: list[dict[str, Any]]) -> None:
        for record in records:
            if record.get("contract_sha256") is not None and record["condition"] in digests:
                record["contract_sha256"] = digests[record["condition"]]

    edit_records(root, contracts)
    rederive(root)


def edit_protocol(root: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``edit`` to the protocol of the bundle at ``root`` (a plain dict, changed in
    place), write it back frozen with its new digest, name that digest in the seal, and
    regenerate both manifests (:func:`reseal`): nothing is re-derived, so a protocol that asks
    verify for much work is handed to it as cheaply as a forger can."""
    path = root / "data/protocol.json"
    frozen = canonical.loads(path.read_bytes(), what="protocol", max_bytes=path.stat().st_size)
    edit(frozen["protocol"])
    protocol = structure(frozen["protocol"], Protocol, what="protocol")
    frozen["protocol"] = unstructure(protocol)
    frozen["sha256"] = canonical.sha256_hex(to_bytes(protocol))
    path.write_bytes(canonical.dumps(frozen))
    seal = unstructure(_model(root, "data/plans/seal.json", Seal))
    seal["protocol_sha256"] = frozen["sha256"]
    (root / "data/plans/seal.json").write_bytes(canonical.dumps(seal))
    reseal(root)


def forge_figure(root: Path, delta: float = 0.01) -> None:
    """Move the first condition's mean in the aggregates of the bundle at ``root`` by ``delta``
    and regenerate both manifests (:func:`reseal`): a figure edited by a forger who leaves the
    recorded runs as they are, so that only verify's re-derivation can name it."""
    path = root / "data/aggregates.json"
    aggregates = canonical.loads(path.read_bytes(), what="aggregates")
    aggregates["conditions"][0]["mean"] += delta
    path.write_bytes(canonical.dumps(aggregates))
    reseal(root)


if __name__ == "__main__":
    # ``python tests/forge.py BUNDLE``: the nox session ``compat`` forges a copy of a bundle so
    # with the repro it installed from the wheel.
    forge_figure(Path(sys.argv[1]))
