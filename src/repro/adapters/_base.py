"""The adapter contract: how a simulator is connected, and the registry that finds adapters."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import keyword
import struct
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
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
    "SIMULATOR_INSTALL",
    "SIMULATOR_MODULES",
    "THREAD_SESSIONS",
    "Adapter",
    "Evidence",
    "Frozen",
    "Registration",
    "Session",
    "TraceDigest",
    "accepts",
    "code_of_bundle",
    "file_source",
    "frame",
    "get_adapter",
    "import_error",
    "import_target",
    "module_file_source",
    "package_source",
    "pinned_target_source",
    "protocol_folder",
    "protocol_path",
    "reexecuting",
    "refuse_unbounded_outcome_runs",
    "registered_adapters",
    "slot_costs",
    "target_root",
    "targets_in",
]

ENTRY_POINT_GROUP = "repro.adapters"
#: The optional attribute of an adapter's class that names its simulator's modules.
SIMULATOR_MODULES = "simulator_modules"
#: The optional attribute of an adapter's class that says how to install its simulator.
SIMULATOR_INSTALL = "simulator_install"
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
    "not stated". With it, ``simulator_install``, a string, may say how to install the
    simulator (the built-in adapters name repro's extra that brings it), which ``repro
    adapters`` adds when none of those modules imports.

    Optionally, too, a method ``slot_cost(condition) -> float`` says what one slot of a
    condition costs relative to the others (the CybORG adapter: its trial length, the steps of
    each episode), so that the progress display weighs the work left by it
    (:func:`slot_costs`); without it every slot counts the same.

    Optionally, last, ``thread_sessions = True`` on the class says that its sessions only wait
    on other processes (a model CLI, a harness: the command adapter's), and so need no worker
    process each: in ``per-run`` seeding mode ``repro study`` then opens and runs them on
    threads of its own process, up to 256 runs at once (:mod:`repro._execute.threads`), rather
    than one worker process per concurrent run (at most 64). An adapter says so only when all of
    this holds: its runs draw from no process-global generator (``random``, NumPy's), since no
    thread can have them to itself; sessions share no mutable state and may run at the same
    time on different threads; a run bounds what it waits on by ``retry.timeout_seconds`` and,
    waiting on a process, registers how to kill it with
    :func:`repro.adapters._lifetime.stopped_with_run` (the study calls that when the run outlasts
    its timeout, or when the study stops); and nothing it does can take the study process down
    (an exception is an attempt's failure, as in a worker; a crash would stop the study, left
    visibly incomplete).

    Optionally, ``environment_factors``, a tuple of factor names, says which matrix factors
    hold different environments or tasks (the gymnasium adapter's ``env_id``): an estimand
    across more than one of their levels is then warned of before a study runs
    (:mod:`repro._protocol.estimand`)."""

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
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"module {module_name!r}: cannot read its source ({exc.strerror})") from None
    return file_source(role, _relative_name(module_name, path), data)


def _relative_name(module_name: str, path: Path) -> str:
    """What the ledger calls a module's file: its path below its import root
    (``pkg/sub/mod.py`` for ``pkg.sub.mod``, ``pkg/__init__.py`` for a package)."""
    depth = module_name.count(".") + (1 if path.name == "__init__.py" else 0)
    return Path(*path.parts[len(path.parts) - depth - 1 :]).as_posix()


def _dotted(name: str) -> bool:
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in name.split("."))


#: The directory a protocol's module targets are looked up in first (see :func:`targets_in`).
_target_root: Path | None = None


@frozen
class _BundleCode:
    """What code a bundle may run here while it is re-executed (:func:`code_of_bundle`): the
    directory the user gave for its own modules and files (None when none was given), and the
    sha256 digests its ledger pins, by file name."""

    root: Path | None
    #: (file name, sha256) of every file the ledger pins.
    pins: frozenset[tuple[str, str]]


#: Set while a bundle someone else may have made is re-executed (``repro replay``, ``repro
#: audit``: :func:`code_of_bundle`); None during a study, whose protocol is the user's own.
_bundle_code: _BundleCode | None = None


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


@contextlib.contextmanager
def code_of_bundle(sources: Path | None, pinned: Sequence[Source]) -> Iterator[None]:
    """Re-execute a bundle that someone else may have made. While the block runs, a module the
    bundle names (a participant's target, an inspect task) is imported only when the user gave
    ``sources``, the directory it is looked up in first (then the import path, as the study
    did); never from the standard library; and only once its file, found without running
    anything, has a sha256 that ``pinned`` (the bundle's ledger) records for a file of its
    name. Its code then runs from the very bytes whose digest was checked, never from a cached
    compilation. A path the protocol names (:func:`protocol_path`) must lie inside
    ``sources``."""
    global _bundle_code
    previous = _bundle_code
    _bundle_code = _BundleCode(
        None if sources is None else Path(sources).resolve(),
        frozenset((s.name, s.sha256) for s in pinned if s.kind == "file" and s.sha256),
    )
    try:
        with targets_in(sources):
            yield
    finally:
        _bundle_code = previous


