"""The shipped Gymnasium example of paired contrasts, run end to end: the same comparison of two
settings of one policy with common random numbers (protocols/gymnasium-paired-crn.json) and
without them (protocols/gymnasium-paired-independent.json). Both bundles verify; with common
random numbers the paired standard error is well below the unpaired one, without them about
equal to it. (The runs are seeded, so these are fixed figures of these protocols, not chance.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, run_study
from repro.verify import open_verified

# Slow: the shipped paired examples' studies, end to end.
pytestmark = pytest.mark.slow

PROTOCOLS = ROOT / "protocols"


@pytest.fixture(scope="module")
def paired(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both studies, run once."""
    out = tmp_path_factory.mktemp("paired")
    return {
        name: run_study(PROTOCOLS / f"gymnasium-paired-{name}.json", out / name)
        for name in ("crn", "independent")
    }


def _se(bundle: Path) -> dict[str, float]:
    decided = open_verified(bundle).contrasts
    assert decided is not None
    out = {}
    for c in decided.contrasts:
        assert c.se is not None
        out[c.pairing] = c.se
    return out


def test_both_examples_verify_and_hold(paired: dict[str, Path]) -> None:
    """Both bundles verify, and in both the setting with fewer random actions is better."""
    for bundle in paired.values():
        decided = open_verified(bundle).contrasts
        assert decided is not None
        assert {c.verdict for c in decided.contrasts} == {"holds"}


def test_common_random_numbers_shrink_the_paired_standard_error(
    paired: dict[str, Path],
) -> None:
    """Paired over unpaired standard error: under 0.85 with common random numbers (measured
    0.738), between 0.95 and 1.05 without them (measured 1.001)."""
    crn, independent = _se(paired["crn"]), _se(paired["independent"])
    assert crn["paired"] / crn["unpaired"] < 0.85
    assert 0.95 < independent["paired"] / independent["unpaired"] < 1.05
