"""A constraint's compiled test accepts exactly what its attrs validators accept."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro import models
from repro.models._constraints import Constraint, OptionalValidator


def _inner(validator: Any) -> Any:
    """The Constraint a field's validator is, or holds as ``optional(...)``."""
    return validator.validator if isinstance(validator, OptionalValidator) else validator


def _constraints() -> dict[str, Constraint]:
    """Every Constraint a model field uses, by ``Model.field``."""
    found: dict[str, Constraint] = {}
    for name in models.__all__:
        cls = getattr(models, name)
        if isinstance(cls, type) and attrs.has(cls):
            for f in attrs.fields(cls):
                if isinstance(_inner(f.validator), Constraint):
                    found[f"{name}.{f.name}"] = _inner(f.validator)
    return found


CONSTRAINTS = _constraints()

_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=80),
    st.from_regex(r"[0-9a-f]{64}", fullmatch=True),
    st.from_regex(
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{6})?Z", fullmatch=True
    ),
    st.lists(st.text(max_size=20), max_size=5).map(tuple),
    st.lists(st.from_regex(r"worker-(died|exited):[A-Z0-9]{1,4}", fullmatch=True), max_size=5).map(
        tuple
    ),
)


def _attrs_verdict(check: Any, value: Any) -> bool | type[BaseException]:
    """What attrs' validators say of ``value``: accepted, refused, or the error type raised."""
    field = SimpleNamespace(name="value")  # all a validator reads of its attribute
    try:
        check(None, field, value)
    except ValueError:
        return False
    except TypeError:
        return TypeError
    return True


def _compiled_verdict(constraint: Constraint, value: Any) -> bool | type[BaseException]:
    try:
        return bool(constraint._test(value))
    except TypeError:
        return TypeError


def test_the_models_use_constraints() -> None:
    """The sweep below has something to sweep: the models' constrained fields."""
    assert len(CONSTRAINTS) > 20
    assert "RunRecord.trace_sha256" in CONSTRAINTS
    assert "AttemptTimes.started_utc" in CONSTRAINTS


@pytest.mark.slow
@pytest.mark.parametrize("where", sorted(CONSTRAINTS))
@given(value=_VALUES)
def test_compiled_test_is_the_validators(where: str, value: Any) -> None:
    """For any value, the compiled test accepts, refuses or raises exactly as calling the
    constraint's attrs validators one by one does."""
    constraint = CONSTRAINTS[where]
    assert _compiled_verdict(constraint, value) == _attrs_verdict(constraint.check, value)
