"""Canonical JSON: strict reading and one byte form for writing."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro._json import canonical
from repro.errors import BadInput

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-canonical.MAX_INT, max_value=canonical.MAX_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=30,
)


class TestRoundTrip:
    """Writing, reading and writing again gives the same bytes."""

    @pytest.mark.slow
    @given(json_values)
    def test_round_trip_is_byte_identical(self, value: object) -> None:
        """dumps(loads(dumps(x))) == dumps(x) for any JSON value."""
        first = canonical.dumps(value)
        assert canonical.dumps(canonical.loads(first)) == first

    @pytest.mark.slow
    @given(st.dictionaries(st.text(), st.integers(-(2**53), 2**53), max_size=8))
    def test_key_order_does_not_matter(self, mapping: dict[str, int]) -> None:
        """Objects with the same members in another order have the same bytes."""
        reordered = dict(reversed(list(mapping.items())))
        assert canonical.dumps(mapping) == canonical.dumps(reordered)

    def test_non_finite_numbers_are_refused(self) -> None:
        """NaN and infinities have no canonical form, so writing them raises."""
        for bad in (math.nan, math.inf, -math.inf):
            with pytest.raises(ValueError, match="non-finite"):
                canonical.dumps({"x": [bad]})

    @pytest.mark.slow
    @given(
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers(min_value=-(2**70), max_value=2**70)
            | st.floats()
            | st.text(max_size=3),
            lambda children: (
                st.lists(children, max_size=6) | st.dictionaries(st.text(), children, max_size=4)
            ),
            max_leaves=40,
        )
    )
    def test_refused_exactly_when_a_number_is_not_finite(self, value: object) -> None:
        """Arrays of numbers only, of numbers among other values (strings, nulls, integers too
        large for a double, nested arrays and objects) and of anything else: writing raises
        for a NaN or an infinity anywhere, and only then."""

        def floats(node: object) -> list[float]:
            if isinstance(node, float):
                return [node]
            if isinstance(node, dict):
                node = list(node.values())
            if isinstance(node, list):
                return [x for item in node for x in floats(item)]
            return []

        if all(math.isfinite(x) for x in floats(value)):
            try:
                canonical.dumps(value)
            except ValueError as exc:
                assert "non-finite" not in str(exc)
            except TypeError:
                pass  # an integer past 64 bits, which orjson refuses
        else:
            with pytest.raises(ValueError, match="non-finite"):
                canonical.dumps(value)


class TestStrictReading:
    """loads refuses what lenient parsers accept, naming the JSON path."""

    @pytest.mark.parametrize(
        ("text", "path"),
        [
            (b'{"a": 1, "a": 2}', "@ $"),
            (b'{"a": [{"b": 1}, {"c": 1, "c": 2}]}', "@ $.a[1]"),
            (b'{"x": {"y": NaN}}', "@ $.x.y"),
            (b'{"x": [1, Infinity]}', "@ $.x[1]"),
            (b'{"x": -Infinity}', "@ $.x"),
        ],
    )
    def test_refusals_name_the_path(self, text: bytes, path: str) -> None:
        """Duplicate keys and non-finite constants are refused at their path."""
        with pytest.raises(BadInput, match=path.replace("[", r"\[").replace("$", r"\$")):
            canonical.loads(text)

    def test_nesting_limit(self) -> None:
        """Nesting deeper than MAX_DEPTH is refused with the path where it happens."""
        deep = b"[" * (canonical.MAX_DEPTH + 5) + b"]" * (canonical.MAX_DEPTH + 5)
        with pytest.raises(BadInput, match="nesting deeper"):
            canonical.loads(deep)

    def test_absurd_nesting_does_not_crash(self) -> None:
        """A hundred thousand open brackets give a clean refusal, not a RecursionError."""
        with pytest.raises(BadInput, match=r"nesting deeper|not JSON"):
            canonical.loads(b"[" * 100_000)

    def test_size_limit(self) -> None:
        """Input over the size limit is refused before parsing."""
        with pytest.raises(BadInput, match="over the limit"):
            canonical.loads(b"[" + b"1," * 100 + b"1]", max_bytes=50)

    def test_invalid_utf8(self) -> None:
        """Bytes that are not UTF-8 are refused."""
        with pytest.raises(BadInput, match="not UTF-8"):
            canonical.loads(b'{"a": "\xff"}')

    def test_huge_integer(self) -> None:
        """Integers beyond 64 bits are refused rather than silently mangled."""
        with pytest.raises(BadInput, match="64-bit"):
            canonical.loads(b'{"n": 123456789012345678901234567890}')
