"""The numeric policy across library versions (repro._stats): seeded draws and percentiles that
are repro's own, the same bits as NumPy's calls they replace whatever NumPy runs them; and
verify accepting a library's figure within the stated tolerance, naming anything else.

Why: a bundle must verify in any clean environment, with another NumPy or SciPy than the one
that made it (tests/test_compat.py runs that for real at the oldest declared versions)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forge import reseal
from repro import _layout as layout
from repro._derive.contrasts import judged
from repro._json import canonical
from repro._json.serde import structure
from repro._stats.draws import Stream
from repro._stats.figures import ABS_TOLERANCE, LIBRARY_FIGURES, REL_TOLERANCE, same_figure
from repro._stats.resampling import percentile_ends
from repro.models import ContrastsFile, FrozenProtocol
from repro.verify import verify

_SEEDS = st.integers(0, 2**128 - 1)
_HIGHS = st.one_of(
    st.integers(1, 12), st.integers(1, 2**32), st.sampled_from([2**31, 2**32 - 1, 2**32])
)


class TestDraws:
    """repro's draws are NumPy's ``Generator`` calls they stand for, to the value."""

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(
        seed=_SEEDS,
        calls=st.lists(
            st.tuples(_HIGHS, st.integers(0, 40), st.integers(1, 5)), min_size=1, max_size=4
        ),
    )
    def test_integers(self, seed: int, calls: list[tuple[int, int, int]]) -> None:
        """``Stream(seed).integers(high, shape)`` is ``default_rng(seed).integers(0, high,
        size=shape)``, call after call on one stream (a range of one value draws nothing)."""
        numpy_rng, ours = np.random.default_rng(seed), Stream(seed)
        for high, rows, columns in calls:
            expected = numpy_rng.integers(0, high, size=(rows, columns))
            assert np.array_equal(ours.integers(high, (rows, columns)), expected)

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(
        seed=_SEEDS,
        population=st.one_of(st.integers(1, 200), st.integers(10_001, 40_000)),
        share=st.floats(0, 1),
        then=_HIGHS,
    )
    def test_choice(self, seed: int, population: int, share: float, then: int) -> None:
        """``Stream(seed).choice(population, size)`` is ``default_rng(seed).choice(population,
        size, replace=False)`` in both of NumPy's ways (Floyd's, and the tail shuffle of a large
        sample of a large population), and the stream goes on where NumPy's does."""
        size = int(population * share)
        numpy_rng, ours = np.random.default_rng(seed), Stream(seed)
        expected = numpy_rng.choice(population, size=size, replace=False)
        assert ours.choice(population, size) == [int(i) for i in expected]
        assert np.array_equal(ours.integers(then, (3,)), numpy_rng.integers(0, then, size=3))

    def test_the_raw_stream_is_all_it_reads(self) -> None:
        """The draws depend on PCG64's raw outputs alone: a stream given another bit
        generator's raw outputs draws otherwise (the test can fail)."""
        assert not np.array_equal(Stream(1).integers(1000, (50,)), Stream(2).integers(1000, (50,)))


class TestPercentiles:
    """A percentile interval's ends are NumPy's linear percentiles, by repro's own formula."""

    @pytest.mark.slow
    @settings(max_examples=300, deadline=None)
    @given(
        values=st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1, max_size=300),
        level=st.floats(0.01, 0.999),
    )
    def test_numpy_linear(self, values: list[float], level: float) -> None:
        """``percentile_ends`` equals ``np.percentile(..., method="linear")`` at ``100 * a`` and
        ``100 * (1 - a)``, to the float."""
        a = (1 - level) / 2
        low, high = np.percentile(values, [100 * a, 100 * (1 - a)], method="linear")
        assert percentile_ends(values, level) == (float(low), float(high))


def _set(root: Path, name: str, edit: Any) -> None:
    value = json.loads((root / name).read_bytes())
    edit(value)
    (root / name).write_bytes(canonical.dumps(value))
    reseal(root)


class TestTolerance:
    """verify accepts a library's figure within the stated tolerance, and names every other
    difference: a larger one, or any in a figure repro computes exactly."""

    def test_the_stated_tolerance(self) -> None:
        """A relative 1e-9 or an absolute 1e-12; infinities only equal."""
        assert (REL_TOLERANCE, ABS_TOLERANCE) == (1e-9, 1e-12)
        assert same_figure(8.526128732806205, 8.526128732595538)
        assert not same_figure(8.526128732806205, 8.526128742806205)
        assert same_figure(0.0, 1e-13) and not same_figure(0.0, 1e-11)
        assert same_figure(math.inf, math.inf) and not same_figure(math.inf, 1e308)

    @pytest.mark.parametrize(
        ("factor", "field", "named"),
        [
            (1 + 3e-11, "halfwidth", False),  # a t quantile under another SciPy
            (1 + 3e-9, "halfwidth", True),
            (1 + 1e-15, "mean", True),  # fsum's mean: exact, whatever SciPy
        ],
    )
    def test_a_figure_moved(
        self, published_bundle: Path, tmp_path: Path, factor: float, field: str, named: bool
    ) -> None:
        """A condition's interval's half-width (its ends with it) moved by a factor as another
        SciPy's t quantile would move it verifies; moved by more, or its mean moved at all, it
        is named, as re-derived-value differs."""
        root = tmp_path / "b"
        shutil.copytree(published_bundle, root)

        def edit(value: dict[str, Any]) -> None:
            row = value["conditions"][0]
            if field == "mean":
                row["mean"] = row["mean"] * factor
            else:
                iv = row["interval"]
                center = (iv["low"] + iv["high"]) / 2
                iv["halfwidth"] *= factor
                iv["low"], iv["high"] = center - iv["halfwidth"], center + iv["halfwidth"]

        _set(root, layout.AGGREGATES, edit)
        codes = {f.code for f in verify(root)}
        assert (codes != set()) == named
        if named:
            assert "rederived-differs" in codes

    def test_which_figures_are_a_library_s(self) -> None:
        """The files and keys whose floats a library computes are named, and nothing else."""
        assert LIBRARY_FIGURES[layout.AGGREGATES] == {"low", "high", "halfwidth"}
        assert LIBRARY_FIGURES[layout.RL_AGGREGATES] is None
        assert layout.LEDGER not in LIBRARY_FIGURES


class TestJudgedFromTheStoredFigures:
    """A contrast's adjusted p-value, verdict and reason are derived again from the stored
    figures, as the study derived them from its own."""

    def test_a_study_s_contrasts_are_judged(self, contrasted_bundle: Path) -> None:
        """``judged`` of a study's contrasts.json is the file itself."""
        fp = structure(
            json.loads((contrasted_bundle / layout.PROTOCOL).read_bytes()), FrozenProtocol, what="p"
        )
        stored = structure(
            json.loads((contrasted_bundle / layout.CONTRASTS).read_bytes()), ContrastsFile, what="c"
        )
        assert judged(fp, stored) == stored

    def test_a_verdict_that_its_figures_do_not_give(
        self, contrasted_bundle: Path, tmp_path: Path
    ) -> None:
        """A verdict edited (its figures left as they are), manifests regenerated, is named."""
        root = tmp_path / "b"
        shutil.copytree(contrasted_bundle, root)
        stored = json.loads((root / layout.CONTRASTS).read_bytes())
        first = stored["contrasts"][0]["verdict"]
        other = "holds" if first != "holds" else "inconclusive"
        _set(root, layout.CONTRASTS, lambda v: v["contrasts"][0].update(verdict=other))
        findings = verify(root)
        assert any(f.code == "rederived-differs" and f.file == layout.CONTRASTS for f in findings)
