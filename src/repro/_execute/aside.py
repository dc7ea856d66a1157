"""What an unfinished study's root keeps for a study that continues it (``repro study
--continue-from``, :mod:`repro._execute.continuation`), outside the bag's payload and tag files:
each finished partition's contract facts (the ledger is written only at the end) and how the
study stopped, in ``continue/`` (:data:`ASIDE`), which a study removes before it finishes."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro._json.serde import to_bytes

__all__ = ["ASIDE", "STOPPED", "aside_contract", "contract_file", "remove_aside"]

#: What an unfinished root keeps for a continuation, outside the bag's payload.
ASIDE = "continue/"
#: How the study stopped (``{"cause": "SIGINT"}``), written as it stops.
STOPPED = "continue/stopped.json"


def contract_file(partition: str) -> str:
    """``continue/<partition>.contract.json``: the contract facts of the partition's first
    session that opened (empty when none did), written once its runs file is."""
    return f"{ASIDE}{partition}.contract.json"


def aside_contract(contract: Mapping[str, Any]) -> bytes:
    """The bytes of a partition's :func:`contract_file`."""
    return to_bytes({"contract": dict(contract)})


def remove_aside(root: Path) -> None:
    """Remove what the root kept for a continuation: the study finished."""
    shutil.rmtree(root / ASIDE, ignore_errors=True)
