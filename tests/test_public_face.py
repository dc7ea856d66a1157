"""The declared public face: the names each public module exports (its ``__all__``), pinned.

repro's public modules are ``repro`` (study, verify, open_verified), ``repro.adapters`` (the
plugin API), ``repro.errors``, ``repro.models`` and ``repro.verify`` (docs/python-api.md,
docs/architecture.md); everything else is internal and may change between releases. A name added
to or taken from a public module changes what users may rely on: this test fails until the list
below is changed with it, on purpose."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

PUBLIC: dict[str, frozenset[str]] = {
    "repro": frozenset(
        {
            "__version__",
            "DISTRIBUTION",
            "open_verified",
            "study",
            "verify",
            "version",
        }
    ),
    "repro.adapters": frozenset(
        {
            "accepts",
            "Adapter",
            "AdapterFacts",
            "BadInput",
            "Condition",
            "ENTRY_POINT_GROUP",
            "Evidence",
            "file_source",
            "frame",
            "Frozen",
            "get_adapter",
            "HarnessFacts",
            "import_target",
            "json_path",
            "MAX_EPISODE_STEPS",
            "module_file_source",
            "package_source",
            "Participant",
            "pinned_target_source",
            "PlanEntry",
            "Problem",
            "Protocol",
            "registered_adapters",
            "stopped_with_run",
            "Registration",
            "RunFailed",
            "RunInvalid",
            "Session",
            "Source",
            "TraceDigest",
        }
    ),
    "repro.errors": frozenset(
        {
            "BadInput",
            "ClusterFailed",
            "EXIT_BAD_INPUT",
            "exit_code",
            "EXIT_CODES",
            "EXIT_OK",
            "EXIT_SIGNAL_BASE",
            "EXIT_SLOTS_LOST",
            "EXIT_STUDY_STOPPED",
            "EXIT_VERIFY_FAILED",
            "FieldError",
            "install_hint",
            "Interrupted",
            "NotVerified",
            "Problem",
            "PROBLEM_CODES",
            "Refused",
            "ReproError",
            "RunFailed",
            "RunInvalid",
            "SlotsLost",
            "StudyStopped",
        }
    ),
    "repro.models": frozenset(
        {
            "AdapterFacts",
            "CarriedPartition",
            "Continuation",
            "Rejoined",
            "AdapterSpec",
            "Aggregates",
            "Agreement",
            "AttemptTimes",
            "BackendName",
            "BoundedCriterion",
            "BreadthGate",
            "CellScore",
            "Check",
            "Checkpoint",
            "CHECKPOINT_EVERY",
            "CheckResult",
            "CheckSummary",
            "Citation",
            "Condition",
            "ConditionAggregate",
            "Contrast",
            "ContrastDirection",
            "ContrastInterval",
            "ContrastIntervalSpec",
            "ContrastResult",
            "Contrasts",
            "ContrastsFile",
            "ContrastVerdict",
            "Contributor",
            "ContributorKind",
            "ControlFloorGate",
            "Criteria",
            "DEFAULT_OPEN_TIMEOUT_SECONDS",
            "Disagreement",
            "Environment",
            "Estimand",
            "EstimandValue",
            "Exclusion",
            "Factor",
            "FamilywiseLevels",
            "FieldError",
            "FigureComparison",
            "FrozenProtocol",
            "GateResult",
            "Gates",
            "GeneratorState",
            "Group",
            "HarnessFacts",
            "Interval",
            "IntervalMethod",
            "IntervalValue",
            "Ledger",
            "Level",
            "Loss",
            "LOSS_OUTCOMES",
            "LossOutcome",
            "MAX_CHECKPOINTS",
            "MAX_LOST_OPENS",
            "MAX_OUTCOME_BYTES",
            "MAX_RECORD_VALUES",
            "MAX_RESAMPLES",
            "MAX_STEP_REWARDS",
            "MAX_TAUS",
            "Measure",
            "MIN_CONTRAST_RESAMPLES",
            "OMIT_IF_DEFAULT",
            "Participant",
            "Partition",
            "PartitionRef",
            "PlanEntry",
            "Protocol",
            "Published",
            "PublishedCondition",
            "PublishedEstimand",
            "Reproduction",
            "Retry",
            "RL",
            "RLAggregates",
            "RLBootstrap",
            "RLDistribution",
            "RLImprovement",
            "RLImprovementEstimate",
            "RLParticipant",
            "RLProfilePoint",
            "RLSampler",
            "RLStatistic",
            "RLStatisticEstimate",
            "RLTaskScale",
            "Rule",
            "RunRecord",
            "RunScore",
            "RunStatus",
            "Scenario",
            "Scores",
            "Scoring",
            "Seal",
            "Seeding",
            "SeedingMode",
            "SHA256_HEX",
            "SlotState",
            "Source",
            "Stratum",
            "Taxonomy",
            "Tier",
            "TIER_NAMES",
            "TierName",
            "Tiers",
        }
    ),
    "repro.verify": frozenset(
        {
            "BagVerification",
            "bundle_sha256",
            "BundleReader",
            "Finding",
            "Limits",
            "MAX_FILE_BYTES",
            "open_verified",
            "read_signatures",
            "SignatureStatus",
            "Verification",
            "verification",
            "VerifiedBundle",
            "verify",
            "verify_bag",
        }
    ),
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_all_is_the_declared_face(module: str) -> None:
    """Each public module's ``__all__`` is exactly the pinned names, each listed once."""
    names = importlib.import_module(module).__all__
    assert len(names) == len(set(names))
    assert set(names) == PUBLIC[module]


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_declared_name_resolves(module: str) -> None:
    """Every name a public module declares can be read from it (a lazy name too)."""
    loaded = importlib.import_module(module)
    missing = [name for name in PUBLIC[module] if not hasattr(loaded, name)]
    assert not missing


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_star_import_gives_the_face(module: str) -> None:
    """``from module import *`` binds the declared names, and no others."""
    namespace: dict[str, object] = {}
    exec(f"from {module} import *", namespace)
    assert set(namespace) - {"__builtins__"} == PUBLIC[module]


SRC = Path(__file__).resolve().parents[1] / "src"
#: The modules a user may import by name: the public ones and ``python -m repro``'s.
NAMED = frozenset(PUBLIC) | {"repro.__main__"}


def _module_names() -> list[str]:
    """The dotted name of every module of src/repro but the templates, which are files that
    ``repro protocol new`` writes out (a harness to copy), not modules to import."""
    names = []
    for path in sorted((SRC / "repro").rglob("*.py")):
        if path.parent.name == "templates":
            continue
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def _internal(name: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in name.split("."))


def test_every_other_module_is_named_internal() -> None:
    """Every module of src/repro is a public one or sits in a ``_``-named module or package
    (``repro._derive.facts``, ``repro.verify._core``), so an import path says whether a user
    may rely on it."""
    names = _module_names()
    assert "repro.errors" in names and len(names) > 100
    assert [name for name in names if name not in NAMED and not _internal(name)] == []


def test_a_public_looking_module_is_found() -> None:
    """The check above finds a module named as if public (it would pass on a wrong walk)."""
    assert not _internal("repro.verify.core") and _internal("repro.verify._core")
    assert not _internal("repro.__main__") and _internal("repro._derive.facts")
