"""The declared public face: the names each public module exports (its ``__all__``), pinned.

repro's public modules are ``repro`` (study, verify, open_verified), ``repro.adapters`` (the
plugin API), ``repro.errors``, ``repro.models`` and ``repro.verify`` (docs/python-api.md,
docs/architecture.md); everything else is internal and may change between releases. A name added
to or taken from a public module changes what users may rely on: this test fails until the list
below is changed with it, on purpose."""

from __future__ import annotations

import importlib

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
