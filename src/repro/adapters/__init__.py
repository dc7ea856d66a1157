"""The adapter plugin API, in one place: everything an adapter (built in or a third party's)
imports to connect a simulator. :mod:`repro.adapters._base` defines the contract and the
registry; the built-in adapters are :mod:`~repro.adapters._gymnasium`,
:mod:`~repro.adapters._command`, :mod:`~repro.adapters._inspect_eval` and
:mod:`~repro.adapters._cyborg`.

An adapter is a class made without arguments, with a ``name``, ``freeze(protocol, options)``
returning :class:`Frozen` (its :class:`AdapterFacts` and the :class:`Source` s it pins) and
``open(protocol, condition, frozen)`` returning a :class:`Session`, whose ``run(entry)`` gives
:class:`Evidence` or raises :class:`RunFailed` / :class:`RunInvalid` with a short cause;
:class:`BadInput` refuses a protocol, holding each :class:`Problem` (its JSON path, message and
code, one of :data:`repro.errors.PROBLEM_CODES`): ``BadInput.of("protocol", problems)``, or
``BadInput.at(path, message, code)`` for one."""

from repro._json.canonical import json_path
from repro.adapters._base import (
    ENTRY_POINT_GROUP,
    MAX_EPISODE_STEPS,
    Adapter,
    Evidence,
    Frozen,
    Registration,
    Session,
    TraceDigest,
    accepts,
    file_source,
    frame,
    get_adapter,
    import_target,
    module_file_source,
    package_source,
    pinned_target_source,
    registered_adapters,
)
from repro.adapters._lifetime import stopped_with_run
from repro.errors import BadInput, Problem, RunFailed, RunInvalid
from repro.models import (
    AdapterFacts,
    Condition,
    HarnessFacts,
    Participant,
    PlanEntry,
    Protocol,
    Source,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_EPISODE_STEPS",
    "Adapter",
    "AdapterFacts",
    "BadInput",
    "Condition",
    "Evidence",
    "Frozen",
    "HarnessFacts",
    "Participant",
    "PlanEntry",
    "Problem",
    "Protocol",
    "Registration",
    "RunFailed",
    "RunInvalid",
    "Session",
    "Source",
    "TraceDigest",
    "accepts",
    "file_source",
    "frame",
    "get_adapter",
    "import_target",
    "json_path",
    "module_file_source",
    "package_source",
    "pinned_target_source",
    "registered_adapters",
    "stopped_with_run",
]
