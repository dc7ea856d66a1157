"""``repro protocol``: check a protocol without running it (``check``), plan its contrasts'
power from a pilot (``power``), or write a starting one (``new``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from repro._cli.options import AdapterOptions, parse_options
from repro._cli.output import emit, print_findings, print_protocol_warnings
from repro._cli.started import command, started
from repro._escape import json_text
from repro.errors import BadInput, NotVerified, Problem

if TYPE_CHECKING:
    from repro._execute.studies import Prepared

__all__ = ["check", "new", "power"]


def check(
    protocol: Annotated[Path, typer.Argument(help="Check the protocol in this JSON file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    option: AdapterOptions = None,
) -> None:
    """Validate and freeze PROTOCOL as `repro study` would, running and writing nothing.

    It prints the frozen sha256 a study records, the adapter, the plan size and pinned sources."""
    # Lazy: `repro --help` imports this module; only `protocol check` prepares a study.
    from repro._execute.studies import prepare
    from repro._json.serde import unstructure

    prepared = prepare(protocol, parse_options(option or []))
    facts, plan = prepared.frozen.facts, prepared.plan
    summary = {
        "protocol": prepared.protocol.id,
        "sha256": prepared.frozen_protocol.sha256,
        "adapter": unstructure(facts),
        "conditions": len(plan.seal.conditions),
        "partitions": len(plan.partitions),
        "slots": sum(len(partition.entries) for partition in plan.partitions),
        "sources_sha256": plan.seal.sources_sha256,
        "sources": [unstructure(source) for source in prepared.frozen.sources],
        "warnings": list(prepared.warnings),
    }
    print_protocol_warnings(prepared.warnings)
    if as_json:
        emit(json_text(summary))
    else:
        _print_checked(protocol, prepared)


def _print_checked(protocol: Path, prepared: Prepared) -> None:
    """``repro protocol check``'s lines for the valid ``protocol``."""
    facts, plan = prepared.frozen.facts, prepared.plan
    slots = sum(len(partition.entries) for partition in plan.partitions)
    emit(f"OK: {protocol} is valid (nothing was run or written)", prose=True)
    emit(f"protocol  {prepared.protocol.id}")
    emit(f"sha256    {prepared.frozen_protocol.sha256}")
    emit(
        f"adapter   {facts.name} {facts.version} (observation {facts.observation_scope}, "
        f"measure from {facts.measure_inputs})"
    )
    emit(
        f"plan      {len(plan.seal.conditions)} conditions, {len(plan.partitions)} partitions, "
        f"{slots} slots"
    )
    emit(f"sources   {len(prepared.frozen.sources)}, sha256 {plan.seal.sources_sha256}")
    for source in prepared.frozen.sources:
        pin = source.version if source.sha256 is None else f"sha256 {source.sha256}"
        emit(f"  {source.role}: {source.kind} {source.name} {pin}")


_Plan = Annotated[
    Path, typer.Argument(help="Plan the protocol in this JSON file; it must declare contrasts.")
]
_Pilot = Annotated[
    Path,
    typer.Option(
        "--pilot",
        help="Take the variances from this pilot bundle of the protocol's family (it must "
        "verify): same protocol id, measure, and conditions of each contrast's groups.",
        show_default=False,
    ),
]
_Effect = Annotated[
    float | None,
    typer.Option(
        "--effect",
        help="Also say the runs per condition needed to detect this effect beyond the null "
        "boundary (0, or -margin for non-inferiority), in the measure's units (for a rate, "
        "a difference of rates).",
        show_default=False,
    ),
]
_Power = Annotated[float, typer.Option("--power", help="Plan for this power.")]
_PlanJson = Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")]


