"""The adapter contract: how a simulator is connected, and the registry that finds adapters."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import inspect
import keyword
import struct
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

from attrs import frozen

from repro.errors import BadInput
from repro.models import (
    MAX_STEP_REWARDS,
    SHA256_HEX,
    AdapterFacts,
    Condition,
    HarnessFacts,
    PlanEntry,
    Protocol,
    Source,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_EPISODE_STEPS",
    "SIMULATOR_MODULES",
    "THREAD_SESSIONS",
    "Adapter",
    "Evidence",
    "Frozen",
    "Registration",
    "Session",
    "TraceDigest",
    "accepts",
    "file_source",
    "frame",
    "get_adapter",
    "import_error",
    "import_target",
    "module_file_source",
    "package_source",
    "pinned_target_source",
    "refuse_unbounded_outcome_runs",
    "registered_adapters",
    "slot_costs",
    "target_root",
    "targets_in",
]

ENTRY_POINT_GROUP = "repro.adapters"
#: The optional attribute of an adapter's class that names its simulator's modules.
SIMULATOR_MODULES = "simulator_modules"
#: The optional attribute of an adapter's class by which it says its sessions only wait on
#: other processes, and so run on threads of the study process (see :class:`Adapter`).
THREAD_SESSIONS = "thread_sessions"
#: Steps per episode at most: a bound against absurd values, far above any published study, and
#: as many step rewards as a run record may hold.
MAX_EPISODE_STEPS = MAX_STEP_REWARDS


@frozen
class Evidence:
    """What one run yields: the step rewards (or, when the adapter cannot see them, the reported
    measure), the step count and a digest of the action/observation trace where observable;
    for a run that ends in an outcome object (the command adapter's), that object and what the
    harness process left."""

    step_rewards: tuple[float, ...] | None
    reported_measure: float | None
    steps: int | None
    trace_sha256: str | None
    outcome: dict[str, Any] | None = None
    harness: HarnessFacts | None = None


@frozen
class Frozen:
    """What an adapter resolved at freeze time: its facts and the sources it pinned."""

    facts: AdapterFacts
    sources: tuple[Source, ...]


class Session(TypingProtocol):
    """One condition's open simulator. ``contract`` holds the facts checked when it opened."""

    contract: dict[str, Any]

    def run(self, entry: PlanEntry) -> Evidence:
        """Run one episode for ``entry``; raise :class:`repro.errors.RunFailed` when it cannot."""

    def close(self) -> None:
        """Release the simulator."""


class Adapter(TypingProtocol):
    """A simulator connection, registered by name.

    Optionally, the class states the modules its simulator is imported from as
    ``simulator_modules``, a tuple of module names of which any one is enough (``()`` for an
    adapter that needs no simulator package): ``repro adapters`` then says whether the simulator
    can be imported as well as whether the adapter loads. An adapter without it is listed as
    "not stated".

    Optionally, too, a method ``slot_cost(condition) -> float`` says what one slot of a
    condition costs relative to the others (the CybORG adapter: its trial length, the steps of
    each episode), so that the progress display weighs the work left by it
    (:func:`slot_costs`); without it every slot counts the same.

    Optionally, last, ``thread_sessions = True`` on the class says that its sessions only wait
    on other processes (a model CLI, a harness: the command adapter's), and so need no worker
    process each: in ``per-run`` seeding mode ``repro study`` then opens and runs them on
    threads of its own process, up to 256 runs at once (:mod:`repro.execute.threads`), rather
    than one worker process per concurrent run (at most 64). An adapter says so only when all of
    this holds: its runs draw from no process-global generator (``random``, NumPy's), since no
    thread can have them to itself; sessions share no mutable state and may run at the same
    time on different threads; a run bounds what it waits on by ``retry.timeout_seconds`` and,
    waiting on a process, registers how to kill it with
    :func:`repro.execute.worker.stopped_with_run` (the study calls that when the run outlasts
    its timeout, or when the study stops); and nothing it does can take the study process down
    (an exception is an attempt's failure, as in a worker; a crash would stop the study, left
    visibly incomplete)."""

    name: str

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Validate the protocol's adapter options, factors and participants (raising
        :class:`BadInput` naming the JSON path), and pin every source that defines the runs."""

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> Session:
        """Open a session for one condition."""


#: The length field of a framed trace item: 8 bytes, big-endian.
_LENGTH = struct.Struct(">Q").pack


class TraceDigest:
    """Incremental sha256 over a run's actions and observations, with type-tagged framing:
    each item is its tag, its payload's length (8 bytes, big-endian) and its payload.

    Items are gathered in a list and hashed in blocks: a classic-control step takes a few
    microseconds, and one hash update per item would cost a good part of one."""

    #: Items gathered before they are hashed.
    _BLOCK = 4096

    def __init__(self) -> None:
        self._h = hashlib.sha256(b"repro.trace/1")
        self._parts: list[bytes] = []

    def add(self, tag: bytes, payload: bytes) -> None:
        """Add one framed item."""
        parts = self._parts
        parts.append(frame(tag, len(payload)))
        parts.append(payload)
        if len(parts) >= self._BLOCK:
            self.feed([])

    def feed(self, parts: list[bytes]) -> None:
        """Hash ``parts``, framed items the caller gathered itself (each item's prefix, then its
        payload), and clear the list: the fastest way for a loop over many small items."""
        self._h.update(b"".join(self._parts))
        self._parts.clear()
        self._h.update(b"".join(parts))
        parts.clear()

    def hexdigest(self) -> str:
        """The digest so far."""
        if self._parts:
            self._h.update(b"".join(self._parts))
            self._parts.clear()
        return self._h.hexdigest()


def frame(tag: bytes, length: int) -> bytes:
    """The tag and length field that start a framed item of ``length`` payload bytes."""
    return tag + _LENGTH(length)


def file_source(role: str, name: str, data: bytes) -> Source:
    """A file source pinned by size and sha256; ``name`` is its path inside its package or
    directory, never a host path."""
    return Source(
        kind="file", role=role, name=name, sha256=hashlib.sha256(data).hexdigest(), size=len(data)
    )


def package_source(role: str, distribution: str) -> Source:
    """A package source pinned by its installed version."""
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise BadInput(f"package {distribution!r} is not installed") from None
    return Source(kind="package", role=role, name=distribution, version=version)


def module_file_source(role: str, module_name: str) -> Source:
    """The source file of an importable module, named by its path relative to its import root."""
    module = importlib.import_module(module_name)
    file = getattr(module, "__file__", None)
    if file is None:
        raise BadInput(f"module {module_name!r} has no source file to pin")
    path = Path(file)
    depth = module_name.count(".") + (1 if path.name == "__init__.py" else 0)
    relative = Path(*path.parts[len(path.parts) - depth - 1 :]).as_posix()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"module {module_name!r}: cannot read its source ({exc.strerror})") from None
    return file_source(role, relative, data)


def _dotted(name: str) -> bool:
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in name.split("."))


#: The directory a protocol's module targets are looked up in first (see :func:`targets_in`).
_target_root: Path | None = None


@contextlib.contextmanager
def targets_in(directory: Path | None) -> Iterator[None]:
    """Look module targets up in ``directory`` first while the block runs, then on the import
    path: the study sets it to the protocol file's directory (so ``"heuristics:energy"`` next to
    the protocol imports without ``PYTHONPATH``), and hands it to every worker process."""
    global _target_root
    previous = _target_root
    _target_root = None if directory is None else Path(directory).resolve()
    try:
        yield
    finally:
        _target_root = previous


def target_root() -> Path | None:
    """The directory module targets are looked up in first, if any (:func:`targets_in`)."""
    return _target_root


def _module_path(module: Any) -> Path | None:
    """Where a loaded module or package lives (a namespace package: its first directory)."""
    file = getattr(module, "__file__", None)
    if file is not None:
        return Path(file).resolve()
    locations = list(getattr(module, "__path__", None) or [])
    return Path(locations[0]).resolve() if locations else None


def _spec_path(spec: importlib.machinery.ModuleSpec) -> Path | None:
    if spec.origin is not None and spec.has_location:
        return Path(spec.origin).resolve()
    locations = list(spec.submodule_search_locations or [])
    return Path(locations[0]).resolve() if locations else None


def _import_from_root(module_name: str, root: Path) -> Any:
    """Import ``module_name`` from ``root`` when its top-level name is there, else from the
    import path; a module found in ``root`` must lie inside it (no link out of the tree), and a
    module of that name already imported from elsewhere is refused rather than used."""
    top = module_name.partition(".")[0]
    spec = importlib.machinery.PathFinder.find_spec(top, [str(root)])
    if spec is None:
        return importlib.import_module(module_name)
    found = _spec_path(spec)
    if found is None or not found.is_relative_to(root):
        raise BadInput(f"module {top!r} in {root} lies outside that directory ({found})")
    loaded = sys.modules.get(top)
    if loaded is not None and _module_path(loaded) != found:
        raise BadInput(
            f"module {top!r} is already imported from {_module_path(loaded)}, not from {found}: "
            "rename the protocol's module"
        )
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    finally:
        sys.path.remove(str(root))
    path = _module_path(module)
    if path is None or not path.is_relative_to(root):
        raise BadInput(f"module {module_name!r} lies outside {root} ({path})")
    return module


def import_target(target: str, where: str) -> Any:
    """The object named by ``"module:attribute"``; refused with ``where`` (a JSON path) when it
    cannot be imported.

    The module is a dotted name of Python identifiers: never a file path, a relative import
    (``.x``) or ``__main__`` (whatever script happens to be running); the attribute is one
    identifier. It is looked up first in the directory :func:`targets_in` names (the protocol
    file's directory during a study), then on the import path."""
    module_name, _, attribute = target.partition(":")
    if not (_dotted(module_name) and attribute.isidentifier() and not keyword.iskeyword(attribute)):
        raise BadInput(
            f"protocol: target {target!r} must look like 'module:attribute', a dotted module "
            f"name of Python identifiers (no file path, no relative import) @ {where}"
        )
    if module_name == "__main__":
        raise BadInput(f"protocol: target {target!r} names the running script @ {where}")
    root = _target_root
    try:
        module = (
            importlib.import_module(module_name)
            if root is None
            else _import_from_root(module_name, root)
        )
        return getattr(module, attribute)
    except BadInput as exc:
        raise BadInput(f"protocol: target {target!r}: {exc} @ {where}") from None
    except Exception as exc:  # an import runs the module's code, which may raise anything
        searched = "the import path" if root is None else f"{root}, then the import path"
        raise BadInput(
            f"protocol: cannot import {target!r} ({type(exc).__name__}: {exc}); looked up in "
            f"{searched} @ {where}"
        ) from None


def accepts(target: Any, arguments: int, keywords: Collection[str] = ()) -> bool:
    """Whether ``target`` can be called with ``arguments`` positional arguments and the named
    ``keywords`` (true when its signature cannot be read, as for some built-ins: the run then
    finds out)."""
    if not callable(target):
        return False
    try:
        inspect.signature(target).bind(*([None] * arguments), **dict.fromkeys(keywords))
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def pinned_target_source(role: str, params: Mapping[str, Any], where: str) -> Source:
    """The source file of a participant's ``params.target``, checked against ``params.sha256``
    when the protocol pins it: a malformed pin or a mismatch refuses the run."""
    target = params.get("target")
    if not isinstance(target, str):
        raise BadInput(f"protocol: target must be a string @ {where}.target")
    expected = params.get("sha256")
    if expected is not None and not (isinstance(expected, str) and SHA256_HEX.fullmatch(expected)):
        raise BadInput(f"protocol: sha256 must be 64 lower-case hex digits @ {where}.sha256")
    import_target(target, f"{where}.target")
    try:
        source = module_file_source(role, target.partition(":")[0])
    except BadInput as exc:
        raise BadInput(f"protocol: {exc} @ {where}.target") from None
    if expected is not None and expected != source.sha256:
        raise BadInput(
            f"protocol: {role}: pinned sha256 {expected} does not match {source.name} "
            f"({source.sha256}) @ {where}.sha256"
        )
    return source


@frozen
class Registration:
    """One adapter an installed distribution registers in the ``repro.adapters`` entry-point
    group: its name, the distribution and version that provide it, and its ``module:attribute``
    object path. repro's own adapters are registered so too, in its pyproject.toml."""

    name: str
    distribution: str
    version: str
    target: str
    entry_point: importlib.metadata.EntryPoint

    def adapter(self) -> Adapter:
        """A new instance of the adapter; any error its import or construction raises comes out
        as :class:`BadInput` naming the error's type, since a plugin's code may raise anything."""
        try:
            return self._make()
        except Exception as exc:
            raise BadInput(
                f"protocol: adapter {self.name!r} ({self.target} from {self.distribution} "
                f"{self.version}) does not load ({type(exc).__name__}: {exc}) @ $.adapter.name"
            ) from None

    def load_error(self) -> str | None:
        """The type name of the error that importing or constructing the adapter raises, or
        ``None`` when it loads: what ``repro adapters`` shows, never a traceback."""
        try:
            self._make()
        except Exception as exc:
            return type(exc).__name__
        return None

    def _make(self) -> Adapter:
        factory: Callable[[], Adapter] = self.entry_point.load()
        return factory()

    def simulator_modules(self) -> tuple[str, ...] | None:
        """The modules the adapter's class says its simulator is imported from (its
        ``simulator_modules``: any one is enough; empty when it needs no simulator package),
        or ``None`` when it does not say, says it as something else than module names, or
        does not load."""
        try:
            factory = self.entry_point.load()
        except Exception:
            return None
        stated = getattr(factory, SIMULATOR_MODULES, None)
        if isinstance(stated, tuple | list) and all(isinstance(m, str) for m in stated):
            return tuple(stated)
        return None


def import_error(module: str) -> str | None:
    """The type name of the error that importing ``module`` raises, or ``None`` when it
    imports: whether a simulator is there, never a traceback."""
    try:
        importlib.import_module(module)
    except Exception as exc:  # an import runs the module's code, which may raise anything
        return type(exc).__name__
    return None


def registered_adapters() -> list[Registration]:
    """Every adapter registration installed, by name, then distribution.

    A distribution found more than once on the import path counts once, as the one Python would
    import (importlib.metadata keeps the first); two distributions may still register one name,
    which :func:`get_adapter` refuses."""
    out = []
    # A distribution's name and version, read from its metadata once however many adapters it
    # registers: ``Distribution.name`` and ``.version`` each parse the whole METADATA file
    # (93 KB with repro's README; 8 parses for its four adapters). Keyed by identity: the
    # entry points, alive until the loop ends, hold their distributions.
    facts: dict[int, tuple[str, str]] = {}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry_point.dist
        assert dist is not None  # entry_points() ties each entry point to its distribution
        if id(dist) not in facts:
            metadata = dist.metadata
            facts[id(dist)] = (metadata["Name"], metadata["Version"])
        distribution, version = facts[id(dist)]
        out.append(
            Registration(
                name=entry_point.name,
                distribution=distribution,
                version=version,
                target=entry_point.value,
                entry_point=entry_point,
            )
        )
    return sorted(out, key=lambda r: (r.name, r.distribution))


def get_adapter(name: str) -> Adapter:
    """A new instance of the adapter registered as ``name`` in the ``repro.adapters`` entry-point
    group, built in or not: one lookup, so a plugin is found exactly as repro's own adapters are.

    A name that two distributions register is refused naming both, rather than resolved by
    whichever happens to come first on the import path: a bundle must not depend on that."""
    installed = registered_adapters()
    matches = [r for r in installed if r.name == name]
    if not matches:
        known = sorted({r.name for r in installed})
        raise BadInput(
            f"protocol: unknown adapter {name!r} (known: {', '.join(known) or 'none'}) "
            "@ $.adapter.name"
        )
    if len(matches) > 1:
        providers = " and ".join(f"{r.distribution} {r.version} ({r.target})" for r in matches)
        raise BadInput(
            f"protocol: adapter {name!r} is registered by more than one distribution: "
            f"{providers}; uninstall all but one @ $.adapter.name"
        )
    return matches[0].adapter()


def refuse_unbounded_outcome_runs(protocol: Protocol, adapter: str, measures: str) -> None:
    """What an adapter whose runs end in an outcome object (``command``, ``inspect``) refuses
    alike: a protocol without a per-run timeout (a harness or a model may never answer), and a
    measure other than ``outcome_value`` (a run has no step rewards to sum). ``measures`` says
    what such a run's measure is, in the message."""
    if protocol.retry.timeout_seconds is None:
        raise BadInput(
            f"protocol: the {adapter} adapter needs a per-run timeout @ $.retry.timeout_seconds"
        )
    if protocol.measure.name != "outcome_value":
        raise BadInput(
            f"protocol: {measures}: use the outcome_value measure with a key @ $.measure.name"
        )


def slot_costs(adapter: object, conditions: Collection[Condition]) -> dict[str, float]:
    """Each condition's cost of one slot, by ID, as the adapter's optional ``slot_cost`` says:
    1 for every condition when it has none, and for any condition it says nothing usable of (a
    value that is not a positive finite number, or an exception)."""
    cost = getattr(adapter, "slot_cost", None)
    out: dict[str, float] = {}
    for condition in conditions:
        try:
            value = float(cost(condition)) if callable(cost) else 1.0
        except Exception:
            value = 1.0
        out[condition.id] = value if 0 < value < float("inf") else 1.0
    return out
