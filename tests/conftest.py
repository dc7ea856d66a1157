"""Shared fixtures: small real studies on the embedded Gymnasium default."""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from browser import chromium_or_skip
from fresh_verifier import FreshVerifier
from guarantees import FIGURES
from repro._execute.studies import Backend, LocalWorkers, prepare, study

ROOT = Path(__file__).resolve().parents[1]
# The developer tools (tools/docgen.py, tools/schemas.py) are tested too; they are no part of the
# runtime package, so the checkout itself goes on the import path for them.
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

SMALL: dict[str, Any] = {
    "schema": "repro.protocol/1",
    "id": "small",
    "title": "Small test study",
    "adapter": {"name": "gymnasium", "options": {}},
    "matrix": [{"name": "env_id", "levels": ["CartPole-v1", "MountainCar-v0"]}],
    "participants": [
        {"id": "random", "kind": "random", "params": {}},
        {"id": "push-left", "kind": "constant", "params": {"action": 0}},
    ],
    "runs_per_condition": 8,
    "seeding": {"mode": "per-run", "seed": 7},
    "measure": {"name": "episode_return", "description": "sum of step rewards"},
    "estimand": "sum-of-condition-means",
    "interval": {"method": "normal", "level": 0.95},
    "retry": {"max_attempts": 2},
}


class _Quiet:
    def start(self, total: int) -> None:
        pass

    def advance(self, condition: str, end: str) -> None:
        pass

    def finish(self) -> None:
        pass


@pytest.fixture
def small_protocol() -> dict[str, Any]:
    """A fresh, mutable copy of the small protocol."""
    return copy.deepcopy(SMALL)