#: How a replay is told where a bundle's own code lives.
_SOURCES_HINT = "--sources DIR (the directory the study's protocol file was in)"


def protocol_path(value: str, where: str) -> Path:
    """A file or directory the protocol names (the command adapter's harness, its release), as
    this process finds it: during a study, relative to the protocol file's folder (as module
    targets are looked up there first: :func:`targets_in`), or, with no such folder set, to the
    working directory; while a bundle is re-executed (:func:`code_of_bundle`), only inside the
    directory the user gave, never elsewhere: a bundle does not choose which program of this
    machine runs. An absolute ``value`` is itself (a study's protocol refuses host paths)."""
    code = _bundle_code
    if code is None:
        return Path(value) if _target_root is None else _target_root / value
    if code.root is None:
        raise BadInput.at(
            where,
            f"the bundle names {value!r}, and replay runs no program or file a bundle "
            f"names unless you say where it lives: {_SOURCES_HINT}, or --option with its path",
            "not-found",
        )
    path = code.root / value
    if not path.resolve().is_relative_to(code.root):
        raise BadInput.at(where, f"{value!r} lies outside --sources {code.root}", "not-allowed")
    return path


def reexecuting() -> bool:
    """Whether a bundle is being re-executed (:func:`code_of_bundle`): its protocol was
    accepted when it was sealed, so rules added since (which ``repro verify`` does not apply
    either) do not refuse it."""
    return _bundle_code is not None


def protocol_folder() -> str:
    """Where :func:`protocol_path` looks a relative path up, said for an error: the protocol
    file's folder, the ``--sources`` directory of a re-executed bundle, or the working
    directory."""
    code = _bundle_code
    if code is not None and code.root is not None:
        return f"--sources {code.root}"
    if code is None and _target_root is not None:
        return f"the protocol's folder {_target_root}"
    return f"the working directory {Path.cwd()}"


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


def _find_spec(name: str, path: Sequence[str] | None) -> importlib.machinery.ModuleSpec | None:
    """The spec the import system finds for ``name`` (top-level when ``path`` is None, else in
    its package's ``path``), asked of the same finders in the same order, none of which runs a
    module's code."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is not None:
            spec: importlib.machinery.ModuleSpec | None = find(name, path)
            if spec is not None:
                return spec
    return None


@frozen
class _Found:
    """A module found and not yet run: its spec and those of the packages above it (top
    first), its file and that file's bytes, read once: what is pinned is what runs."""

    specs: tuple[importlib.machinery.ModuleSpec, ...]
    file: Path
    data: bytes

    @property
    def name(self) -> str:
        return self.specs[-1].name


def _find_module(module_name: str, root: Path | None) -> _Found:
    """Find ``module_name`` as an import would, running none of its code nor its packages': its
    top-level name in ``root`` when it is there (it must then lie inside ``root``, and no module
    of that name may already be imported from elsewhere), else on the import path."""
    parts = module_name.split(".")
    in_root = None
    if root is not None:
        in_root = importlib.machinery.PathFinder.find_spec(parts[0], [str(root)])
    if in_root is not None:
        assert root is not None
        found = _spec_path(in_root)
        if found is None or not found.is_relative_to(root):
            raise BadInput(f"module {parts[0]!r} in {root} lies outside that directory ({found})")
        loaded = sys.modules.get(parts[0])
        if loaded is not None and _module_path(loaded) != found:
            raise BadInput(
                f"module {parts[0]!r} is already imported from {_module_path(loaded)}, not from "
                f"{found}: rename the protocol's module"
            )
    specs: list[importlib.machinery.ModuleSpec] = []
    search: Sequence[str] | None = None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        loaded = sys.modules.get(name)
        spec = getattr(loaded, "__spec__", None)
        if spec is None:
            spec = in_root if i == 0 and in_root is not None else _find_spec(name, search)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}")
        specs.append(spec)
        if i + 1 < len(parts):
            locations = getattr(loaded, "__path__", None) or spec.submodule_search_locations
            if locations is None:
                raise ModuleNotFoundError(f"No module named {module_name!r}: {name} is no package")
            search = list(locations)
    file = _file_of(specs[-1], sys.modules.get(module_name))
    if file is None:
        raise BadInput(f"module {module_name!r} has no source file to pin")
    if in_root is not None and root is not None and not file.resolve().is_relative_to(root):
        raise BadInput(f"module {module_name!r} lies outside {root} ({file.resolve()})")
    return _Found(tuple(specs), file, file.read_bytes())


