"""A constraint's compiled test accepts exactly what its attrs validators accept."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro import models
from repro.models._constraints import ORCID, Constraint, OptionalValidator, orcid_check_digit


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


# --------------------------------------------------------------------------- ORCID iDs

_FIFTEEN = st.text(alphabet="0123456789", min_size=15, max_size=15)


def _orcid(digits: str) -> str:
    """The ORCID iD whose 16 characters are ``digits``, grouped by four as ORCID writes it."""
    return "https://orcid.org/" + "-".join(digits[i : i + 4] for i in range(0, 16, 4))


def _accepts(constraint: Constraint, value: str) -> bool:
    return _compiled_verdict(constraint, value) is True


def test_orcid_check_digit_of_orcids_published_examples() -> None:
    """ORCID's documented examples: 0000-0002-1825-0097 (check digit 7) and 0000-0002-1694-233X
    (check character X, for ten)."""
    assert orcid_check_digit("000000021825009") == "7"
    assert orcid_check_digit("000000021694233") == "X"
    assert _accepts(ORCID, "https://orcid.org/0000-0002-1825-0097")
    assert _accepts(ORCID, "https://orcid.org/0000-0002-1694-233X")
    assert not _accepts(ORCID, "https://orcid.org/0000-0002-1825-0098")
    assert not _accepts(ORCID, "0000-0002-1825-0097")  # the URL form only


@given(digits=_FIFTEEN)
def test_an_orcid_with_its_check_character_is_accepted(digits: str) -> None:
    """Any 15 digits followed by their check character make an iD the constraint accepts, and
    the check character is the one that makes the ISO 7064 MOD 11-2 sum come out right: the
    weighted sum of all 16 (X as ten) is 1 modulo 11."""
    check = orcid_check_digit(digits)
    assert _accepts(ORCID, _orcid(digits + check))
    values = [int(d) for d in digits] + [10 if check == "X" else int(check)]
    assert sum(v * 2 ** (15 - i) for i, v in enumerate(values)) % 11 == 1


@given(digits=_FIFTEEN, data=st.data())
def test_an_orcid_with_one_character_changed_is_refused(digits: str, data: st.DataObject) -> None:
    """MOD 11-2 detects every single-character error: change any one of the 16 characters of a
    valid iD (the last to any other digit or X) and the constraint refuses it."""
    valid = digits + orcid_check_digit(digits)
    at = data.draw(st.integers(0, 15))
    choices = "0123456789X" if at == 15 else "0123456789"
    new = data.draw(st.sampled_from([c for c in choices if c != valid[at]]))
    assert not _accepts(ORCID, _orcid(valid[:at] + new + valid[at + 1 :]))