@pytest.fixture
def write_protocol(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    """Write a protocol mapping to a file and return its path."""

    def write(data: dict[str, Any], name: str = "protocol.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(data), "utf-8")
        return path

    return write


def run_study(
    protocol_path: Path,
    out: Path,
    backend: Backend | None = None,
    options: Mapping[str, str] | None = None,
    keep_going: bool = False,
) -> Path:
    """Run a study quietly on ``backend`` (serially by default) and return its root; with
    ``keep_going``, whatever its first slots do (no early stop: repro._execute.stopping)."""
    study(
        prepare(protocol_path, options or {}),
        out,
        _Quiet(),
        backend or LocalWorkers(),
        keep_going=keep_going,
    )
    return out


def repro_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m repro ARGS`` in a child process run from ``cwd``, as a user runs it from a
    shell, with the tests' directory importable (their policies and adapters) beside this
    interpreter's path."""
    tests = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


def bundle_digests(bundle: Path) -> dict[str, str]:
    """The sha256 of every file of a bundle that must not depend on how or when it ran: all but
    those that record when (environment.json, the attempt times in times/, the RO-Crate metadata
    that carries them) and the tag files that digest them or carry the date."""
    varying = {"data/environment.json", "data/ro-crate-metadata.json", "bag-info.txt"}
    varying |= {"manifest-sha256.txt", "tagmanifest-sha256.txt"}
    names = {path: path.relative_to(bundle).as_posix() for path in bundle.rglob("*")}
    return {
        name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path, name in sorted(names.items())
        if path.is_file() and name not in varying and not name.startswith("data/times/")
    }


def register_adapters(
    monkeypatch: pytest.MonkeyPatch, site: Path, distribution: str, adapters: Mapping[str, str]
) -> None:
    """Register ``adapters`` (name -> ``module:Class``) for this process as an installed
    distribution named ``distribution`` does: its ``.dist-info`` directory (METADATA and an
    entry_points.txt with a ``repro.adapters`` section) is written into ``site``, and ``site``
    goes first on sys.path until ``monkeypatch`` undoes it.

    repro finds adapters through that entry-point group only, so this is how a test adds one
    without building and installing a package. Worker processes rebuild an adapter from its
    class (which must be importable from the test's sys.path) and need no registration."""
    version = "0"
    info = site / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    metadata = f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
    (info / "METADATA").write_text(metadata, "utf-8")
    lines = "".join(f"{name} = {target}\n" for name, target in adapters.items())
    (info / "entry_points.txt").write_text(f"[repro.adapters]\n{lines}", "utf-8")
    # syspath_prepend also invalidates the import caches, importlib.metadata's among them.
    monkeypatch.syspath_prepend(str(site))


@pytest.fixture
def fault_adapter(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The fault-injecting test adapter (tests/repro_fault_adapter.py), registered as ``faults``
    for one test."""
    register_adapters(
        monkeypatch,
        tmp_path_factory.mktemp("adapters"),
        "repro-test-faults",
        {"faults": "repro_fault_adapter:FaultAdapter"},
    )


@pytest.fixture(scope="session")
def dask_scheduler() -> Iterator[str]:
    """The address of a local Dask cluster for the session: 2 worker processes with 1 thread
    each. Skips the test when ``distributed`` cannot be imported (the nox tests session installs
    it, so CI runs these tests)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        # Both workers are up before any test (environment.json records how many there were).
        with distributed.Client(cluster.scheduler_address) as client:
            client.wait_for_workers(2, timeout=60)
        yield cluster.scheduler_address


def built_once(
    tmp_path_factory: pytest.TempPathFactory, key: str, build: Callable[[Path], Path]
) -> Path:
    """What ``build`` makes in the fresh directory it is given, made once per run: under
    pytest-xdist (``nox -s quick``) the workers share it, the first to ask building it while the
    others wait on a lock, so that a bundle a session fixture makes is made once, not once per
    worker. ``key`` names what is built, and must differ for anything built differently."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return build(tmp_path_factory.mktemp(key))
    # The workers' base directories share their parent (pytest-xdist's own recipe).
    shared = tmp_path_factory.getbasetemp().parent / "built-once"
    shared.mkdir(exist_ok=True)
    with (shared / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / f"{key}.done"
        if done.is_file():
            return Path(done.read_text("utf-8"))
        folder = shared / key
        shutil.rmtree(folder, ignore_errors=True)  # what a worker that failed left
        folder.mkdir()
        built = build(folder)
        done.write_text(str(built), "utf-8")
        return built


def study_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, protocol: Mapping[str, Any]
) -> Path:
    """A real bundle of ``protocol``, run serially in a fresh directory named after ``name``:
    what a fixture made once per module or session returns (copy it before changing it). Made
    once per run whatever the workers (:func:`built_once`, keyed by the protocol's digest)."""
    text = json.dumps(protocol)

    def build(base: Path) -> Path:
        path = base / "protocol.json"
        path.write_text(text, "utf-8")
        return run_study(path, base / "bundle")

    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return built_once(tmp_path_factory, f"{name}-{digest}", build)


@pytest.fixture(scope="session")
def fresh_verifier() -> Iterator[FreshVerifier]:
    """A verifier in a fresh process that runs no other thread (tests/fresh_verifier.py): where
    verify's worker processes can be forked, and a traced peak is verify's alone."""
    verifier = FreshVerifier()
    try:
        yield verifier
    finally:
        verifier.close()


@pytest.fixture(scope="session")
def small_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real bundle of the small protocol, made once; copy it before changing it."""
    return study_once(tmp_path_factory, "small", SMALL)


#: Common random numbers: CartPole under two participants of one kind, whose runs then differ
#: only by their seeds, sharing each replicate's seed (``seeding.common``).
PAIRED: dict[str, Any] = {
    **SMALL,
    "id": "paired",
    "matrix": [{"name": "env_id", "levels": ["CartPole-v1"]}],
    "participants": [
        {"id": "random-a", "kind": "random", "params": {}},
        {"id": "random-b", "kind": "random", "params": {}},
    ],
    "runs_per_condition": 4,
    "seeding": {"mode": "per-run", "seed": 7, "common": ["participant"]},
}


#: The small protocol with published figures (one per-condition half-width, the estimand with
#: its half-width) and a slot excluded before sealing: every part of a report has something.
PUBLISHED: dict[str, Any] = {
    **SMALL,
    "id": "small-published",
    "exclusions": [{"slot": "c01-r0002", "reason": "declared before sealing"}],
    "published": {
        "citation": {"title": "A made-up paper", "url": "https://example.org/paper"},
        "decimals": 2,
        "conditions": [
            {
                "factors": {"env_id": "CartPole-v1"},
                "participant": "random",
                "mean": 20.0,
                "halfwidth": 6.5,
            },
            {"factors": {"env_id": "MountainCar-v0"}, "participant": "push-left", "mean": -200.0},
        ],
        "estimand": {"value": -360.0, "halfwidth": 12.5},
    },
}


@pytest.fixture(scope="session")
def published_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real bundle of :data:`PUBLISHED`, made once; copy it before changing it."""
    return study_once(tmp_path_factory, "published", PUBLISHED)


@pytest.fixture(scope="session")
def contrasted_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real bundle of tests/test_contrasts.py's ``CONTRASTED`` protocol (three
    pre-registered contrasts: a paired superiority, an unpaired two-sided, a paired
    non-inferiority one), made once; copy it before changing it."""
    from test_contrasts import CONTRASTED

    return study_once(tmp_path_factory, "contrasted", CONTRASTED)


@pytest.fixture(scope="session")
def scored_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real bundle of the scored example (protocols/agent-gate-eval.json, on the fake
    harness), made once; copy it before changing it."""

    def build(base: Path) -> Path:
        out = base / "bundle"
        protocol = prepare(ROOT / "protocols" / "agent-gate-eval.json", {})
        study(protocol, out, _Quiet(), LocalWorkers())
        return out

    return built_once(tmp_path_factory, "scored", build)


@pytest.fixture(scope="session")
def cage2_reduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reduced CCS Sleeper protocol (protocols/cage2-ccs-sleeper-reduced.json, 180
    episodes) run once per test run through the CLI on csle-cyborg and the shared scenario
    files, for tests/test_cyborg.py and the crate validator alike; skipped where
    tests/test_cyborg.py skips. Copy it before changing it."""
    # Lazy: test_cyborg finds csle-cyborg and ../shared; most runs of a single file need neither.
    import test_cyborg

    if test_cyborg._missing:
        pytest.skip("csle-cyborg or ../shared/cage2 not available")
    return built_once(
        tmp_path_factory,
        "cage2-reduced",
        lambda base: test_cyborg._cli_study(test_cyborg.REDUCED, base / "bundle"),
    )


@pytest.fixture
def bundle_copy(small_bundle: Path, tmp_path: Path) -> Path:
    """A private copy of the small bundle, free to tamper with."""
    target = tmp_path / "copy"
    shutil.copytree(small_bundle, target, symlinks=True)
    return target


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``stress`` marker: tests that scale up under ``REPRO_STRESS=1`` (the nox
    session ``stress`` runs them so)."""
    config.addinivalue_line(
        "markers", "stress: generated or fuzzed cases, ten times as many under REPRO_STRESS=1"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures tests recorded through :func:`guarantees.record`, one per line."""
    if not FIGURES:
        return
    terminalreporter.section("repro guarantees (this run)")
    width = max(len(name) for name in FIGURES)
    for name, value in FIGURES.items():
        terminalreporter.write_line(f"{name:<{width}}  {value}")


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (a verifier that opens a FIFO without O_NONBLOCK blocks
    forever)."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"verify did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """Keep ``count`` processes spinning on the CPU at normal priority while the block runs,
    as a user's other work does (``benchmarks/busy_suite.py`` runs the whole suite so)."""
    spin = "x = 0\nwhile True:\n    x = (x * 1103515245 + 12345) & 0xFFFFFFFF\n"
    burners = [
        subprocess.Popen([sys.executable, "-c", spin], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


@pytest.fixture
def chromium() -> Path:
    """The Chromium binary for the tests that render the HTML report: skipped without it,
    failed without it when CI is set (:func:`browser.chromium_or_skip`)."""
    return chromium_or_skip()