def _file_of(spec: importlib.machinery.ModuleSpec, loaded: Any) -> Path | None:
    """The file a module's pin is made of: a loaded module's ``__file__`` (as
    :func:`module_file_source` reads it), else the file its spec loads it from, or for a frozen
    module of the standard library the source file it was frozen from."""
    if loaded is not None:
        file = getattr(loaded, "__file__", None)
        return None if file is None else Path(file)
    if spec.origin is not None and spec.has_location:
        return Path(spec.origin)
    frozen_from = getattr(spec.loader_state, "filename", None)
    return None if frozen_from is None else Path(frozen_from)


def _run_module(found: _Found, root: Path | None) -> Any:
    """Import what ``found`` found: each package above it by its own loader, the module itself
    from the bytes ``found`` read (a source file compiled from them, so that no stale or planted
    cached compilation runs in its place), with ``root`` first on the import path while they
    run, for the modules they import in turn."""
    if root is not None:
        sys.path.insert(0, str(root))
    try:
        parent = None
        for spec in found.specs:
            module = sys.modules.get(spec.name)
            if module is None:
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module
                try:
                    if spec is found.specs[-1] and spec.has_location and found.file.suffix == ".py":
                        code = compile(found.data, str(found.file), "exec", dont_inherit=True)
                        exec(code, module.__dict__)
                    elif spec.loader is not None:
                        spec.loader.exec_module(module)
                except BaseException:
                    sys.modules.pop(spec.name, None)
                    raise
                # A module may put another object in its place, as the import system allows.
                module = sys.modules[spec.name]
                if parent is not None:
                    setattr(parent, spec.name.rpartition(".")[2], module)
            parent = module
        return parent
    finally:
        if root is not None:
            sys.path.remove(str(root))


def _check_bundle_pin(found: _Found, module_name: str) -> None:
    """While a bundle is re-executed, refuse a module it names that the user gave no
    ``--sources`` for, that is part of the standard library, or whose file the bundle's ledger
    does not pin at the digest found here."""
    code = _bundle_code
    if code is None:
        return
    source = file_source("module", _relative_name(module_name, found.file), found.data)
    if (source.name, source.sha256) not in code.pins:
        recorded = ", ".join(sorted(d for n, d in code.pins if n == source.name))
        recorded = recorded or "no file of that name"
        raise BadInput(
            f"its file {source.name} has sha256 {source.sha256} here, and the bundle's ledger "
            f"pins {recorded}: replay runs no code the bundle does not pin, so nothing ran"
        )


