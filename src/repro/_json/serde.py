"""The one cattrs converter for every model: strict types, no extra keys, path-named errors."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from repro._json import canonical
from repro.errors import BadInput, Problem
from repro.models import FieldError, Level

__all__ = [
    "converter",
    "found",
    "problems",
    "ready",
    "structure",
    "to_bytes",
    "unstructure",
]

T = TypeVar("T")

converter = cattrs.Converter(forbid_extra_keys=True)


_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}


def found(value: Any) -> str:
    """``found`` and the JSON type of ``value``, for messages that say what was expected."""
    return f"found {_JSON_TYPES.get(type(value), type(value).__name__)}"


def _strict_int(value: Any, _: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, {found(value)}")
    return value


def _strict_float(value: Any, _: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, {found(value)}")
    return float(value)


def _strict_str(value: Any, _: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, {found(value)}")
    return value


def _strict_bool(value: Any, _: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, {found(value)}")
    return value


def _level(value: Any, _: Any) -> Level:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"expected a string or an integer, {found(value)}")
    return value


def _shown(value: Any) -> str:
    if isinstance(value, str) and len(value) > 40:
        return f"{json.dumps(value[:40])}... ({len(value)} characters)"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return json.dumps(value)
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _is_literal(type_: Any) -> bool:
    return get_origin(type_) is Literal


def _literal(value: Any, type_: Any) -> Any:
    allowed = get_args(type_)
    # 1 == True in Python, so compare types too: only the exact JSON value is accepted.
    if not any(value == a and type(value) is type(a) for a in allowed):
        raise ValueError(
            f"expected one of {', '.join(json.dumps(a) for a in allowed)}, found {_shown(value)}"
        )
    return value


def _json_object(value: Any, _: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, {found(value)}")
    return value


converter.register_structure_hook(int, _strict_int)
converter.register_structure_hook(float, _strict_float)
converter.register_structure_hook(str, _strict_str)
converter.register_structure_hook(bool, _strict_bool)
converter.register_structure_hook(Level, _level)
converter.register_structure_hook_func(lambda t: t == dict[str, Any], _json_object)
converter.register_structure_hook_func(_is_literal, _literal)


def _is_tuple(type_: Any) -> bool:
    return get_origin(type_) is tuple


def _tuple_hook(type_: Any) -> Any:
    element = get_args(type_)[0]

    def structure_tuple(value: Any, _: Any) -> tuple[Any, ...]:
        # cattrs would happily iterate a string or an object; JSON arrays only here.
        if not isinstance(value, list):
            raise TypeError(f"expected an array, {found(value)}")
        # The float hook gives a float back as it is: an array of floats (a run's step rewards)
        # needs no call per element.
        if element is float and all(type(item) is float for item in value):
            return tuple(value)
        out, errors = [], []
        for index, item in enumerate(value):
            try:
                out.append(converter.structure(item, element))
            except Exception as exc:
                exc.add_note(IterableValidationNote(f"@ index {index}", index, element))
                errors.append(exc)
        if errors:
            raise IterableValidationError("invalid array", errors, type_)
        return tuple(out)

    return structure_tuple


converter.register_structure_hook_factory(_is_tuple, _tuple_hook)


def _model_hook(cls: Any) -> Any:
    structure_fields = make_dict_structure_fn(cls, converter)

    def structure_model(value: Any, _: Any) -> Any:
        # cattrs would fail on null or an array with a Python message ("argument of type
        # 'NoneType' is not iterable"); say what JSON was expected instead.
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, {found(value)}")
        return structure_fields(value, cls)

    return structure_model


converter.register_structure_hook_factory(attrs.has, _model_hook)


def _omits(cls: Any) -> bool:
    return attrs.has(cls) and any(f.metadata.get("omit_if_default") for f in attrs.fields(cls))


def _omitting_hook(cls: Any) -> Any:
    """Unstructure ``cls`` leaving out the fields marked :data:`repro.models.OMIT_IF_DEFAULT`
    while they hold their default."""
    overrides: dict[str, Any] = {
        f.name: override(omit_if_default=True)
        for f in attrs.fields(cls)
        if f.metadata.get("omit_if_default")
    }
    return make_dict_unstructure_fn(cls, converter, **overrides)


converter.register_unstructure_hook_factory(_omits, _omitting_hook)


def _problem(exc: BaseException, type_: Any, path: str) -> Problem:
    """The problem ``exc`` raised while structuring the value at ``path`` into ``type_``."""
    if isinstance(exc, FieldError):
        # A validator ran while the object was built, so cattrs knows only the object's path:
        # the field is the validator's.
        return Problem(f"{path}.{exc.field}", str(exc), "not-allowed")
    if isinstance(exc, ForbiddenExtraKeysError):
        return Problem(
            path, f"unknown key(s) {', '.join(sorted(exc.extra_fields))}", "unknown-field"
        )
    if isinstance(exc, KeyError):
        return Problem(path, "required key missing", "missing-field")
    if isinstance(exc, (TypeError, ValueError)) and str(exc):
        return Problem(
            path, str(exc), "wrong-type" if isinstance(exc, TypeError) else "not-allowed"
        )
    return Problem(
        path, f"invalid value for type {getattr(type_, '__name__', type_)}", "wrong-type"
    )


def problems(exc: BaseException, path: str = "$") -> list[Problem]:
    """Each problem in the error cattrs raised structuring the value at ``path``, its JSON path
    made as :func:`cattrs.v.transform_error` makes it: ``.field`` for a field, ``[i]`` for an
    index."""
    if not isinstance(exc, (ClassValidationError, IterableValidationError)):
        return [_problem(exc, None, path)]
    found_: list[Problem] = []
    with_notes, without = exc.group_exceptions()
    for inner, note in with_notes:
        if isinstance(note, IterableValidationNote):
            where = f"{path}[{note.index!r}]"
        else:
            where = f"{path}.{note.name}"
        if isinstance(inner, (ClassValidationError, IterableValidationError)):
            found_ += problems(inner, where)
        else:
            found_.append(_problem(inner, note.type, where))
    found_ += [_problem(inner, None, path) for inner in without]
    return found_


def structure(data: Any, cls: type[T], *, what: str, root: str = "$") -> T:
    """Structure ``data`` into ``cls`` or raise :class:`BadInput` naming every failing path,
    each under ``root``, the JSON path of ``data`` in its document."""
    try:
        return converter.structure(data, cls)
    except (ClassValidationError, IterableValidationError) as exc:
        raise BadInput.of(what, problems(exc, root)) from None
    except (TypeError, ValueError) as exc:
        code = "wrong-type" if isinstance(exc, TypeError) else "not-allowed"
        raise BadInput.of(what, [Problem(root, str(exc), code)]) from None


def ready(*, structured: Iterable[type] = (), unstructured: Iterable[type] = ()) -> None:
    """Make the converter's hooks now for the classes a caller will structure and unstructure,
    rather than on their first use (cattrs writes and compiles each hook then, milliseconds a
    model): for a caller with time to spare before it needs them."""
    for cls in structured:
        converter.get_structure_hook(cls)
    for cls in unstructured:
        converter.get_unstructure_hook(cls)


def unstructure(value: Any) -> Any:
    """Plain JSON-ready data for a model."""
    return converter.unstructure(value)


def to_bytes(value: Any) -> bytes:
    """Canonical JSON bytes of a model."""
    return canonical.dumps(unstructure(value))
