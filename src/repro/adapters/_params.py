"""Adapter parameters as attrs models, structured by the one converter (:mod:`repro._json.serde`).

An adapter's ``freeze`` structures a participant's ``params`` (or its options) into its model
with :func:`structure_at`, which names every problem at its JSON path in the protocol, and then
reads the model. A field whose refusal says more than the converter's "expected a string"
carries its own check and message in its annotation: ``Annotated[str, Expect(check,
message)]``, refused as ``message @ path.field``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_origin

from attrs import frozen

from repro._json.serde import converter, structure
from repro.models import SHA256_HEX

__all__ = ["Expect", "Sha256", "Target", "is_sha256", "structure_at"]

T = TypeVar("T")


@frozen
class Expect:
    """A field's own check of its JSON value, and the message that refuses a value it fails
    (``{value!r}`` in it names the value)."""

    check: Callable[[Any], bool]
    message: str


def _expects(type_: Any) -> bool:
    return get_origin(type_) is Annotated and any(isinstance(m, Expect) for m in type_.__metadata__)


def _expect_hook(type_: Any) -> Callable[[Any, Any], Any]:
    expect = next(m for m in type_.__metadata__ if isinstance(m, Expect))

    def structure_checked(value: Any, _: Any) -> Any:
        if not expect.check(value):
            raise ValueError(expect.message.format(value=value))
        return value

    return structure_checked


converter.register_structure_hook_factory(_expects, _expect_hook)


def is_sha256(value: Any) -> bool:
    """Whether ``value`` is a sha256 as JSON pins it: 64 lower-case hex digits."""
    return isinstance(value, str) and SHA256_HEX.fullmatch(value) is not None


#: A participant's ``params.target``, a ``"module:attribute"`` string (its form is checked
#: where it is imported, :func:`repro.adapters._base.import_target`).
Target = Annotated[str, Expect(lambda v: isinstance(v, str), "target must be a string")]
#: A pinned sha256: 64 lower-case hex digits.
Sha256 = Annotated[str, Expect(is_sha256, "sha256 must be 64 lower-case hex digits")]


def structure_at(data: Any, cls: type[T], where: str) -> T:
    """``data``, the protocol's object at the JSON path ``where``, structured into ``cls``;
    a :class:`BadInput` naming each problem at its path under ``where`` if it does not fit."""
    return structure(data, cls, what="protocol", root=where)
