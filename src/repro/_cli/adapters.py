"""``repro adapters``: every installed adapter, whether it loads, and whether its simulator
imports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from repro._cli.output import emit
from repro._escape import json_text

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["adapters"]


def adapters(
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List every installed adapter, where it comes from, whether it loads, and whether its
    simulator can be imported.

    Each adapter is listed with its name, distribution and version, object path, and the
    simulator's modules as the adapter states them ("not stated" for one that does not say)."""
    # Lazy: `repro --help` imports this module; only `repro adapters` loads the adapters.
    from repro.adapters._base import import_error, registered_adapters

    installed = registered_adapters()
    listed = [
        (
            r,
            r.load_error(),
            [o.distribution for o in installed if o.name == r.name and o is not r],
            _simulator(r.simulator_modules(), r.simulator_install(), import_error),
        )
        for r in installed
    ]
    if as_json:
        rows = [
            {
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "object": r.target,
                "loads": error is None,
                "error": error,
                "also_registered_by": others,
                "simulator": simulator,
            }
            for r, error, others, simulator in listed
        ]
        emit(json_text({"adapters": rows}))
        return
    if not listed:
        emit("no adapter is registered in the repro.adapters entry-point group")
        return
    table = [("name", "distribution", "version", "object", "loads", "simulator")]
    for r, error, others, simulator in listed:
        status = "yes" if error is None else f"no ({error})"
        if others:
            status += f"; also registered by {', '.join(others)}: refused"
        table.append((r.name, r.distribution, r.version, r.target, status, _said(simulator)))
    widths = [max(len(line[i]) for line in table) for i in range(5)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        emit("  ".join([*cells, line[5]]))


def _simulator(
    modules: tuple[str, ...] | None, install: str | None, import_error: Callable[[str], str | None]
) -> dict[str, Any] | None:
    """``repro adapters --json``'s ``simulator``: each module the adapter states with whether
    it imports (the error's type if not), whether the simulator is ``available`` (any one
    module imports, or none is needed), and how to ``install`` it as the adapter says (None
    when it does not); None when the adapter does not state its modules."""
    if modules is None:
        return None
    found = [{"module": m, "error": import_error(m)} for m in modules]
    return {
        "modules": [{**f, "imports": f["error"] is None} for f in found],
        "available": not found or any(f["error"] is None for f in found),
        "install": install,
    }


def _said(simulator: dict[str, Any] | None) -> str:
    """The simulator column of ``repro adapters``: ``gymnasium imports``, ``CybORG does not
    import (ModuleNotFoundError), csle_cyborg imports``, ``no simulator package needed`` or ``not
    stated``; a simulator that is not available ends with how to install it, when the adapter
    says (``gymnasium does not import (ModuleNotFoundError); to use this adapter, install
    repro's gymnasium extra: ...``)."""
    if simulator is None:
        return "not stated"
    if not simulator["modules"]:
        return "no simulator package needed"
    said = ", ".join(
        f"{m['module']} imports"
        if m["imports"]
        else f"{m['module']} does not import ({m['error']})"
        for m in simulator["modules"]
    )
    if not simulator["available"] and simulator["install"] is not None:
        said += f"; to use this adapter, {simulator['install']}"
    return said
