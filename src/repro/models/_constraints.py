"""What a field's value must be, declared once for every model.

Each constraint is a :class:`Constraint`: attrs' own validators (``matches_re``, ``ge``, ``lt``,
``min_len``, ...), whose parameters ``tools/schemas.py`` reads into the JSON Schemas
(``pattern``, ``minimum``, ``minItems``, ...) and ``tools/docgen.py`` into the protocol
reference, and the words a refusal says, derived from those parameters where they can be. A
refusal raises :class:`FieldError`, which names the field, so that the converter can name its
JSON path. A check across several fields is no field's constraint: it stays a function where the
whole object is known (:func:`repro._protocol.rules.check_consistency`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from attrs import field, frozen
from attrs.validators import (
    and_,
    deep_iterable,
    ge,
    in_,
    le,
    lt,
    matches_re,
    max_len,
    min_len,
    optional,
)

from repro.errors import FieldError

__all__ = [
    "FINITE",
    "FRACTION",
    "IDENT",
    "NAME",
    "NON_EMPTY",
    "OMIT_IF_DEFAULT",
    "ONE_LINE",
    "ORCID",
    "POSITIVE",
    "PROBABILITY",
    "ROR",
    "SEED",
    "SHA256",
    "SPDX",
    "UTC_MICROSECONDS",
    "UTC_SECONDS",
    "WEB_ADDRESS",
    "AndValidator",
    "Constraint",
    "DeepIterableValidator",
    "FieldError",
    "InValidator",
    "MatchesReValidator",
    "MaxLengthValidator",
    "MinLengthValidator",
    "NumberValidator",
    "OptionalValidator",
    "Predicate",
    "describe",
    "orcid_check_digit",
    "parts",
    "within",
]

#: Field metadata: the field is left out of its object's JSON while it holds its default, so
#: that adding it changed no existing file's bytes (or a protocol's digest).
OMIT_IF_DEFAULT = {"omit_if_default": True}


# attrs does not export its validator classes by name; each is told by the type of one made.
#: ``ge``, ``gt``, ``le``, ``lt``: ``bound`` and ``compare_op`` (``">="``, ``">"``, ...).
NumberValidator: type[Any] = type(ge(0))
#: ``min_len``: ``min_length``.
MinLengthValidator: type[Any] = type(min_len(1))
#: ``max_len``: ``max_length``.
MaxLengthValidator: type[Any] = type(max_len(1))
#: ``matches_re``: ``pattern``, a compiled regular expression.
MatchesReValidator: type[Any] = type(matches_re(""))
#: ``in_``: ``options``.
InValidator: type[Any] = type(in_(()))
#: ``and_``: ``_validators``, each of which must pass.
AndValidator: type[Any] = type(and_())
#: ``optional``: ``validator``, for any value but None.
OptionalValidator: type[Any] = type(optional(ge(0)))
#: ``deep_iterable``: ``member_validator`` for each item, ``iterable_validator`` for the whole.
DeepIterableValidator: type[Any] = type(deep_iterable(ge(0)))


@frozen
class Predicate:
    """A test attrs has no validator for (a number being finite, a date being in the calendar):
    ``test(value)`` is true for what is accepted. Neither a JSON Schema nor :func:`describe` can
    state it, so a :class:`Constraint` holding one gives its own words."""

    test: Callable[[Any], bool]

    def __call__(self, instance: object, attribute: Any, value: Any) -> None:
        """Refuse ``value`` when the test is false for it."""
        if not self.test(value):
            raise ValueError(f"{attribute.name}: {self.test.__name__} is false for {value!r}")


def parts(check: Any) -> tuple[Any, ...]:
    """The validators that ``check`` is made of: those inside ``and_``, or ``check`` alone."""
    return tuple(check._validators) if isinstance(check, AndValidator) else (check,)


def _bound(value: float) -> str:
    """A bound as the words show it: a whole float without its ``.0``, a power of two past 32
    bits as one (``2**63``, which a reader knows, not ``9223372036854775808``)."""
    if isinstance(value, int) and value >= 2**32 and value & (value - 1) == 0:
        return f"2**{value.bit_length() - 1}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


#: Each comparison's words alone, and its bracket in an interval.
_LOWER = {">=": ("be at least", "["), ">": ("be above", "(")}
_UPPER = {"<=": ("be at most", "]"), "<": ("be below", ")")}


def _range(bounds: list[Any]) -> str:
    """The words for one lower bound, one upper bound, or both: a closed range of whole numbers
    as ``be between 1 and 100``, any other range of two bounds as an interval (``be in [0.5,
    1)``)."""
    lower = [b for b in bounds if b.compare_op in _LOWER]
    upper = [b for b in bounds if b.compare_op in _UPPER]
    if len(lower) > 1 or len(upper) > 1:
        raise TypeError(f"more than one lower or upper bound: {bounds!r}")
    if not (lower and upper):
        (only,) = lower or upper
        return f"{(_LOWER | _UPPER)[only.compare_op][0]} {_bound(only.bound)}"
    low, high = lower[0], upper[0]
    whole = isinstance(low.bound, int) and isinstance(high.bound, int)
    if whole and (low.compare_op, high.compare_op) == (">=", "<="):
        return f"be between {_bound(low.bound)} and {_bound(high.bound)}"
    opening, closing = _LOWER[low.compare_op][1], _UPPER[high.compare_op][1]
    return f"be in {opening}{_bound(low.bound)}, {_bound(high.bound)}{closing}"


def describe(check: Any) -> str:
    """What ``check`` (attrs validators, alone or in ``and_``) requires, as the words that follow
    "must" in a refusal: ``be at least 1``, ``be in [0.5, 1)``, ``not be empty``. Raises
    :class:`TypeError` for what has no words of its own (a regular expression, a
    :class:`Predicate`): the :class:`Constraint` then gives them."""
    bounds = [p for p in parts(check) if isinstance(p, NumberValidator)]
    words = [_range(bounds)] if bounds else []
    for part in parts(check):
        if isinstance(part, NumberValidator):
            continue
        if isinstance(part, MinLengthValidator):
            n = part.min_length
            words.append("not be empty" if n == 1 else f"hold at least {n} items")
        elif isinstance(part, MaxLengthValidator):
            words.append(f"hold at most {part.max_length} items")
        elif isinstance(part, InValidator):
            words.append("be one of " + ", ".join(repr(o) for o in part.options))
        else:
            raise TypeError(f"no words for {part!r}: give its Constraint words")
    return " and ".join(words)


@frozen
class Constraint:
    """One constraint on a field's value: ``check``, attrs validators, tests it, and a value it
    refuses raises :class:`FieldError` naming the field, which says that the field must
    ``words`` (given, or derived from ``check`` by :func:`describe`).

    ``show``: where the refusal shows the value: ``"first"`` after the field's name (short names),
    ``"last"`` after the words (numbers), ``"none"`` (digests, free text, times). ``in_schema``:
    whether the JSON Schemas state it (``tools/schemas.py``); where they would state only part of
    it, or state it less well than the model's words, the model alone does, and ``repro verify``
    reports a refusal in the model's words (it reports a schema's refusal in preference)."""

    check: Any
    words: str = field()
    show: Literal["first", "last", "none"] = "none"
    in_schema: bool = True
    #: ``check`` as one test of the value, made once: every record verify reads runs it for
    #: each of its constrained fields, where calling attrs' validators one by one costs more.
    _test: Callable[[Any], bool] = field(init=False, eq=False, repr=False)

    @words.default
    def _derived_words(self) -> str:
        return describe(self.check)

    @_test.default
    def _compiled(self) -> Callable[[Any], bool]:
        return _test_of(self.check)

    def refusal(self, name: str, value: Any) -> str:
        """The message refusing ``value`` of field ``name``."""
        if self.show == "first":
            return f"{name} {value!r} must {self.words}"
        if self.show == "last":
            return f"{name} must {self.words}, not {value}"
        return f"{name} must {self.words}"

    def __call__(self, instance: object, attribute: Any, value: Any) -> None:
        """Refuse ``value`` with :class:`FieldError` when ``check`` does."""
        if not self._test(value):
            raise FieldError(attribute.name, self.refusal(attribute.name, value))


def _test_of(check: Any) -> Callable[[Any], bool]:
    """A function true for the values ``check`` accepts, false for those it refuses; a value
    of a type it cannot judge raises as ``check`` would (TypeError). Made of the parameters
    attrs' validators expose, so it accepts exactly what they do."""
    if isinstance(check, AndValidator):
        tests = tuple(_test_of(part) for part in check._validators)
        if len(tests) == 2:
            first, second = tests
            return lambda value: first(value) and second(value)

        return lambda value: all(test(value) for test in tests)
    if isinstance(check, OptionalValidator):
        inner = _test_of(check.validator)
        return lambda value: value is None or inner(value)
    if isinstance(check, MatchesReValidator):
        match = check.match_func
        return lambda value: match(value) is not None
    if isinstance(check, NumberValidator):
        compare, bound = check.compare_func, check.bound
        return lambda value: bool(compare(value, bound))
    if isinstance(check, MinLengthValidator):
        return lambda value: len(value) >= check.min_length
    if isinstance(check, MaxLengthValidator):
        return lambda value: len(value) <= check.max_length
    if isinstance(check, DeepIterableValidator):
        member = _test_of(check.member_validator)
        whole = _test_of(check.iterable_validator) if check.iterable_validator else None
        return lambda value: (whole is None or whole(value)) and all(map(member, value))
    if isinstance(check, Predicate):
        return check.test

    def by_check(value: Any) -> bool:
        # Any other validator (in_, say) is called as attrs calls it.
        try:
            check(None, _Anonymous, value)
        except ValueError:
            return False
        return True

    return by_check