def _refuse_unchosen(module_name: str) -> None:
    """While a bundle is re-executed, refuse to look a module it names up at all unless the
    user said where its code comes from, and never in the standard library."""
    code = _bundle_code
    if code is None:
        return
    if code.root is None:
        raise BadInput(
            "replay and audit import no module a bundle names unless you say where it comes "
            f"from: {_SOURCES_HINT}"
        )
    top = module_name.partition(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        raise BadInput(
            f"{top!r} is a module of Python's standard library, which replay never imports "
            "for a bundle"
        )


def _find(module_name: str) -> _Found:
    """``module_name`` found as :func:`import_target` looks it up, none of its code run."""
    _refuse_unchosen(module_name)
    return _find_module(module_name, _target_root)


def _import_module(module_name: str, found: _Found | None = None) -> Any:
    """The module, imported as :func:`import_target` says, from what ``found`` found of it (by
    default, what is found now)."""
    root = _target_root
    key = (module_name, root, _bundle_code)
    module = sys.modules.get(module_name)
    if module is not None and _imported.get(key) is module:
        return module
    if found is None:
        found = _find(module_name)
    _check_bundle_pin(found, module_name)
    module = _run_module(found, root)
    _imported[key] = module
    return module


#: Each module :func:`import_target` imported and checked, by its name and the root and pins
#: it was imported under: a policy is looked up at every run, and its file is read only once.
_imported: dict[tuple[str, Path | None, _BundleCode | None], Any] = {}


def _split_target(target: str, where: str) -> tuple[str, str]:
    """The module and attribute of ``"module:attribute"``, refused unless the module is a
    dotted name of Python identifiers other than ``__main__`` and the attribute one identifier."""
    module_name, _, attribute = target.partition(":")
    if not (_dotted(module_name) and attribute.isidentifier() and not keyword.iskeyword(attribute)):
        raise BadInput.at(
            where,
            f"target {target!r} must look like 'module:attribute', a dotted module "
            f"name of Python identifiers (no file path, no relative import)",
            "not-allowed",
        )
    if module_name == "__main__":
        raise BadInput.at(where, f"target {target!r} names the running script", "not-allowed")
    return module_name, attribute


@contextlib.contextmanager
def _importing(target: str, where: str) -> Iterator[None]:
    """Whatever finding or importing ``target`` raises, as :class:`BadInput` at ``where``."""
    root = _target_root
    try:
        yield
    except BadInput as exc:
        raise BadInput.at(where, f"target {target!r}: {exc}", "not-found") from None
    except Exception as exc:  # an import runs the module's code, which may raise anything
        searched = "the import path" if root is None else f"{root}, then the import path"
        raise BadInput.at(
            where,
            f"cannot import {target!r} ({type(exc).__name__}: {exc}); looked up in {searched}",
            "not-found",
        ) from None


def import_target(target: str, where: str) -> Any:
    """The object named by ``"module:attribute"``; refused with ``where`` (a JSON path) when it
    cannot be imported.

    The module is a dotted name of Python identifiers: never a file path, a relative import
    (``.x``) or ``__main__`` (whatever script happens to be running); the attribute is one
    identifier. It is looked up first in the directory :func:`targets_in` names (the protocol
    file's directory during a study), then on the import path; its file is found and read
    before any of its code runs, and it runs from those bytes. While a bundle is re-executed,
    :func:`code_of_bundle` says what may be imported."""
    module_name, attribute = _split_target(target, where)
    with _importing(target, where):
        return getattr(_import_module(module_name), attribute)


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
    when the protocol pins it before any of the module's code runs: a malformed pin or a
    mismatch refuses the run, and the module is not imported."""
    target = params.get("target")
    if not isinstance(target, str):
        raise BadInput.at(f"{where}.target", "target must be a string", "wrong-type")
    expected = params.get("sha256")
    if expected is not None and not (isinstance(expected, str) and SHA256_HEX.fullmatch(expected)):
        message = "sha256 must be 64 lower-case hex digits"
        raise BadInput.at(f"{where}.sha256", message, "not-allowed")
    module_name, _ = _split_target(target, f"{where}.target")
    with _importing(target, f"{where}.target"):
        found = _find(module_name)
    source = file_source(role, _relative_name(module_name, found.file), found.data)
    if expected is not None and expected != source.sha256:
        raise BadInput.at(
            f"{where}.sha256",
            f"{role}: pinned sha256 {expected} does not match {source.name} ({source.sha256})",
            "inconsistent",
        )
    with _importing(target, f"{where}.target"):
        _import_module(module_name, found)
    import_target(target, f"{where}.target")
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
            raise BadInput.at(
                "$.adapter.name",
                f"adapter {self.name!r} ({self.target} from {self.distribution} "
                f"{self.version}) does not load ({type(exc).__name__}: {exc})",
                "not-found",
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
        stated = self._stated(SIMULATOR_MODULES)
        if isinstance(stated, tuple | list) and all(isinstance(m, str) for m in stated):
            return tuple(stated)
        return None

    def simulator_install(self) -> str | None:
        """How the adapter's class says its simulator is installed (its ``simulator_install``),
        or ``None`` when it does not say, says it as something else than a string, or does not
        load."""
        stated = self._stated(SIMULATOR_INSTALL)
        return stated if isinstance(stated, str) else None

    def _stated(self, attribute: str) -> object:
        """The adapter's class's ``attribute``, or ``None`` when it has none or does not load."""
        try:
            factory = self.entry_point.load()
        except Exception:
            return None
        return getattr(factory, attribute, None)


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
        raise BadInput.at(
            "$.adapter.name",
            f"unknown adapter {name!r} (known: {', '.join(known) or 'none'})",
            "unknown-name",
        )
    if len(matches) > 1:
        providers = " and ".join(f"{r.distribution} {r.version} ({r.target})" for r in matches)
        raise BadInput.at(
            "$.adapter.name",
            f"adapter {name!r} is registered by more than one distribution: "
            f"{providers}; uninstall all but one",
            "duplicate",
        )
    return matches[0].adapter()


def refuse_unbounded_outcome_runs(protocol: Protocol, adapter: str, measures: str) -> None:
    """What an adapter whose runs end in an outcome object (``command``, ``inspect``) refuses
    alike: a protocol without a per-run timeout (a harness or a model may never answer), and a
    measure other than ``outcome_value`` (a run has no step rewards to sum). ``measures`` says
    what such a run's measure is, in the message."""
    if protocol.retry.timeout_seconds is None:
        message = f"the {adapter} adapter needs a per-run timeout"
        raise BadInput.at("$.retry.timeout_seconds", message, "missing-field")
    if protocol.measure.name != "outcome_value":
        message = f"{measures}: use the outcome_value measure with a key"
        raise BadInput.at("$.measure.name", message, "not-allowed")


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