def power(
    protocol: _Plan,
    pilot: _Pilot,
    effect: _Effect = None,
    power: _Power = 0.8,
    as_json: _PlanJson = False,
) -> None:
    """Before any run, plan each contrast's minimum detectable effect at the protocol's runs per
    condition from a pilot bundle's variances.

    Paired contrasts plan from the sd of the pilot's paired differences, unpaired ones from
    each group's sd (Welch); power from the noncentral t. A rate (a check or a category) plans
    from the pilot's discordance (McNemar) or mean rate (Fisher), held fixed, its power exact.
    With --effect it also says the runs per condition needed. Every figure says what it assumed: a
    pilot's variance is itself uncertain."""
    # Lazy: `repro --help` imports this module; only `protocol power` plans (with SciPy).
    from repro._json.serde import unstructure
    from repro._power import pilot_tally, power_plan
    from repro._present.power import lines
    from repro._protocol.freeze import freeze
    from repro._protocol.load import load_protocol
    from repro.verify import open_verified

    frozen = freeze(load_protocol(protocol))
    if frozen.protocol.contrasts is None:
        where = Problem("$.contrasts", "declares no contrasts to plan", "missing-field")
        raise BadInput.of(f"protocol {protocol}", [where])
    try:
        bundle = open_verified(pilot)
        runs = pilot_tally(
            bundle.protocol,
            bundle.ledger,
            ((part, bundle.records(part.id)) for part in bundle.partitions()),
        )
        plan = power_plan(
            frozen,
            bundle.protocol,
            bundle.seal,
            bundle.bundle_sha256,
            runs,
            power,
            effect,
            bundle.scores,
        )
    except NotVerified as exc:  # a pilot plans nothing unless it verifies: bad input here
        print_findings(pilot, exc.findings)
        raise BadInput(f"--pilot {pilot}: the pilot does not verify") from None
    if as_json:
        emit(json_text(unstructure(plan)))
        return
    # Lazy: rich only to print the plan, not for --json.
    from repro._present.terminal import console

    out = console()
    for line in lines(plan):
        out.print(line, markup=False, highlight=False, emoji=False)


def _templates() -> dict[str, str]:
    """The starting protocols shipped in repro/templates, by adapter name."""
    # Lazy: importlib.resources (tempfile, random...) only for the shipped templates.
    from importlib.resources import files

    folder = files("repro").joinpath("templates")
    return {
        entry.name.removesuffix(".json"): entry.read_text("utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    }


#: The files a starting protocol names beside itself, by adapter: each file's name there and the
#: file of repro/templates it is a copy of.
_COMPANIONS = {"command": {"harness.py": "command_harness.py"}}


def _companions(adapter: str) -> dict[str, str]:
    """The files ``repro protocol new`` writes beside ``adapter``'s protocol, by name."""
    # Lazy: importlib.resources (tempfile, random...) only for the shipped templates.
    from importlib.resources import files

    folder = files("repro").joinpath("templates")
    return {
        name: folder.joinpath(shipped).read_text("utf-8")
        for name, shipped in _COMPANIONS.get(adapter, {}).items()
    }


_Adapter = Annotated[
    str,
    typer.Option(
        "--adapter",
        help="Start from this adapter: gymnasium, command or cyborg.",
        show_default=False,
    ),
]
_NewOut = Annotated[
    Path | None,
    typer.Option("--out", help="Write the protocol to this new file (by default, to stdout)."),
]


def new(adapter: _Adapter, out: _NewOut = None) -> None:
    """Write a starting protocol for ADAPTER, explained by "$comment" keys.

    It writes to stdout, or to a new file (never over an existing one). For the command
    adapter, --out also writes harness.py, a working harness the protocol names, beside the
    file."""
    templates = _templates()
    if adapter not in templates:
        raise BadInput(f"no template for adapter {adapter!r} ({', '.join(sorted(templates))})")
    text = templates[adapter]
    companions = _companions(adapter)
    if out is None:
        sys.stdout.write(text)
        if companions:
            emit(
                f"note: this protocol names {', '.join(companions)} beside it, which only "
                "--out FILE writes",
                err=True,
                prose=True,
            )
        return
    _write_all({out: text} | {out.parent / name: body for name, body in companions.items()})

    beside = "".join(f" and {out.parent / name}" for name in companions)
    emit(
        f"wrote {out}{beside}; check it with: {command(['protocol', 'check', str(out)], started())}"
    )


def _write_all(files: dict[Path, str]) -> None:
    """Write each new file of ``files`` (its path, its text), the first its protocol; refuse
    any that exists, and leave none behind when one cannot be written."""
    for path in files:
        if path.exists() or path.is_symlink():
            raise BadInput(f"{path} exists: repro protocol new never overwrites a file")
    written: list[Path] = []
    try:
        for path, body in files.items():
            with path.open("x", encoding="utf-8") as file:
                written.append(path)
                file.write(body)
    except OSError as exc:
        for path in written:
            path.unlink(missing_ok=True)
        if isinstance(exc, FileExistsError):
            raise BadInput(
                f"{exc.filename} exists: repro protocol new never overwrites a file"
            ) from None
        raise BadInput(
            f"{exc.filename or next(iter(files))}: cannot write ({exc.strerror})"
        ) from None