@frozen
class _AnonymousAttribute:
    """What a validator called outside attrs is told of the field (only its name is read, in
    the message a refusal is then given other words for)."""

    name: str = "value"


_Anonymous = _AnonymousAttribute()


def within(*bounds: Any) -> Constraint:
    """A number between ``bounds`` (attrs' ``ge``, ``gt``, ``le``, ``lt``), refused with the
    value: ``retries must be between 1 and 100, not 0``."""
    return Constraint(and_(*bounds) if len(bounds) > 1 else bounds[0], show="last")


#: An identifier: of a protocol, a participant, a factor, a scenario, a check, an adapter.
IDENT = Constraint(
    matches_re(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"),
    "be 1-64 characters of letters, digits, '_', '.', '-', the first a letter or digit",
    show="first",
)
#: A sha256 digest as a bundle writes it (and as a protocol pins one): 64 lower-case hex digits.
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
SHA256 = Constraint(matches_re(SHA256_HEX), "be 64 lower-case hex digits")
#: One line of text. The title goes into bag-info.txt as a "Label: value" line, where a line
#: break would add lines: no control character (Unicode category Cc: U+0000-U+001F and
#: U+007F-U+009F) and no line or paragraph separator (Zl, Zp: U+2028, U+2029).
ONE_LINE = Constraint(
    matches_re(r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"),
    "be one line, without control characters or line and paragraph separators",
)
#: The licence of what the bundle holds, named by its SPDX identifier (e.g. CC-BY-4.0); the
#: RO-Crate metadata links it as https://spdx.org/licenses/<identifier>.
SPDX = Constraint(
    matches_re(r"^[A-Za-z0-9][A-Za-z0-9.+-]{0,63}$"),
    "be an SPDX license identifier: 1-64 letters, digits, '.', '+', '-', the first a letter "
    "or digit",
)
#: A name of a person or an organization: one line, not empty, neither starting nor ending with a
#: space (it is what the RO-Crate metadata names them by).
NAME = Constraint(
    matches_re(
        r"^[^\x00-\x20\x7f-\x9f\u2028\u2029]"
        r"([^\x00-\x1f\x7f-\x9f\u2028\u2029]*[^\x00-\x20\x7f-\x9f\u2028\u2029])?$"
    ),
    "be one line, not empty, neither starting nor ending with a space, without control "
    "characters or line and paragraph separators",
)


def orcid_check_digit(digits: str) -> str:
    """The check character of an ORCID iD's first 15 digits (ISO 7064 MOD 11-2, as ORCID
    defines it): a digit, or ``X`` for ten."""
    total = 0
    for digit in digits:
        total = (total + int(digit)) * 2
    result = (12 - total % 11) % 11
    return "X" if result == 10 else str(result)


def _orcid_checks(value: str) -> bool:
    """Whether an ORCID iD (``https://orcid.org/`` and four groups of four, the shape checked
    first) ends with the check character of its other 15 digits."""
    digits = value.removeprefix("https://orcid.org/").replace("-", "")
    return orcid_check_digit(digits[:15]) == digits[15]


#: A person's ORCID iD, as ORCID asks it be written: its https URL, and a valid check character.
#: Not stated in the schemas (a pattern would state the shape but not the check character).
ORCID = Constraint(
    and_(
        matches_re(r"^https://orcid\.org/[0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{3}[0-9X]$"),
        Predicate(_orcid_checks),
    ),
    "be an ORCID iD as https://orcid.org/0000-0000-0000-000X, with its check character (ISO "
    "7064 MOD 11-2)",
    in_schema=False,
)
#: An organization's ROR ID, as ROR writes it: https://ror.org/ then a 0, six characters of
#: Crockford's base 32 (digits and lower-case letters but i, l, o, u) and two check digits
#: (their value is not checked).
ROR = Constraint(
    matches_re(r"^https://ror\.org/0[0-9a-hjkmnp-tv-z]{6}[0-9]{2}$"),
    "be a ROR ID as https://ror.org/ then 9 characters: 0, six of 0-9 and a-z but i, l, o, u, "
    "and two digits",
)
#: A web address: http or https, and no white space or control character.
WEB_ADDRESS = Constraint(
    matches_re(r"^https?://[^\x00-\x20\x7f-\x9f\u2028\u2029]+$"),
    "be an http or https address without spaces or control characters",
)
#: A seed: what Python's and NumPy's generators take, in 63 bits.
SEED = within(ge(0), lt(2**63))
#: A count of at least one.
POSITIVE = within(ge(1))
#: An interval's level.
PROBABILITY = within(ge(0.5), lt(1.0))
#: A share of something, from none to all.
FRACTION = within(ge(0.0), le(1.0))
#: A tuple with at least one item.
NON_EMPTY = Constraint(min_len(1))
#: A finite number. JSON holds no infinity or NaN, and the strict reader refuses numbers past a
#: double's range, so a schema has nothing to state: this guards models built in code.
FINITE = Constraint(Predicate(math.isfinite), "be finite", in_schema=False)


def _real_time(value: str) -> bool:
    """Whether ``value``, a UTC time in one of the shapes below, is a time that exists in the
    calendar (not ``2026-99-99T99:99:99Z``). (``fromisoformat`` reads those shapes, and is many
    times faster than ``strptime``: verify judges two times per attempt.)"""
    try:
        datetime.fromisoformat(value[:-1])
    except ValueError:
        return False
    return True


def _utc(pattern: str, shape: str) -> Constraint:
    # Not stated in the schemas: a pattern would state the shape but not the calendar, and verify
    # would then refuse "yesterday" by a regular expression and 2026-02-30 by these words.
    check = and_(matches_re(re.compile(pattern)), Predicate(_real_time))
    return Constraint(check, f"be a UTC time as {shape}", in_schema=False)


#: A UTC time to the microsecond, as the attempt times hold it.
UTC_MICROSECONDS = _utc(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$",
    "YYYY-MM-DDTHH:MM:SS.ffffffZ",
)
#: A UTC time to the second, as environment.json holds it.
UTC_SECONDS = _utc(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$", "YYYY-MM-DDTHH:MM:SSZ"
)
